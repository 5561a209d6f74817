//! The per-attempt time limit: the error a cut-off attempt fails with, the
//! [`Limit`] that says how an attempt fails when cut off, and the
//! [`Limited`] attempt that it cuts off.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

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

/// The time limit of a call's attempts: how an attempt that runs past its
/// timeout fails (with `E::from(TimedOut)`, or a conversion the user gave),
/// or never, under a policy known to have no timeout.
#[doc(hidden)]
pub struct Limit<R> {
    timed_out: Option<fn(TimedOut) -> R>,
}

impl<R> Clone for Limit<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Limit<R> {}

impl<R> Limit<R> {
    /// Attempts cut off fail with `timed_out(TimedOut)`.
    #[must_use]
    pub const fn new(timed_out: fn(TimedOut) -> R) -> Self {
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
    #[inline]
    pub fn attempt<F: Future<Output = R>>(
        self,
        timeout: Option<Duration>,
        attempt: F,
    ) -> Limited<F, R> {
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
    pub(crate) fn call_blocking(self, timeout: Option<Duration>, attempt: impl FnOnce() -> R) -> R {
        let (Some(timeout), Some(timed_out)) = (timeout, self.timed_out) else {
            return attempt();
        };
        let started = crate::clock::Clock::Blocking.now();
        let outcome = attempt();
        if crate::clock::Clock::Blocking.since(started) <= timeout {
            outcome
        } else {
            timed_out(TimedOut)
        }
    }
}

pin_project_lite::pin_project! {
    /// An attempt under its time limit, if it has one.
    #[doc(hidden)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Limited<F, R> {
        #[pin]
        attempt: F,
        #[pin]
        cutoff: Option<Cutoff<R>>,
    }
}

pin_project_lite::pin_project! {
    /// The end of an attempt's time, and the outcome it then has.
    #[doc(hidden)]
    pub struct Cutoff<R> {
        #[pin]
        sleep: crate::sleep::Sleep,
        timed_out: fn(TimedOut) -> R,
    }
}

impl<F: Future<Output = R>, R> Future for Limited<F, R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.project();
        if let Poll::Ready(outcome) = this.attempt.poll(cx) {
            return Poll::Ready(outcome);
        }
        match this.cutoff.as_pin_mut() {
            Some(cutoff) => {
                let cutoff = cutoff.project();
                let timed_out = *cutoff.timed_out;
                cutoff.sleep.poll(cx).map(|()| timed_out(TimedOut))
            }
            None => Poll::Pending,
        }
    }
}
