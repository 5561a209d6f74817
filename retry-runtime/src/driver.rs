//! The retry loop. [`Attempts`] holds the whole decision of one retry (attempts
//! left, budget, server hint, backoff, deadline) in one place; the `#[retry]`
//! expansion and [`Retry::run`] both drive it.

use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::time::Duration;

use tokio::time::Instant;

use core::pin::Pin;

use crate::context::{scoped_call, Scoped};
use crate::{AttemptContext, Nested, Policy, RetryBudget};

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

/// Why a call stopped and returned what it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stop {
    /// The outcome is a success.
    Done,
    /// The error is one `on` does not accept.
    NotRetryable,
    /// That was attempt `max`.
    Exhausted,
    /// The retry budget is spent.
    Budget,
    /// The server asked for a wait longer than `cap`.
    HintTooLong,
    /// The wait would end past the deadline.
    Deadline,
    /// The call runs inside another retried function's attempt, which
    /// retries instead (`nested = "once"`).
    Nested,
}

impl Stop {
    /// A short name: `"done"`, `"not_retryable"`, `"exhausted"`, `"budget"`,
    /// `"hint_too_long"`, `"deadline"` or `"nested"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Stop::Done => "done",
            Stop::NotRetryable => "not_retryable",
            Stop::Exhausted => "exhausted",
            Stop::Budget => "budget",
            Stop::HintTooLong => "hint_too_long",
            Stop::Deadline => "deadline",
            Stop::Nested => "nested",
        }
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
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
    /// A plain function: time is the real clock, waits are blocking.
    blocking: bool,
    /// The last wait in nanoseconds, for decorrelated jitter; `base` before
    /// the first. Nanoseconds rather than a `Duration` keep the future small.
    previous: u64,
    /// When the first attempt started; read only when there is a deadline.
    started: Option<Instant>,
    #[cfg(feature = "tracing")]
    name: &'static str,
}

impl<'p> Attempts<'p> {
    /// Call just before the first attempt of an `async fn`. `name` names the
    /// function in `tracing` events.
    #[inline]
    #[must_use]
    pub fn start(policy: &'p Policy, budget: Option<&'p RetryBudget>, name: &'static str) -> Self {
        Self::new(policy, budget, name, false)
    }

    /// Call just before the first attempt of a plain function.
    #[inline]
    #[must_use]
    pub fn start_blocking(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
    ) -> Self {
        Self::new(policy, budget, name, true)
    }

    #[inline]
    fn new(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
        blocking: bool,
    ) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = name;
        Attempts {
            policy,
            budget,
            attempt: 1,
            blocking,
            previous: u64::try_from(policy.base().as_nanos()).unwrap_or(u64::MAX),
            started: policy.deadline().map(|_| {
                if blocking {
                    Instant::from_std(std::time::Instant::now())
                } else {
                    Instant::now()
                }
            }),
            #[cfg(feature = "tracing")]
            name,
        }
    }

    /// The attempt running or just judged, from 1.
    #[inline]
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Whether this call runs inside another retried function's attempt
    /// and leaves the retrying to it (`nested = "once"`). Read when an
    /// attempt fails, not when the call starts, to keep the thread-local
    /// off the success path: the outer attempt is still running then, since
    /// this call is part of it.
    fn is_nested(&self) -> bool {
        self.policy.nested() == Nested::Once && crate::context::in_attempt()
    }

    fn elapsed(&self, started: Instant) -> Duration {
        if self.blocking {
            started.into_std().elapsed()
        } else {
            started.elapsed()
        }
    }

    /// What the body can know of the attempt it runs.
    #[inline]
    #[must_use]
    pub fn context(&self) -> AttemptContext {
        AttemptContext {
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts().max(1),
            nested_once: self.policy.nested() == Nested::Once,
            deadline: match (self.started, self.policy.deadline()) {
                (Some(started), Some(deadline)) => started.checked_add(deadline),
                _ => None,
            },
            blocking: self.blocking,
        }
    }

    /// Polls an attempt's future with its context set, so the body can read
    /// it and nested retried functions know they are nested.
    #[inline]
    pub fn scoped<'a, F: Future>(&self, attempt: Pin<&'a mut F>) -> Scoped<'a, F> {
        Scoped::new(self.context(), attempt)
    }

    /// Runs a plain function's attempt with its context set.
    #[inline]
    pub fn call<R>(&self, attempt: impl FnOnce() -> R) -> R {
        scoped_call(self.context(), attempt)
    }

    /// Runs a plain function's attempt with its context set, and with the
    /// policy's timeout: a blocking call cannot be interrupted, so an attempt
    /// that returns after its limit is `None`, timed out, its late outcome
    /// dropped, as an async attempt cut off would be.
    #[inline]
    pub fn call_limited<R>(&self, attempt: impl FnOnce() -> R) -> Option<R> {
        let Some(limit) = self.attempt_timeout() else {
            return Some(self.call(attempt));
        };
        let started = std::time::Instant::now();
        let outcome = self.call(attempt);
        (started.elapsed() <= limit).then_some(outcome)
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the deadline. `None` without a timeout.
    #[must_use]
    pub fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout()?;
        match (self.policy.deadline(), self.started) {
            (Some(deadline), Some(started)) => {
                Some(timeout.min(deadline.saturating_sub(self.elapsed(started))))
            }
            _ => Some(timeout),
        }
    }

    /// Judges an attempt's verdict: `Ok(wait)` to retry after `wait`, or the
    /// reason to stop.
    #[inline]
    pub fn judge(&mut self, verdict: Verdict) -> Result<Duration, Stop> {
        let decision = match verdict {
            Verdict::Success => {
                if let Some(budget) = self.budget {
                    budget.record_success();
                }
                return Err(Stop::Done);
            }
            Verdict::Permanent => Err(Stop::NotRetryable),
            Verdict::Transient(hint) => self.retry(hint),
        };
        self.observe(decision);
        decision
    }

    /// Counts and traces a retry or a give-up. Off the success path.
    #[cold]
    fn observe(&self, decision: Result<Duration, Stop>) {
        match decision {
            Ok(_wait) => {
                crate::metrics::record_retry();
                #[cfg(feature = "tracing")]
                tracing::info!(
                    target: "retry_runtime",
                    function = self.name,
                    attempt = self.attempt - 1,
                    wait_ms = _wait.as_secs_f64() * 1000.0,
                    "attempt failed; retrying"
                );
            }
            Err(stop) => {
                crate::metrics::record_stop(stop);
                #[cfg(feature = "tracing")]
                if stop == Stop::NotRetryable {
                    tracing::debug!(
                        target: "retry_runtime",
                        function = self.name,
                        attempt = self.attempt,
                        reason = stop.as_str(),
                        "attempt failed; not retrying"
                    );
                } else {
                    tracing::warn!(
                        target: "retry_runtime",
                        function = self.name,
                        attempt = self.attempt,
                        reason = stop.as_str(),
                        "attempt failed; giving up"
                    );
                }
            }
        }
    }

    /// After a failure that may be retried, with the server's hint if any:
    /// the wait before the next attempt, or why there is none.
    fn retry(&mut self, hint: Option<Duration>) -> Result<Duration, Stop> {
        // Every retryable failure takes from the budget, the last one too.
        let budget_allows = self.budget.is_none_or(RetryBudget::record_failure);
        let nested = self.is_nested();
        if nested || self.attempt >= self.policy.max_attempts() {
            return Err(if nested {
                Stop::Nested
            } else {
                Stop::Exhausted
            });
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
            let end = self.elapsed(started).saturating_add(wait);
            // With a per-attempt timeout, a retry that would start exactly
            // at the deadline would get no time at all: stop instead.
            if end > deadline || (end == deadline && self.policy.timeout().is_some()) {
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

/// Called before each wait: `Fn(&E, u32, Duration)`, or `Fn(&T, u32,
/// Duration)` for retried `Ok` values.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure taking `&{X}`, the attempt number (`u32`) and the wait (`Duration`)",
    label = "expected `Fn(&{X}, u32, Duration)`"
)]
pub trait OnRetry<X>: Fn(&X, u32, Duration) {}

impl<X, F: Fn(&X, u32, Duration)> OnRetry<X> for F {}

/// The rules of one function: `on`, `on_ok`, `retry_after`,
/// `retry_after_ok`, `on_retry` and `on_retry_ok`.
#[doc(hidden)]
pub struct Rules<On, OnOk, Ra, RaOk, Hook, HookOk>(On, OnOk, Ra, RaOk, Hook, HookOk);

/// Ties the rules to the function's return type `R`, so that closures such
/// as `|e| e.is_timeout()` need no annotation.
///
/// This is the one place the expansion puts bounds on `R` and the rules:
/// when the return type is not a `Result`, or a rule does not fit it, the
/// compiler reports it here, once, and nowhere else.
#[doc(hidden)]
#[inline]
#[allow(clippy::type_complexity)]
pub fn classifier<R, On, OnOk, Ra, RaOk, Hook, HookOk>(
    on: On,
    on_ok: OnOk,
    retry_after: Ra,
    retry_after_ok: RaOk,
    on_retry: Hook,
    on_retry_ok: HookOk,
) -> Classifier<R, Rules<On, OnOk, Ra, RaOk, Hook, HookOk>>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    Classifier {
        rules: Rules(
            on,
            on_ok,
            retry_after,
            retry_after_ok,
            on_retry,
            on_retry_ok,
        ),
        step: step::<R, On, OnOk, Ra, RaOk, Hook, HookOk>,
    }
}

/// One step of the loop, for rules known to fit `R`.
fn step<R, On, OnOk, Ra, RaOk, Hook, HookOk>(
    rules: &Rules<On, OnOk, Ra, RaOk, Hook, HookOk>,
    attempts: &mut Attempts<'_>,
    outcome: R,
) -> ControlFlow<R, Duration>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    let Rules(on, on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok) = rules;
    let verdict = match outcome.as_result() {
        Ok(value) if on_ok(value) => Verdict::Transient(retry_after_ok(value)),
        Ok(_) => Verdict::Success,
        Err(error) if on(error) => Verdict::Transient(retry_after(error)),
        Err(_) => Verdict::Permanent,
    };
    match attempts.judge(verdict) {
        Ok(wait) => {
            let attempt = attempts.attempt() - 1;
            match outcome.as_result() {
                Ok(value) => on_retry_ok(value, attempt, wait),
                Err(error) => on_retry(error, attempt, wait),
            }
            ControlFlow::Continue(wait)
        }
        Err(_) => ControlFlow::Break(outcome),
    }
}

/// The rules, with the step fixed while the bounds are known to hold.
#[doc(hidden)]
pub struct Classifier<R, Rules> {
    rules: Rules,
    step: fn(&Rules, &mut Attempts<'_>, R) -> ControlFlow<R, Duration>,
}

impl<R, Rules> Classifier<R, Rules> {
    /// Judges an attempt's outcome: `Break` hands it back unchanged,
    /// `Continue` gives the wait before the next attempt. The outcome is
    /// dropped here, before the wait.
    #[inline]
    pub fn next(&self, attempts: &mut Attempts<'_>, outcome: R) -> ControlFlow<R, Duration> {
        (self.step)(&self.rules, attempts, outcome)
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
        limit: Option<tokio::time::Sleep>,
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
        limit: limit.map(tokio::time::sleep),
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

/// `on_retry` and `on_retry_ok` when none is given.
#[doc(hidden)]
#[inline]
pub fn no_hook<X>(_: &X, _: u32, _: Duration) {}

/// Blocks the thread for a plain function's wait.
#[doc(hidden)]
#[inline]
pub fn sleep_blocking(wait: Duration) {
    std::thread::sleep(wait);
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
pub struct Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk> {
    policy: &'p Policy,
    budget: Option<&'p RetryBudget>,
    rules: Rules<On, OnOk, Ra, RaOk, Hook, HookOk>,
    types: PhantomData<fn(&T, &E)>,
}

/// The classifier of a closure loop.
type ClosureClassifier<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> =
    Classifier<Result<T, E>, Rules<On, OnOk, Ra, RaOk, Hook, HookOk>>;

/// A [`Retry`] with only `on` set, by default to retry every error: no `Ok`
/// value is retried, no server hint is read, no hook is called.
pub type DefaultRetry<'p, T, E, On = fn(&E) -> bool> = Retry<
    'p,
    T,
    E,
    On,
    fn(&T) -> bool,
    fn(&E) -> Option<Duration>,
    fn(&T) -> Option<Duration>,
    fn(&E, u32, Duration),
    fn(&T, u32, Duration),
>;

impl Policy {
    /// A retry loop under this policy, to be given its rules and run.
    pub fn retrying<T, E>(&self) -> DefaultRetry<'_, T, E> {
        Retry {
            policy: self,
            budget: None,
            rules: Rules(
                every_error::<E>,
                no_value::<T>,
                no_hint::<E>,
                no_hint::<T>,
                no_hook::<E>,
                no_hook::<T>,
            ),
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

/// Replaces the rule named `new` in `rules`, keeping the others. Every name
/// is written by the caller, in order, so the pattern and the rebuilt tuple
/// agree.
macro_rules! with_rule {
    ($self:ident, ($($before:ident),*), $new:ident, ($($after:ident),*)) => {{
        let Rules($($before,)* _, $($after),*) = $self.rules;
        Retry {
            policy: $self.policy,
            budget: $self.budget,
            rules: Rules($($before,)* $new, $($after),*),
            types: PhantomData,
        }
    }};
}

impl<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk> Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk> {
    /// Retries only the errors `on` accepts.
    pub fn on<F: Fn(&E) -> bool>(self, on: F) -> Retry<'p, T, E, F, OnOk, Ra, RaOk, Hook, HookOk> {
        with_rule!(
            self,
            (),
            on,
            (on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok)
        )
    }

    /// Also retries the `Ok` values `on_ok` accepts, such as an HTTP
    /// response with status 503. When no retry is left, the caller gets the
    /// last such value as it came.
    pub fn on_ok<F: Fn(&T) -> bool>(
        self,
        on_ok: F,
    ) -> Retry<'p, T, E, On, F, Ra, RaOk, Hook, HookOk> {
        with_rule!(
            self,
            (on),
            on_ok,
            (retry_after, retry_after_ok, on_retry, on_retry_ok)
        )
    }

    /// Reads the wait a server asked for from a retried error.
    pub fn retry_after<F>(self, retry_after: F) -> Retry<'p, T, E, On, OnOk, F, RaOk, Hook, HookOk>
    where
        F: Fn(&E) -> Option<Duration>,
    {
        with_rule!(
            self,
            (on, on_ok),
            retry_after,
            (retry_after_ok, on_retry, on_retry_ok)
        )
    }

    /// Reads the wait a server asked for from a retried `Ok` value.
    pub fn retry_after_ok<F>(
        self,
        retry_after_ok: F,
    ) -> Retry<'p, T, E, On, OnOk, Ra, F, Hook, HookOk>
    where
        F: Fn(&T) -> Option<Duration>,
    {
        with_rule!(
            self,
            (on, on_ok, retry_after),
            retry_after_ok,
            (on_retry, on_retry_ok)
        )
    }

    /// Calls `on_retry` before each wait after an error, with the error, the
    /// number of the attempt that failed, and the wait.
    pub fn on_retry<F>(self, on_retry: F) -> Retry<'p, T, E, On, OnOk, Ra, RaOk, F, HookOk>
    where
        F: Fn(&E, u32, Duration),
    {
        with_rule!(
            self,
            (on, on_ok, retry_after, retry_after_ok),
            on_retry,
            (on_retry_ok)
        )
    }

    /// Calls `on_retry_ok` before each wait after an `Ok` value `on_ok`
    /// retries, with the value, the attempt number, and the wait.
    pub fn on_retry_ok<F>(self, on_retry_ok: F) -> Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, F>
    where
        F: Fn(&T, u32, Duration),
    {
        with_rule!(
            self,
            (on, on_ok, retry_after, retry_after_ok, on_retry),
            on_retry_ok,
            ()
        )
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
        Hook: Fn(&E, u32, Duration),
        HookOk: Fn(&T, u32, Duration),
    {
        let mut attempts = Attempts::start(self.policy, self.budget, "closure");
        let classifier = self.classifier();
        loop {
            let outcome = {
                // The closure runs with the attempt's context set, as the
                // body of a retried function does.
                let future = attempts.call(&mut attempt);
                let limited = core::pin::pin!(limited(attempts.attempt_timeout(), future));
                or_timed_out(attempts.scoped(limited).await)
            };
            let wait = match classifier.next(&mut attempts, outcome) {
                ControlFlow::Break(outcome) => return outcome,
                ControlFlow::Continue(wait) => wait,
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Runs a blocking `attempt` on this thread under the same rules, with
    /// `std::thread::sleep` between attempts and the deadline on the real
    /// clock. A blocking call cannot be interrupted: an attempt that returns
    /// after the policy's `timeout` counts as timed out, as an async one cut
    /// off would.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub fn run_blocking<F>(self, mut attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        E: From<TimedOut>,
        On: Fn(&E) -> bool,
        OnOk: Fn(&T) -> bool,
        Ra: Fn(&E) -> Option<Duration>,
        RaOk: Fn(&T) -> Option<Duration>,
        Hook: Fn(&E, u32, Duration),
        HookOk: Fn(&T, u32, Duration),
    {
        let mut attempts = Attempts::start_blocking(self.policy, self.budget, "closure");
        let classifier = self.classifier();
        loop {
            let outcome = or_timed_out(attempts.call_limited(&mut attempt));
            match classifier.next(&mut attempts, outcome) {
                ControlFlow::Break(outcome) => return outcome,
                ControlFlow::Continue(wait) => sleep_blocking(wait),
            }
        }
    }

    fn classifier(self) -> ClosureClassifier<T, E, On, OnOk, Ra, RaOk, Hook, HookOk>
    where
        On: Fn(&E) -> bool,
        OnOk: Fn(&T) -> bool,
        Ra: Fn(&E) -> Option<Duration>,
        RaOk: Fn(&T) -> Option<Duration>,
        Hook: Fn(&E, u32, Duration),
        HookOk: Fn(&T, u32, Duration),
    {
        let Rules(on, on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok) = self.rules;
        classifier(
            on,
            on_ok,
            retry_after,
            retry_after_ok,
            on_retry,
            on_retry_ok,
        )
    }
}
