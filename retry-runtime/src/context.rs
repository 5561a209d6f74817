//! What the body of a retried function can know about the attempt it is
//! running, and how retried functions called inside it find the attempt
//! they are part of.
//!
//! While an attempt runs (each time its future is polled, or while a plain
//! function's body runs), a thread-local holds the attempt's context. A
//! `#[retry]` function reached from inside it, directly or through ordinary
//! functions, retries under its own policy but never past the enclosing
//! attempt's deadline, and when it gives up after retrying it marks the
//! enclosing attempt, so that the layer around does not retry the same
//! failure again ([`Nested`](crate::Nested)). Work spawned onto another task
//! is polled by the runtime outside that window, and so are unrelated tasks
//! sharing the thread: neither is part of the attempt.
//!
//! The rule follows the thread: work another executor runs synchronously
//! inside an attempt's poll (a `LocalSet` driven from the body, a nested
//! `block_on`, rayon tasks stolen while the attempt waits) counts as part of
//! the attempt.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::cell::Cell;

use crate::clock::Instant;

use crate::clock::{Clock, Deadline};
use crate::idempotency::IdempotencyKey;
use crate::observe::AttemptSpan;

/// The attempt a retried function is running.
///
/// ```
/// use retry_runtime::{current_attempt, retry};
///
/// #[retry(max = 3, deadline = "5s")]
/// async fn call() -> Result<u32, std::io::Error> {
///     let attempt = current_attempt().expect("inside a retried function");
///     // Stamp the attempt on the request, as gRPC does, and give the inner
///     // call no more time than is left.
///     let _header = ("x-attempt", attempt.attempt());
///     let _inner_timeout = attempt.time_left();
///     Ok(attempt.attempt())
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() { assert_eq!(call().await.unwrap(), 1); }
/// ```
///
/// Inside a retried function that another one calls, it describes the
/// innermost attempt, whose deadline is the nearest of its own and the
/// enclosing attempts'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptContext {
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) deadline: Option<Instant>,
    pub(crate) blocking: bool,
    pub(crate) key: IdempotencyKey,
}

impl AttemptContext {
    /// The attempt running, from 1.
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts this call may make: its `max`. Fewer may run when
    /// the budget or a deadline runs out first.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether no retry can follow this attempt.
    #[must_use]
    pub const fn is_last(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// When the nearest deadline passes, this call's or that of a retried
    /// call it runs inside, if there is one.
    #[must_use]
    pub const fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The call's idempotency key: the same for every attempt of this call,
    /// new for every call. Send it with a request that changes state (an
    /// `Idempotency-Key` header) so the server can tell a retry from a new
    /// request; see [`IdempotencyKey`](crate::idempotency::IdempotencyKey).
    #[must_use]
    pub const fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }

    /// The time left before [`deadline`](Self::deadline) (zero once it has
    /// passed), if there is one: a bound for a timeout inside the attempt.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        let clock = if self.blocking {
            Clock::Blocking
        } else {
            Clock::Async
        };
        Some(clock.until(self.deadline?))
    }
}

/// The context of one call's attempts. The call keeps it between polls;
/// while one of its attempts runs, a copy is on the thread's [`Stack`],
/// where retried functions called inside read it and leave their marks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    /// The attempt running or just judged, from 1; 0 for no attempt.
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    /// In the call's state, the call's own deadline; as the thread's
    /// context, the nearest of its own and the enclosing attempts'.
    pub(crate) deadline: Deadline,
    /// The call's idempotency key, drawn the first time an attempt asks for
    /// it and kept for the later ones.
    key: IdempotencyKey,
    /// A plain function's call, on the real clock.
    blocking: bool,
    /// A retried function called by the running attempt gave up after
    /// retrying, and the attempt has not moved on since (see
    /// [`Scoped`]'s `poll`).
    pub(crate) inner_gave_up: bool,
    /// Retried functions called by the running attempt that have started
    /// and not yet returned.
    pub(crate) in_flight: u32,
}

impl Frame {
    /// Outside any attempt.
    const NONE: Frame = Frame {
        attempt: 0,
        max_attempts: 0,
        deadline: Deadline::NONE,
        key: IdempotencyKey::NIL,
        blocking: false,
        inner_gave_up: false,
        in_flight: 0,
    };

    /// The context of a call's first attempt.
    pub(crate) const fn first(max_attempts: u32, deadline: Deadline, clock: Clock) -> Frame {
        Frame {
            attempt: 1,
            max_attempts,
            deadline,
            key: IdempotencyKey::NIL,
            blocking: matches!(clock, Clock::Blocking),
            inner_gave_up: false,
            in_flight: 0,
        }
    }

    /// The clock the call reads and waits on.
    pub(crate) const fn clock(&self) -> Clock {
        if self.blocking {
            Clock::Blocking
        } else {
            Clock::Async
        }
    }

    /// What the body can know of the attempt.
    pub(crate) fn context(&self) -> AttemptContext {
        AttemptContext {
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            deadline: self.deadline.get(),
            blocking: self.blocking,
            key: self.key,
        }
    }
}

/// How many attempts, one running inside another, a thread keeps the
/// context of. An attempt deeper than that runs as if outside any attempt.
const DEPTH: usize = 16;

/// The contexts of the attempts running on this thread, innermost last. A
/// stack rather than a save and restore around every poll, so that entering
/// an attempt is one copy in and leaving it one copy out, and the outer
/// attempts' contexts stay where they are.
struct Stack {
    /// Attempts entered and not yet left on this thread, those beyond
    /// [`DEPTH`] included.
    depth: Cell<usize>,
    /// `frames[0]` is `Frame::NONE`, never changed: outside any attempt;
    /// `frames[d]` is the attempt at depth `d`.
    frames: [Cell<Frame>; DEPTH + 1],
}

thread_local! {
    static STACK: Stack = const {
        Stack {
            depth: Cell::new(0),
            frames: [const { Cell::new(Frame::NONE) }; DEPTH + 1],
        }
    };
}

/// Runs `f` on the context of the innermost attempt running on this thread:
/// `Frame::NONE` outside any (and beyond [`DEPTH`]), which callers must not
/// change.
fn innermost<R>(f: impl FnOnce(&Cell<Frame>) -> R) -> R {
    STACK.with(|stack| {
        let slot = stack
            .frames
            .get(stack.depth.get())
            .unwrap_or(&stack.frames[0]);
        f(slot)
    })
}

/// The attempt the calling code runs inside, if it runs inside a retried
/// function's attempt (on the same task, or the same thread for a plain
/// function). `None` elsewhere, including in work spawned from an attempt.
#[must_use]
pub fn current_attempt() -> Option<AttemptContext> {
    innermost(|current| {
        let mut frame = current.get();
        if frame.attempt == 0 {
            return None;
        }
        // Drawn on first request, so a call that never asks pays nothing;
        // the attempt hands it back to the call for its later attempts.
        if !frame.key.is_drawn() {
            frame.key = IdempotencyKey::random();
            current.set(frame);
        }
        Some(frame.context())
    })
}

/// The deadline of the attempt the calling code runs inside, if any.
pub(crate) fn enclosing_deadline() -> Deadline {
    innermost(|current| current.get().deadline)
}

/// Marks the attempt the calling code runs inside, if any: a retried
/// function it called gave up after retrying.
pub(crate) fn report_gave_up() {
    innermost(|current| {
        let mut frame = current.get();
        if frame.attempt != 0 {
            frame.inner_gave_up = true;
            current.set(frame);
        }
    });
}

/// Counts a retried function starting as in flight in the attempt the
/// calling code runs inside, if any; `true` when it was counted, and must
/// then [`finished`] once it returns.
// Inlined: on every call's success path, where outside any attempt it is
// two thread-local loads and a test (benches/instructions.sh).
#[inline]
pub(crate) fn started() -> bool {
    // Outside any attempt (depth 0), the common case, no frame is read.
    if STACK.with(|stack| stack.depth.get() == 0) {
        return false;
    }
    innermost(|current| {
        let mut frame = current.get();
        if frame.attempt == 0 {
            return false;
        }
        frame.in_flight = frame.in_flight.saturating_add(1);
        current.set(frame);
        true
    })
}

/// A retried function counted by [`started`] returns. Called in the same
/// attempt's context as `started`, since a future is polled by the attempt
/// that owns it. One dropped before it returns stays counted: the attempt
/// then never takes a give-up in it for handled, which errs toward not
/// retrying.
pub(crate) fn finished() {
    innermost(|current| {
        let mut frame = current.get();
        if frame.attempt != 0 {
            frame.in_flight = frame.in_flight.saturating_sub(1);
            current.set(frame);
        }
    });
}

/// Sets an attempt's context until dropped, then leaves it (also when the
/// attempt panics) and hands back to the call what the attempt left in it:
/// the key, if the body drew one, the mark of an inner give-up, and the
/// retried calls in flight.
struct Enter<'a> {
    frame: &'a mut Frame,
}

// Inlined, both ways: around every poll of every attempt (benches/instructions.sh).
impl<'a> Enter<'a> {
    #[inline]
    fn new(frame: &'a mut Frame) -> Self {
        STACK.with(|stack| {
            let depth = stack.depth.get().saturating_add(1);
            stack.depth.set(depth);
            if let (Some(outer), Some(slot)) =
                (stack.frames.get(depth - 1), stack.frames.get(depth))
            {
                // Nobody inside this attempt may run past the nearest
                // deadline; outside any attempt it is `NONE`, the largest.
                let deadline = frame.deadline.min(outer.get().deadline);
                slot.set(Frame { deadline, ..*frame });
            }
        });
        Enter { frame }
    }
}

impl Drop for Enter<'_> {
    #[inline]
    fn drop(&mut self) {
        STACK.with(|stack| {
            let depth = stack.depth.get();
            if let Some(slot) = stack.frames.get(depth) {
                // What the attempt may have changed, and only that: the key,
                // the mark of an inner give-up, the retried calls in flight.
                let left = slot.get();
                self.frame.key = left.key;
                self.frame.inner_gave_up = left.inner_gave_up;
                self.frame.in_flight = left.in_flight;
            }
            stack.depth.set(depth.saturating_sub(1));
        });
    }
}

/// An attempt's future, polled with its context set.
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct Scoped<'a, F> {
    attempt: Pin<&'a mut F>,
    frame: &'a mut Frame,
    /// The attempt's span (feature `attempt-spans`), entered on each poll.
    span: AttemptSpan,
}

impl<'a, F> Scoped<'a, F> {
    pub(crate) fn new(frame: &'a mut Frame, attempt: Pin<&'a mut F>, span: AttemptSpan) -> Self {
        Scoped {
            attempt,
            frame,
            span,
        }
    }
}

impl<F: Future> Future for Scoped<'_, F> {
    type Output = F::Output;

    // Inlined: around every poll of every attempt (benches/instructions.sh).
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _span = this.span.enter();
        let poll = {
            let _enter = Enter::new(this.frame);
            this.attempt.as_mut().poll(cx)
        };
        // The attempt waits on something while no retried function it
        // called is still running: its body has moved on past any give-up
        // (it handled it: a fallback, `unwrap_or_default`), which is then
        // no reason not to retry the attempt. A give-up propagated with `?`
        // or by `try_join_all` fails the attempt in the poll it happens in;
        // one inside `join_all` or `FuturesUnordered` has other retried
        // calls still running beside it. See `Nested` for the shapes this
        // cannot tell apart.
        if poll.is_pending() && this.frame.in_flight == 0 {
            this.frame.inner_gave_up = false;
        }
        poll
    }
}

/// Runs a plain function's attempt with its context set.
pub(crate) fn scoped_call<R>(frame: &mut Frame, attempt: impl FnOnce() -> R) -> R {
    let _enter = Enter::new(frame);
    attempt()
}
