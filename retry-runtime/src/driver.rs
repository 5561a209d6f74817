//! The retry loop without the macro: a policy built at run time over a
//! closure. It drives the same [`Attempts`] and rules as the `#[retry]`
//! expansion.

use core::future::Future;
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::time::Duration;

use crate::attempt::{sleep_blocking, Attempts};
use crate::rules::{classifier, every_error, no_hint, no_hook, no_value, Classifier, Rules};
use crate::timeout::{limited, or_timed_out, TimedOut};
use crate::{Policy, RetryBudget};

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
}

/// Running the loop, once the rules are set.
impl<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> Retry<'_, T, E, On, OnOk, Ra, RaOk, Hook, HookOk>
where
    On: Fn(&E) -> bool,
    OnOk: Fn(&T) -> bool,
    Ra: Fn(&E) -> Option<Duration>,
    RaOk: Fn(&T) -> Option<Duration>,
    Hook: Fn(&E, u32, Duration),
    HookOk: Fn(&T, u32, Duration),
{
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
            crate::sleep::sleep(wait).await;
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

    fn classifier(self) -> ClosureClassifier<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> {
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
