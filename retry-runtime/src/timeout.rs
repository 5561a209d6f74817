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

/// `$attempt` cut off after `$timeout`, if there is one and `$limit` can
/// report it, its error made the attempt's outcome by `$outcome`: written
/// out where each of `Limit`'s two makers of it is inlined, as a helper
/// function did not inline as well (see `attempt_result`).
macro_rules! limited {
    ($limit:expr, $timeout:expr, $attempt:expr, $outcome:expr) => {
        Limited {
            attempt: $attempt,
            cutoff: match ($timeout, $limit.timed_out) {
                (Some(timeout), Some(timed_out)) => Some(Cutoff {
                    sleep: crate::sleep::sleep(timeout),
                    timed_out,
                    outcome: $outcome,
                }),
                _ => None,
            },
        }
    };
}

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
    // Inlined: around every attempt of a retried function with a time limit
    // (benches/instructions.sh).
    // The outcome is a parameter of its own, which the expansion names, so
    // that a return type that is not a `Result` is reported on it, where it
    // already is, and not again on the attempt. Its bound is here alone,
    // not on the `Limited` it makes: the `.await` of that (located at the
    // return type's last token) then has nothing more to report.
    #[inline]
    pub fn attempt<R, F>(self, timeout: Option<Duration>, attempt: F) -> Limited<F, E, fn(E) -> R>
    where
        F: Future<Output = R>,
        R: Outcome<Error = E>,
    {
        limited!(self, timeout, attempt, R::from_error)
    }

    /// As [`attempt`](Self::attempt), for an attempt whose outcome is a
    /// `Result` to begin with (the closure API's): the error becomes its
    /// outcome as `Err`, with no function pointer kept beside the timer.
    // Inlined: around every attempt of the closure API. Built by a macro
    // rather than through a helper shared with `attempt` (an
    // `#[inline(always)]` one taking the conversion as a parameter was
    // tried): through it, the closure API's success path cost 6
    // instructions more (benches/instructions.sh).
    #[inline]
    pub(crate) fn attempt_result<T, F>(
        self,
        timeout: Option<Duration>,
        attempt: F,
    ) -> Limited<F, E, AsErr>
    where
        F: Future<Output = Result<T, E>>,
    {
        limited!(self, timeout, attempt, AsErr)
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
    pub struct Limited<F, E, W> {
        #[pin]
        attempt: F,
        #[pin]
        cutoff: Option<Cutoff<E, W>>,
    }
}

pin_project_lite::pin_project! {
    /// The end of an attempt's time, the error it then fails with, and
    /// how that error becomes the attempt's outcome (`W`: see
    /// [`IntoOutcome`]).
    #[doc(hidden)]
    pub struct Cutoff<E, W> {
        #[pin]
        sleep: crate::sleep::Sleep,
        timed_out: fn(TimedOut) -> E,
        outcome: W,
    }
}

/// How the error of an attempt cut off becomes its outcome: through
/// `R::from_error`, taken where `R: Outcome` is required once (a function
/// pointer), or, for an outcome known to be a `Result`, as `Err`
/// ([`AsErr`], which takes no room). Not `R: Outcome` on the `Limited`
/// future itself, so that the expansion's `.await` of it, located at the
/// return type's last token, has nothing to report for a return type that
/// is not a `Result`: that is one error, where the limit is made.
#[doc(hidden)]
pub trait IntoOutcome<E, R>: Copy {
    /// The outcome of an attempt that failed with `error`.
    fn outcome(self, error: E) -> R;
}

impl<E, R> IntoOutcome<E, R> for fn(E) -> R {
    #[inline]
    fn outcome(self, error: E) -> R {
        self(error)
    }
}

/// A `Result` outcome's error, as `Err`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct AsErr;

impl<T, E> IntoOutcome<E, Result<T, E>> for AsErr {
    #[inline]
    fn outcome(self, error: E) -> Result<T, E> {
        Err(error)
    }
}

impl<F, E, W> Future for Limited<F, E, W>
where
    F: Future,
    W: IntoOutcome<E, F::Output>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Poll::Ready(outcome) = this.attempt.poll(cx) {
            return Poll::Ready(outcome);
        }
        let Some(cutoff) = this.cutoff.as_pin_mut() else {
            return Poll::Pending;
        };
        let cutoff = cutoff.project();
        let (timed_out, outcome) = (*cutoff.timed_out, *cutoff.outcome);
        cutoff
            .sleep
            .poll(cx)
            .map(|()| outcome.outcome(timed_out(TimedOut)))
    }
}
