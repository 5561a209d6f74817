//! The retry loop: one place that decides, after each attempt, whether to
//! return or how long to wait. The `#[retry]` expansion and [`Retry::run`]
//! both drive it.

use core::future::Future;
use core::ops::ControlFlow;
use core::time::Duration;

use tokio::time::Instant;

use crate::Policy;

/// What an attempt returns: a `Result`, possibly behind an alias such as
/// `io::Result<T>`. Lets the expansion name the success and error types of a
/// return type it only knows as tokens.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`#[retry]` needs a function that returns a `Result`, not `{Self}`",
    label = "this must be a `Result<T, E>` (or an alias of one, such as `io::Result<T>`)",
    note = "`#[retry]` decides whether to retry by looking at the `Err` value"
)]
pub trait Outcome {
    /// The error type.
    type Error;
    /// The error, if the attempt failed.
    fn error(&self) -> Option<&Self::Error>;
}

impl<T, E> Outcome for Result<T, E> {
    type Error = E;

    #[inline]
    fn error(&self) -> Option<&E> {
        self.as_ref().err()
    }
}

/// The state of one call across its attempts. Holds no error and no value, so
/// it never makes the caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p> {
    policy: &'p Policy,
    /// Attempts made so far, the one being judged included.
    attempt: u32,
    /// The last wait in nanoseconds, for decorrelated jitter; `base` before
    /// the first. Nanoseconds rather than a `Duration` keep the future small.
    previous: u64,
    /// When the first attempt started; read only when there is a deadline.
    started: Option<Instant>,
}

impl<'p> Attempts<'p> {
    /// Call just before the first attempt.
    #[inline]
    #[must_use]
    pub fn start(policy: &'p Policy) -> Self {
        Attempts {
            policy,
            attempt: 1,
            previous: u64::try_from(policy.base().as_nanos()).unwrap_or(u64::MAX),
            started: policy.deadline().map(|_| Instant::now()),
        }
    }

    /// After an error that may be retried: the wait before the next attempt,
    /// or `None` when the attempts or the deadline are used up.
    #[cold]
    pub fn retry(&mut self) -> Option<Duration> {
        if self.attempt >= self.policy.max_attempts() {
            return None;
        }
        let wait = self
            .policy
            .wait(self.attempt - 1, Duration::from_nanos(self.previous));
        if let (Some(deadline), Some(started)) = (self.policy.deadline(), self.started) {
            if started.elapsed().saturating_add(wait) > deadline {
                return None;
            }
        }
        // Waits are at most `u64::MAX` nanoseconds, so this is exact.
        self.previous = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.attempt += 1;
        Some(wait)
    }
}

#[doc(hidden)]
/// Ties `on` to the function's return type `R`, so that a closure such as
/// `|e| e.is_timeout()` needs no annotation.
///
/// This is the one place the expansion puts bounds on `R` and `On`: when the
/// return type is not a `Result`, or `on` does not take its error, the
/// compiler reports it here, once, and nowhere else.
#[inline]
pub fn classifier<R, On>(on: On) -> Classifier<R, On>
where
    R: Outcome,
    On: Classify<R::Error>,
{
    Classifier {
        on,
        retryable: retryable::<R, On>,
    }
}

/// What `on` must be: one bound, so that a mismatch is one error.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`on` must be a function or closure that takes `&{E}` and returns `bool`",
    label = "expected `Fn(&{E}) -> bool`",
    note = "for example `on = |error| error.is_timeout()`, or `fn is_transient(error: &{E}) -> bool`"
)]
pub trait Classify<E>: Fn(&E) -> bool {}

impl<E, F: Fn(&E) -> bool> Classify<E> for F {}

#[doc(hidden)]
/// `on`, with the test "is this outcome an error `on` accepts" fixed while
/// the bounds are known to hold.
pub struct Classifier<R, On> {
    on: On,
    retryable: fn(&On, &R) -> bool,
}

fn retryable<R, On>(on: &On, outcome: &R) -> bool
where
    R: Outcome,
    On: Classify<R::Error>,
{
    outcome.error().is_some_and(on)
}

impl<R, On> Classifier<R, On> {
    /// Judges an attempt's outcome: see `Attempts::next`.
    #[inline]
    pub fn next(&self, attempts: &mut Attempts<'_>, outcome: R) -> ControlFlow<R, Duration> {
        if (self.retryable)(&self.on, &outcome) {
            attempts
                .retry()
                .map_or(ControlFlow::Break(outcome), ControlFlow::Continue)
        } else {
            ControlFlow::Break(outcome)
        }
    }
}

/// A retry loop over a closure, for policies built at run time.
///
/// Made by [`Policy::on`]; [`Policy::retry`] is the same with every error
/// retried.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::Policy;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().with_max_attempts(5).with_base(Duration::from_millis(50));
/// let mut calls = 0;
/// let result: Result<u32, &str> = policy
///     .on(|error: &&str| *error == "busy")
///     .run(|| {
///         calls += 1;
///         let outcome = if calls < 3 { Err("busy") } else { Ok(calls) };
///         async move { outcome }
///     })
///     .await;
/// assert_eq!(result, Ok(3));
/// # }
/// ```
#[derive(Clone, Copy, Debug)]
#[must_use = "a `Retry` does nothing until `.run(...)` is awaited"]
pub struct Retry<'p, On> {
    policy: &'p Policy,
    on: On,
}

impl Policy {
    /// A retry loop that retries only the errors `on` accepts.
    pub fn on<E, On>(&self, on: On) -> Retry<'_, On>
    where
        On: Fn(&E) -> bool,
    {
        Retry { policy: self, on }
    }

    /// Runs `attempt` until it succeeds, retrying every error under this
    /// policy. Returns the last attempt's result unchanged.
    ///
    /// # Errors
    ///
    /// The last attempt's error, when attempts or the deadline run out.
    pub async fn retry<T, E, F, Fut>(&self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.on(|_: &E| true).run(attempt).await
    }
}

impl<On> Retry<'_, On> {
    /// Runs `attempt` until it succeeds, fails with an error `on` rejects, or
    /// the policy runs out of attempts or time. Each wait is a
    /// `tokio::time::sleep`; dropping the future stops the loop.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub async fn run<T, E, F, Fut>(self, mut attempt: F) -> Result<T, E>
    where
        On: Fn(&E) -> bool,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempts = Attempts::start(self.policy);
        let on = classifier::<Result<T, E>, _>(&self.on);
        loop {
            let outcome = attempt().await;
            let wait = match on.next(&mut attempts, outcome) {
                ControlFlow::Break(outcome) => return outcome,
                ControlFlow::Continue(wait) => wait,
            };
            tokio::time::sleep(wait).await;
        }
    }
}
