//! The closure API's way in: a loop made from a [`Policy`] (which has no
//! per-attempt timeout, and so runs with any error type) or a
//! `Policy<TimedOut>` (whose timeout the error type expresses, or a
//! conversion given to [`timed_out`](Policy::timed_out)), with every rule at
//! its default, to be given its rules and run.

use core::future::Future;
use core::marker::PhantomData;

use super::{DefaultRetry, Retry};
use crate::__private::CutOff;
use crate::guard::Unguarded;
use crate::policy::Params;
use crate::rules::RuleSet;
use crate::timeout::{Limit, TimedOut};
use crate::Policy;

/// The loop's entry points. Under a [`Policy`], which has no timeout, any
/// error type will do: no attempt is ever cut off. Under a
/// `Policy<TimedOut>`, an attempt past the timeout fails with
/// `E::from(TimedOut)`, so the error type must have that `From`
/// (`std::io::Error`, `anyhow::Error` and `Box<dyn Error + Send + Sync>`
/// do), or the loop is made with [`timed_out`](Policy::timed_out), which
/// says how one fails.
///
/// ```
/// use retry_runtime::Policy;
///
/// #[derive(Debug)]
/// struct ForeignError; // no `From<TimedOut>`, no `From<CircuitOpen>`
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().with_max_attempts(3);
/// let result: Result<(), ForeignError> = policy.retry(|| async { Err(ForeignError) }).await;
/// assert!(result.is_err());
/// # }
/// ```
impl<Timeout> Policy<Timeout> {
    /// A retry loop under this policy, to be given its rules and run.
    pub fn retrying<T, E: CutOff<Timeout>>(&self) -> DefaultRetry<'_, T, E> {
        retrying(&self.params, E::limit())
    }

    /// A retry loop that retries only the errors `on` accepts.
    pub fn on<T, E, On>(&self, on: On) -> DefaultRetry<'_, T, E, On>
    where
        On: Fn(&E) -> bool,
        E: CutOff<Timeout>,
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
        E: CutOff<Timeout>,
    {
        self.retrying().run(attempt).await
    }
}

impl Policy<TimedOut> {
    /// A retry loop under this policy whose attempts, cut off by its
    /// timeout, fail with `timed_out(TimedOut)`: for an error type without
    /// `From<TimedOut>` (`tonic::Status`), as the attribute's `timed_out`
    /// key. Give it its rules and run it as [`retrying`](Self::retrying)'s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{Policy, TimedOut};
    /// use tonic::Status;
    ///
    /// static POLICY: Policy<TimedOut> = Policy::new()
    ///     .with_max_attempts(2)
    ///     .with_base(Duration::from_millis(1))
    ///     .with_timeout(Duration::from_millis(50));
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let result: Result<String, Status> = POLICY
    ///     .timed_out(|_| Status::deadline_exceeded("attempt timed out"))
    ///     .on(|status: &Status| status.code() == tonic::Code::DeadlineExceeded)
    ///     .run(|| async {
    ///         tokio::time::sleep(Duration::from_secs(3600)).await; // hangs
    ///         Ok("user 7".to_owned())
    ///     })
    ///     .await;
    /// assert_eq!(result.unwrap_err().message(), "attempt timed out");
    /// # }
    /// ```
    pub fn timed_out<T, E>(&self, timed_out: fn(TimedOut) -> E) -> DefaultRetry<'_, T, E> {
        retrying(&self.params, Limit::new(timed_out))
    }
}

fn retrying<T, E>(policy: &Params, limit: Limit<E>) -> DefaultRetry<'_, T, E> {
    Retry {
        policy,
        budget: None,
        breaker: Unguarded,
        rules: RuleSet {
            // Every error retried, no `Ok` value, no hint, no hook.
            on: |_| true,
            on_ok: |_| false,
            retry_after: |_| None,
            retry_after_ok: |_| None,
            on_retry: |_, _, _| {},
            on_retry_ok: |_, _, _| {},
            types: PhantomData,
        },
        limit,
        name: crate::observe::Name::CLOSURE,
    }
}
