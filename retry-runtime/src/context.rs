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

use crate::attempts::State;
use crate::clock::{Clock, Deadline};

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
    pub(crate) key: crate::idempotency::IdempotencyKey,
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
    pub const fn idempotency_key(&self) -> crate::idempotency::IdempotencyKey {
        self.key
    }

    /// The time left before [`deadline`](Self::deadline) (zero once it has
    /// passed), if there is one: a bound for a timeout inside the attempt.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        let clock = Clock::of(self.blocking);
        Some(clock.until(self.deadline?))
    }
}

// The context of the attempt running on this thread, kept small so that
// setting and restoring it around every poll costs next to nothing: the
// attempt number (0 outside any attempt), the most attempts, and flags; the
// deadline in a slot of its own, written only by attempts that have one.
thread_local! {
    static CURRENT: Cell<(u32, u32, u8)> = const { Cell::new((0, 0, 0)) };
    static DEADLINE: Cell<Deadline> = const { Cell::new(Deadline::NONE) };
    static KEY: Cell<crate::idempotency::IdempotencyKey> =
        const { Cell::new(crate::idempotency::IdempotencyKey::NIL) };
}

const BLOCKING: u8 = 1;
const HAS_DEADLINE: u8 = 2;
/// A retried function called by this attempt gave up after retrying.
const INNER_GAVE_UP: u8 = 4;

/// The attempt the calling code runs inside, if it runs inside a retried
/// function's attempt (on the same task, or the same thread for a plain
/// function). `None` elsewhere, including in work spawned from an attempt.
#[must_use]
pub fn current_attempt() -> Option<AttemptContext> {
    let (attempt, max_attempts, flags) = CURRENT.with(Cell::get);
    (attempt != 0).then(|| AttemptContext {
        attempt,
        max_attempts,
        deadline: if flags & HAS_DEADLINE == 0 {
            None
        } else {
            DEADLINE.with(Cell::get).get()
        },
        blocking: flags & BLOCKING != 0,
        key: KEY.with(|slot| {
            // Drawn on first request, so a call that never asks pays nothing;
            // the attempt keeps it for the call's later attempts.
            let mut key = slot.get();
            if !key.is_drawn() {
                key = crate::idempotency::IdempotencyKey::random();
                slot.set(key);
            }
            key
        }),
    })
}

/// The deadline of the attempt the calling code runs inside, if any.
pub(crate) fn enclosing_deadline() -> Deadline {
    let (attempt, _, flags) = CURRENT.with(Cell::get);
    if attempt == 0 || flags & HAS_DEADLINE == 0 {
        return Deadline::NONE;
    }
    DEADLINE.with(Cell::get)
}

/// Marks the attempt the calling code runs inside, if any: a retried
/// function it called gave up after retrying.
pub(crate) fn report_gave_up() {
    CURRENT.with(|current| {
        let (attempt, max_attempts, flags) = current.get();
        if attempt != 0 {
            current.set((attempt, max_attempts, flags | INNER_GAVE_UP));
        }
    });
}

/// Sets an attempt's context until dropped, then restores the one before
/// (also when the attempt panics) and hands the attempt whether a retried
/// function it called gave up.
struct Enter<'a> {
    outer: (u32, u32, u8),
    /// The deadline before, when this attempt replaced it.
    outer_deadline: Option<Deadline>,
    outer_key: crate::idempotency::IdempotencyKey,
    inner_gave_up: &'a mut bool,
    key: &'a mut crate::idempotency::IdempotencyKey,
}

impl<'a> Enter<'a> {
    fn new(attempts: &'a mut State<'_>) -> Self {
        let outer = CURRENT.with(Cell::get);
        let mut flags = match attempts.clock() {
            Clock::Blocking => BLOCKING,
            Clock::Async => 0,
        };
        let mut outer_deadline = None;
        let own = attempts.deadline();
        if own.is_some() {
            flags |= HAS_DEADLINE;
            let previous = DEADLINE.with(Cell::get);
            // Nobody inside this attempt may run past the nearest deadline.
            let nearest = if outer.2 & HAS_DEADLINE != 0 && outer.0 != 0 {
                own.min(previous)
            } else {
                own
            };
            DEADLINE.with(|slot| slot.set(nearest));
            outer_deadline = Some(previous);
        } else if outer.0 != 0 {
            flags |= outer.2 & HAS_DEADLINE;
        }
        CURRENT.with(|current| {
            current.set((attempts.attempt(), attempts.policy().max_attempts(), flags));
        });
        let (inner_gave_up, key) = attempts.scope_slots();
        // The call's key, drawn only once somebody asks for it, then kept
        // for its later attempts.
        let outer_key = KEY.with(|slot| slot.replace(*key));
        Enter {
            outer,
            outer_deadline,
            outer_key,
            inner_gave_up,
            key,
        }
    }
}

impl Drop for Enter<'_> {
    fn drop(&mut self) {
        let mine = CURRENT.with(|current| current.replace(self.outer));
        if mine.2 & INNER_GAVE_UP != 0 {
            *self.inner_gave_up = true;
        }
        *self.key = KEY.with(|slot| slot.replace(self.outer_key));
        if let Some(deadline) = self.outer_deadline {
            DEADLINE.with(|slot| slot.set(deadline));
        }
    }
}

/// An attempt's future, polled with its context set.
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct Scoped<'a, 'p, F> {
    attempt: Pin<&'a mut F>,
    attempts: &'a mut State<'p>,
}

impl<'a, 'p, F> Scoped<'a, 'p, F> {
    pub(crate) fn new(attempts: &'a mut State<'p>, attempt: Pin<&'a mut F>) -> Self {
        Scoped { attempt, attempts }
    }
}

impl<F: Future> Future for Scoped<'_, '_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _enter = Enter::new(this.attempts);
        this.attempt.as_mut().poll(cx)
    }
}

/// Runs a plain function's attempt with its context set.
#[inline]
pub(crate) fn scoped_call<R>(attempts: &mut State<'_>, attempt: impl FnOnce() -> R) -> R {
    let _enter = Enter::new(attempts);
    attempt()
}
