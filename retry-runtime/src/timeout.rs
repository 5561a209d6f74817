//! The per-attempt time limit: the error a cut-off attempt fails with, the
//! [`Limit`] that says how an attempt fails when cut off, and the
//! [`Limited`] attempt that it cuts off.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::rules::Outcome;

/// The error an attempt cut off by `timeout` fails with, converted into the
/// function's error type by `From`.
///
/// ```
/// use retry_runtime::{retry, TimedOut};
///
/// #[derive(Debug)]
/// enum ApiError { TimedOut, Status(u16) }
///
/// impl From<TimedOut> for ApiError {
///     fn from(_: TimedOut) -> Self { ApiError::TimedOut }
/// }
///
/// #[retry(timeout = "2s")]
/// async fn fetch() -> Result<(), ApiError> { Ok(()) }
/// ```
///
/// `std::io::Error` converts already, with the kind `TimedOut`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimedOut;

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the attempt timed out")
    }
}

impl std::error::Error for TimedOut {}

impl From<TimedOut> for std::io::Error {
    fn from(timed_out: TimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, timed_out)
    }
}

/// The time limit of a call's attempts: the error `E` an attempt that runs
/// past its timeout fails with (`E::from(TimedOut)`, or a conversion the
/// user gave), or none, under a policy known to have no timeout. A function
/// pointer to the error alone, so that the closure API can take a
/// conversion the user wrote as easily as the attribute's key does.
#[doc(hidden)]
pub struct Limit<E> {
    timed_out: Option<fn(TimedOut) -> E>,
}

impl<E> Clone for Limit<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Limit<E> {}

impl<E> Limit<E> {
    /// Attempts cut off fail with `timed_out(TimedOut)`.
    #[must_use]
    pub const fn new(timed_out: fn(TimedOut) -> E) -> Self {
        Limit {
            timed_out: Some(timed_out),
        }
    }

    /// Attempts are never cut off: the policy has no timeout, and the error
    /// type need not express one.
    #[must_use]
    pub const fn untimed() -> Self {
        Limit { timed_out: None }
    }

    /// `attempt`, cut off after `timeout` if there is one and this limit can
    /// report it.
    // Inlined: around every attempt of the closure API, whose limit is known
    // only at run time (benches/instructions.sh).
    // The outcome is a parameter of its own, which the expansion names, so
    // that a return type that is not a `Result` is reported on it, where it
    // already is, and not again on the attempt.
    #[inline]
    pub fn attempt<R, F>(self, timeout: Option<Duration>, attempt: F) -> Limited<F, E>
    where
        F: Future<Output = R>,
        R: Outcome<Error = E>,
    {
        Limited {
            attempt,
            cutoff: match (timeout, self.timed_out) {
                (Some(timeout), Some(timed_out)) => Some(Cutoff {
                    sleep: crate::sleep::sleep(timeout),
                    timed_out,
                }),
                _ => None,
            },
        }
    }

    /// Runs a blocking `attempt`, which cannot be interrupted: with a
    /// `timeout`, one that returns after it fails as if cut off, its late
    /// outcome dropped.
    pub(crate) fn call_blocking<R: Outcome<Error = E>>(
        self,
        timeout: Option<Duration>,
        attempt: impl FnOnce() -> R,
    ) -> R {
        let (Some(timeout), Some(timed_out)) = (timeout, self.timed_out) else {
            return attempt();
        };
        let started = crate::clock::Clock::Blocking.now();
        let outcome = attempt();
        if crate::clock::Clock::Blocking.since(started) <= timeout {
            outcome
        } else {
            R::from_error(timed_out(TimedOut))
        }
    }
}

pin_project_lite::pin_project! {
    /// An attempt under its time limit, if it has one.
    #[doc(hidden)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Limited<F, E> {
        #[pin]
        attempt: F,
        #[pin]
        cutoff: Option<Cutoff<E>>,
    }
}

pin_project_lite::pin_project! {
    /// The end of an attempt's time, and the error it then fails with.
    #[doc(hidden)]
    pub struct Cutoff<E> {
        #[pin]
        sleep: crate::sleep::Sleep,
        timed_out: fn(TimedOut) -> E,
    }
}

impl<F, E> Future for Limited<F, E>
where
    F: Future,
    F::Output: Outcome<Error = E>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Poll::Ready(outcome) = this.attempt.poll(cx) {
            return Poll::Ready(outcome);
        }
        match this.cutoff.as_pin_mut() {
            Some(cutoff) => {
                let cutoff = cutoff.project();
                let timed_out = *cutoff.timed_out;
                cutoff
                    .sleep
                    .poll(cx)
                    .map(|()| F::Output::from_error(timed_out(TimedOut)))
            }
            None => Poll::Pending,
        }
    }
}
