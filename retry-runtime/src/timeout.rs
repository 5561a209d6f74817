//! Per-attempt timeouts: the error a cut-off attempt fails with, and the
//! future that cuts it off.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
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

pin_project_lite::pin_project! {
    /// An attempt cut off after a time limit, if it has one: `None` when
    /// it was cut off.
    #[doc(hidden)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Limited<F> {
        #[pin]
        attempt: F,
        #[pin]
        limit: Option<crate::sleep::Sleep>,
    }
}

impl<F: Future> Future for Limited<F> {
    type Output = Option<F::Output>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut core::task::Context<'_>,
    ) -> core::task::Poll<Self::Output> {
        let this = self.project();
        if let core::task::Poll::Ready(outcome) = this.attempt.poll(cx) {
            return core::task::Poll::Ready(Some(outcome));
        }
        match this.limit.as_pin_mut() {
            Some(limit) => limit.poll(cx).map(|()| None),
            None => core::task::Poll::Pending,
        }
    }
}

/// Runs `attempt`, cut off after `limit` if there is one.
#[doc(hidden)]
pub fn limited<F: Future>(limit: Option<Duration>, attempt: F) -> Limited<F> {
    Limited {
        attempt,
        limit: limit.map(crate::sleep::sleep),
    }
}

/// The outcome of a [`Limited`] attempt: a cut-off attempt fails with
/// `E::from(TimedOut)`. The one place the expansion requires that
/// conversion, so that a missing `From` impl is one error.
#[doc(hidden)]
#[inline]
pub fn or_timed_out<R>(outcome: Option<R>) -> R
where
    R: Outcome,
    R::Error: From<TimedOut>,
{
    outcome.unwrap_or_else(|| R::from_error(TimedOut.into()))
}

/// Runs a blocking `attempt` that cannot be cut off: with a `limit`, one that
/// returns after it is `None`, timed out, its late outcome dropped.
#[inline]
pub(crate) fn call_limited<R>(limit: Option<Duration>, attempt: impl FnOnce() -> R) -> Option<R> {
    let Some(limit) = limit else {
        return Some(attempt());
    };
    let started = crate::clock::Clock::Blocking.now();
    let outcome = attempt();
    (crate::clock::Clock::Blocking.since(started) <= limit).then_some(outcome)
}
