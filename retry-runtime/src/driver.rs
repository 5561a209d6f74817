//! The retry loop. [`Attempts`] holds the whole decision of one retry (attempts
//! left, budget, server hint, backoff, deadline) in one place; the `#[retry]`
//! expansion and [`Retry::run`] both drive it.

use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::time::Duration;

use tokio::time::Instant;

use crate::{Policy, RetryBudget};

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

/// Why a call stopped retrying and returned what it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stop {
    /// The outcome was a success, or an error `on` does not accept.
    Done,
    /// That was attempt `max`.
    Exhausted,
    /// The retry budget is spent.
    Budget,
    /// The server asked for a wait longer than `cap`.
    HintTooLong,
    /// The wait would end past the deadline.
    Deadline,
}

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
    /// The success type.
    type Ok;
    /// The error type.
    type Error;
    /// A view of the outcome as a `Result`.
    fn as_result(&self) -> Result<&Self::Ok, &Self::Error>;
    /// The outcome of an attempt that failed with `error`.
    fn from_error(error: Self::Error) -> Self;
}

impl<T, E> Outcome for Result<T, E> {
    type Ok = T;
    type Error = E;

    #[inline]
    fn as_result(&self) -> Result<&T, &E> {
        self.as_ref()
    }

    #[inline]
    fn from_error(error: E) -> Self {
        Err(error)
    }
}

/// The state of one call across its attempts. Holds no error and no value, so
/// it never makes the caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p> {
    policy: &'p Policy,
    budget: Option<&'p RetryBudget>,
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
    pub fn start(policy: &'p Policy, budget: Option<&'p RetryBudget>) -> Self {
        Attempts {
            policy,
            budget,
            attempt: 1,
            previous: u64::try_from(policy.base().as_nanos()).unwrap_or(u64::MAX),
            started: policy.deadline().map(|_| Instant::now()),
        }
    }

    /// The attempt running or just judged, from 1.
    #[inline]
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the deadline. `None` without a timeout.
    #[must_use]
    pub fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout()?;
        match (self.policy.deadline(), self.started) {
            (Some(deadline), Some(started)) => {
                Some(timeout.min(deadline.saturating_sub(started.elapsed())))
            }
            _ => Some(timeout),
        }
    }

    /// Judges an attempt's verdict: `Ok(wait)` to retry after `wait`, or the
    /// reason to stop.
    #[inline]
    pub fn judge(&mut self, verdict: Verdict) -> Result<Duration, Stop> {
        match verdict {
            Verdict::Success => {
                if let Some(budget) = self.budget {
                    budget.record_success();
                }
                Err(Stop::Done)
            }
            Verdict::Permanent => Err(Stop::Done),
            Verdict::Transient(hint) => self.retry(hint),
        }
    }

    /// After a failure that may be retried, with the server's hint if any:
    /// the wait before the next attempt, or why there is none.
    #[cold]
    fn retry(&mut self, hint: Option<Duration>) -> Result<Duration, Stop> {
        // Every retryable failure takes from the budget, the last one too.
        let budget_allows = self.budget.is_none_or(RetryBudget::record_failure);
        if self.attempt >= self.policy.max_attempts() {
            return Err(Stop::Exhausted);
        }
        if !budget_allows {
            return Err(Stop::Budget);
        }
        let backoff = self
            .policy
            .wait(self.attempt - 1, Duration::from_nanos(self.previous));
        let wait = match hint {
            Some(hint) => self
                .policy
                .hinted_wait(backoff, hint, crate::rng::next_u64())
                .ok_or(Stop::HintTooLong)?,
            None => backoff,
        };
        if let (Some(deadline), Some(started)) = (self.policy.deadline(), self.started) {
            if started.elapsed().saturating_add(wait) > deadline {
                return Err(Stop::Deadline);
            }
        }
        // Waits are at most `u64::MAX` nanoseconds, so this is exact.
        self.previous = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.attempt += 1;
        Ok(wait)
    }
}

/// What a classifier makes of an outcome.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A value to return.
    Success,
    /// An error `on` rejects: return it.
    Permanent,
    /// An error `on` accepts, or an `Ok` value `on_ok` accepts, with the
    /// server's hint if there is one.
    Transient(Option<Duration>),
}

/// Which errors to retry: `Fn(&E) -> bool`. One bound, so that a mismatch is
/// one error.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{E}` and returns `bool`",
    label = "expected `Fn(&{E}) -> bool`"
)]
pub trait Classify<E>: Fn(&E) -> bool {}

impl<E, F: Fn(&E) -> bool> Classify<E> for F {}

/// The wait a server asked for: `Fn(&E) -> Option<Duration>`.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{E}` and returns `Option<Duration>`",
    label = "expected `Fn(&{E}) -> Option<Duration>`"
)]
pub trait Hint<E>: Fn(&E) -> Option<Duration> {}

impl<E, F: Fn(&E) -> Option<Duration>> Hint<E> for F {}

/// The rules of one function: `on`, `on_ok`, `retry_after`, `retry_after_ok`.
#[doc(hidden)]
pub struct Rules<On, OnOk, Ra, RaOk> {
    on: On,
    on_ok: OnOk,
    retry_after: Ra,
    retry_after_ok: RaOk,
}

/// Ties the rules to the function's return type `R`, so that closures such
/// as `|e| e.is_timeout()` need no annotation.
///
/// This is the one place the expansion puts bounds on `R` and the rules:
/// when the return type is not a `Result`, or a rule does not fit it, the
/// compiler reports it here, once, and nowhere else.
#[doc(hidden)]
#[inline]
pub fn classifier<R, On, OnOk, Ra, RaOk>(
    on: On,
    on_ok: OnOk,
    retry_after: Ra,
    retry_after_ok: RaOk,
) -> Classifier<R, Rules<On, OnOk, Ra, RaOk>>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
{
    Classifier {
        rules: Rules {
            on,
            on_ok,
            retry_after,
            retry_after_ok,
        },
        verdict: verdict::<R, On, OnOk, Ra, RaOk>,
    }
}

fn verdict<R, On, OnOk, Ra, RaOk>(rules: &Rules<On, OnOk, Ra, RaOk>, outcome: &R) -> Verdict
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
{
    match outcome.as_result() {
        Ok(value) if (rules.on_ok)(value) => Verdict::Transient((rules.retry_after_ok)(value)),
        Ok(_) => Verdict::Success,
        Err(error) if (rules.on)(error) => Verdict::Transient((rules.retry_after)(error)),
        Err(_) => Verdict::Permanent,
    }
}

/// The rules, with the verdict fixed while the bounds are known to hold.
#[doc(hidden)]
pub struct Classifier<R, Rules> {
    rules: Rules,
    verdict: fn(&Rules, &R) -> Verdict,
}

impl<R, Rules> Classifier<R, Rules> {
    /// What the rules make of `outcome`.
    #[inline]
    pub fn verdict(&self, outcome: &R) -> Verdict {
        (self.verdict)(&self.rules, outcome)
    }

    /// Judges an attempt's outcome: `Break` hands it back unchanged,
    /// `Continue` gives the wait before the next attempt. The outcome is
    /// dropped here, before the wait.
    #[inline]
    pub fn next(&self, attempts: &mut Attempts<'_>, outcome: R) -> ControlFlow<R, Duration> {
        match attempts.judge(self.verdict(&outcome)) {
            Ok(wait) => ControlFlow::Continue(wait),
            Err(_) => ControlFlow::Break(outcome),
        }
    }
}

/// Runs one attempt, cut off after `limit` if there is one.
#[doc(hidden)]
pub async fn with_timeout<R, F>(limit: Option<Duration>, attempt: F) -> R
where
    F: Future<Output = R>,
    R: Outcome,
    R::Error: From<TimedOut>,
{
    match limit {
        Some(limit) => match tokio::time::timeout(limit, attempt).await {
            Ok(outcome) => outcome,
            Err(_) => R::from_error(TimedOut.into()),
        },
        None => attempt.await,
    }
}

/// The classifier of `on` when none is given: every error is retried.
#[doc(hidden)]
#[inline]
pub fn every_error<E>(_: &E) -> bool {
    true
}

/// The classifier of `on_ok` when none is given: no `Ok` value is retried.
#[doc(hidden)]
#[inline]
pub fn no_value<T>(_: &T) -> bool {
    false
}

/// `retry_after` when none is given.
#[doc(hidden)]
#[inline]
pub fn no_hint<T>(_: &T) -> Option<Duration> {
    None
}

/// A retry loop over a closure, for policies built at run time.
///
/// The error type must convert from [`TimedOut`], for the policy's
/// per-attempt timeout: `std::io::Error`, `anyhow::Error` and
/// `Box<dyn Error>` do already; for an error type of your own, write the
/// `From` impl.
///
/// Made by [`Policy::on`] or [`Policy::retrying`]; [`Policy::retry`] runs it
/// with every error retried.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::Policy;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().with_max_attempts(5).with_base(Duration::from_millis(50));
/// let mut calls = 0;
/// let result: std::io::Result<u32> = policy
///     .on(|error: &std::io::Error| error.kind() == std::io::ErrorKind::Interrupted)
///     .run(|| {
///         calls += 1;
///         let outcome = if calls < 3 { Err(std::io::ErrorKind::Interrupted.into()) } else { Ok(calls) };
///         async move { outcome }
///     })
///     .await;
/// assert_eq!(result.unwrap(), 3);
/// # }
/// ```
#[must_use = "a `Retry` does nothing until `.run(...)` is awaited"]
pub struct Retry<'p, T, E, On, OnOk, Ra, RaOk> {
    policy: &'p Policy,
    budget: Option<&'p RetryBudget>,
    rules: Rules<On, OnOk, Ra, RaOk>,
    types: PhantomData<fn(&T, &E)>,
}

/// A [`Retry`] with only `on` set, by default to retry every error; no `Ok`
/// value is retried and no server hint is read.
pub type DefaultRetry<'p, T, E, On = fn(&E) -> bool> =
    Retry<'p, T, E, On, fn(&T) -> bool, fn(&E) -> Option<Duration>, fn(&T) -> Option<Duration>>;

impl Policy {
    /// A retry loop under this policy, to be given its rules and run.
    pub fn retrying<T, E>(&self) -> DefaultRetry<'_, T, E> {
        Retry {
            policy: self,
            budget: None,
            rules: Rules {
                on: every_error::<E>,
                on_ok: no_value::<T>,
                retry_after: no_hint::<E>,
                retry_after_ok: no_hint::<T>,
            },
            types: PhantomData,
        }
    }

    /// A retry loop that retries only the errors `on` accepts.
    pub fn on<T, E, On>(&self, on: On) -> DefaultRetry<'_, T, E, On>
    where
        On: Fn(&E) -> bool,
    {
        self.retrying().on(on)
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
        E: From<TimedOut>,
    {
        self.retrying().run(attempt).await
    }
}

impl<'p, T, E, On, OnOk, Ra, RaOk> Retry<'p, T, E, On, OnOk, Ra, RaOk> {
    /// Retries only the errors `on` accepts.
    pub fn on<On2: Fn(&E) -> bool>(self, on: On2) -> Retry<'p, T, E, On2, OnOk, Ra, RaOk> {
        let Rules {
            on_ok,
            retry_after,
            retry_after_ok,
            ..
        } = self.rules;
        Retry {
            policy: self.policy,
            budget: self.budget,
            rules: Rules {
                on,
                on_ok,
                retry_after,
                retry_after_ok,
            },
            types: PhantomData,
        }
    }

    /// Also retries the `Ok` values `on_ok` accepts, such as an HTTP
    /// response with status 503. When no retry is left, the caller gets the
    /// last such value as it came.
    pub fn on_ok<OnOk2: Fn(&T) -> bool>(
        self,
        on_ok: OnOk2,
    ) -> Retry<'p, T, E, On, OnOk2, Ra, RaOk> {
        let Rules {
            on,
            retry_after,
            retry_after_ok,
            ..
        } = self.rules;
        Retry {
            policy: self.policy,
            budget: self.budget,
            rules: Rules {
                on,
                on_ok,
                retry_after,
                retry_after_ok,
            },
            types: PhantomData,
        }
    }

    /// Reads the wait a server asked for from a retried error.
    pub fn retry_after<Ra2: Fn(&E) -> Option<Duration>>(
        self,
        retry_after: Ra2,
    ) -> Retry<'p, T, E, On, OnOk, Ra2, RaOk> {
        let Rules {
            on,
            on_ok,
            retry_after_ok,
            ..
        } = self.rules;
        Retry {
            policy: self.policy,
            budget: self.budget,
            rules: Rules {
                on,
                on_ok,
                retry_after,
                retry_after_ok,
            },
            types: PhantomData,
        }
    }

    /// Reads the wait a server asked for from a retried `Ok` value.
    pub fn retry_after_ok<RaOk2: Fn(&T) -> Option<Duration>>(
        self,
        retry_after_ok: RaOk2,
    ) -> Retry<'p, T, E, On, OnOk, Ra, RaOk2> {
        let Rules {
            on,
            on_ok,
            retry_after,
            ..
        } = self.rules;
        Retry {
            policy: self.policy,
            budget: self.budget,
            rules: Rules {
                on,
                on_ok,
                retry_after,
                retry_after_ok,
            },
            types: PhantomData,
        }
    }

    /// Draws retries from a shared budget.
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Runs `attempt` until it succeeds, fails with an error `on` rejects, or
    /// the policy runs out of attempts, budget or time. Each wait is a
    /// `tokio::time::sleep`; dropping the future stops the loop.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub async fn run<F, Fut>(self, mut attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<TimedOut>,
        On: Fn(&E) -> bool,
        OnOk: Fn(&T) -> bool,
        Ra: Fn(&E) -> Option<Duration>,
        RaOk: Fn(&T) -> Option<Duration>,
    {
        let mut attempts = Attempts::start(self.policy, self.budget);
        let Rules {
            on,
            on_ok,
            retry_after,
            retry_after_ok,
        } = self.rules;
        let classifier =
            classifier::<Result<T, E>, _, _, _, _>(on, on_ok, retry_after, retry_after_ok);
        loop {
            let outcome = with_timeout(attempts.attempt_timeout(), attempt()).await;
            let wait = match classifier.next(&mut attempts, outcome) {
                ControlFlow::Break(outcome) => return outcome,
                ControlFlow::Continue(wait) => wait,
            };
            tokio::time::sleep(wait).await;
        }
    }
}
