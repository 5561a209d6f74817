//! What the body of a retried function can know about the attempt it is
//! running, and how nested `#[retry]` functions know they are nested.
//!
//! While an attempt runs (each time its future is polled, or while a plain
//! function's body runs), a thread-local holds the attempt's context. A
//! `#[retry]` function reached from inside it, directly or through ordinary
//! functions, sees it and makes a single attempt (unless it says
//! `nested = "retry"`). Work spawned onto another task is polled by the
//! runtime outside that window, and so are unrelated tasks sharing the
//! thread: neither is nested.
//!
//! The rule follows the thread: work another executor runs synchronously
//! inside an attempt's poll (a `LocalSet` driven from the body, a nested
//! `block_on`, rayon tasks stolen while the attempt waits) counts as nested.
//! Functions called that way should say `nested = "retry"`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::cell::Cell;

use tokio::time::Instant;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptContext {
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    /// `nested = "once"`: inside another attempt, `max_attempts` is 1.
    pub(crate) nested_once: bool,
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

    /// The most attempts this call may make: `max`, or 1 when nested.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether no retry can follow this attempt.
    #[must_use]
    pub const fn is_last(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// When the call's deadline passes, if it has one.
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

    /// The time left before the deadline (zero once it has passed), if
    /// there is one: a bound for a timeout inside the attempt.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        let deadline = self.deadline?;
        Some(if self.blocking {
            deadline
                .into_std()
                .saturating_duration_since(std::time::Instant::now())
        } else {
            deadline.saturating_duration_since(Instant::now())
        })
    }
}

// The context of the attempt running on this thread, kept small so that
// setting and restoring it around every poll costs next to nothing: the
// attempt number (0 outside any attempt), the most attempts, and flags; the
// deadline in a slot of its own, written only by attempts that have one.
thread_local! {
    static CURRENT: Cell<(u32, u32, u8)> = const { Cell::new((0, 0, 0)) };
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static KEY: Cell<crate::idempotency::IdempotencyKey> =
        const { Cell::new(crate::idempotency::IdempotencyKey::NIL) };
}

const BLOCKING: u8 = 1;
const HAS_DEADLINE: u8 = 2;

/// The attempt the calling code runs inside, if it runs inside a retried
/// function's attempt (on the same task, or the same thread for a plain
/// function). `None` elsewhere, including in work spawned from an attempt.
#[must_use]
pub fn current_attempt() -> Option<AttemptContext> {
    let (attempt, max_attempts, flags) = CURRENT.with(Cell::get);
    (attempt != 0).then(|| AttemptContext {
        attempt,
        max_attempts,
        nested_once: false,
        deadline: if flags & HAS_DEADLINE == 0 {
            None
        } else {
            DEADLINE.with(Cell::get)
        },
        blocking: flags & BLOCKING != 0,
        key: KEY.with(Cell::get),
    })
}

/// Whether the calling code runs inside a retried function's attempt.
pub(crate) fn in_attempt() -> bool {
    CURRENT.with(Cell::get).0 != 0
}

/// Sets the context until dropped, then restores the one before (also when
/// the attempt panics).
struct Enter {
    outer: (u32, u32, u8),
    /// The deadline before, when this attempt replaced it.
    outer_deadline: Option<Option<Instant>>,
    outer_key: crate::idempotency::IdempotencyKey,
}

impl Enter {
    #[inline]
    fn new(context: AttemptContext) -> Self {
        let outer = CURRENT.with(Cell::get);
        let max_attempts = if context.nested_once && outer.0 != 0 {
            1
        } else {
            context.max_attempts
        };
        let mut flags = if context.blocking { BLOCKING } else { 0 };
        let outer_deadline = context.deadline.map(|deadline| {
            flags |= HAS_DEADLINE;
            DEADLINE.with(|slot| slot.replace(Some(deadline)))
        });
        CURRENT.with(|current| current.set((context.attempt, max_attempts, flags)));
        let outer_key = KEY.with(|slot| slot.replace(context.key));
        Enter {
            outer,
            outer_deadline,
            outer_key,
        }
    }
}

impl Drop for Enter {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(self.outer));
        KEY.with(|slot| slot.set(self.outer_key));
        if let Some(deadline) = self.outer_deadline {
            DEADLINE.with(|slot| slot.set(deadline));
        }
    }
}

/// An attempt's future, polled with its context set.
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct Scoped<'a, F> {
    attempt: Pin<&'a mut F>,
    context: AttemptContext,
}

impl<'a, F> Scoped<'a, F> {
    pub(crate) fn new(context: AttemptContext, attempt: Pin<&'a mut F>) -> Self {
        Scoped { attempt, context }
    }
}

impl<F: Future> Future for Scoped<'_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _enter = Enter::new(self.context);
        self.attempt.as_mut().poll(cx)
    }
}

/// Runs a plain function's attempt with its context set.
pub(crate) fn scoped_call<R>(context: AttemptContext, attempt: impl FnOnce() -> R) -> R {
    let _enter = Enter::new(context);
    attempt()
}
