//! Hedging over a closure, for policies built at run time:
//! `policy.on(..).hedge(Hedge::after(d)).run(|| async { .. })`.

use core::future::Future;
use core::marker::PhantomData;

use super::slots::Boxed;
use super::{Breaker, Hedge, Hedged, Setup};
use crate::__private::Limit;
use crate::observe::Name;
use crate::rules::RulesFor;
use crate::{Policy, RetryBudget};

/// A [`Retry`](crate::Retry) that hedges: made by
/// [`Retry::hedge`](crate::Retry::hedge).
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use retry_runtime::{hedge::Hedge, Policy};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().with_max_attempts(2);
/// let started = AtomicU32::new(0);
/// let answer: std::io::Result<u32> = policy
///     .retrying()
///     .hedge(Hedge::after(Duration::from_millis(50)))
///     .run(|| async {
///         let attempt = started.fetch_add(1, Ordering::Relaxed) + 1;
///         // The first copy hangs; the second, sent after 50 ms, answers.
///         let took = if attempt == 1 { 10_000 } else { 10 };
///         tokio::time::sleep(Duration::from_millis(took)).await;
///         Ok(attempt)
///     })
///     .await;
/// assert_eq!(answer.unwrap(), 2);
/// assert_eq!(started.load(Ordering::Relaxed), 2);
/// # }
/// ```
///
/// The attempts run at once, so the closure is called again while earlier
/// futures it returned still run: they may share what the closure borrows,
/// but not hold it mutably. The number of attempts is known only at run
/// time, so each call allocates its slots: one `Vec` and one box per slot
/// used (at most 16, however large `max` is).
#[must_use = "a `HedgedRetry` does nothing until `.run(...)` is awaited"]
pub struct HedgedRetry<'p, T, E, Rules> {
    policy: &'p Policy,
    hedge: Hedge,
    budget: Option<&'p RetryBudget>,
    breaker: Breaker<'p, E>,
    rules: Rules,
    limit: Limit<E>,
    name: Name,
    types: PhantomData<fn(&T, &E)>,
}

impl<'p, T, E, Rules> HedgedRetry<'p, T, E, Rules> {
    pub(crate) fn new(
        policy: &'p Policy,
        hedge: Hedge,
        budget: Option<&'p RetryBudget>,
        breaker: Breaker<'p, E>,
        rules: Rules,
        limit: Limit<E>,
        name: Name,
    ) -> Self {
        HedgedRetry {
            policy,
            hedge,
            budget,
            breaker,
            rules,
            limit,
            name,
            types: PhantomData,
        }
    }
}

impl<'p, T, E, Rules> HedgedRetry<'p, T, E, Rules>
where
    Rules: RulesFor<Result<T, E>>,
{
    /// Runs hedged attempts of `attempt` until one answers, or all have
    /// failed; see the [module docs](crate::hedge) for when each starts.
    ///
    /// # Errors
    ///
    /// An error `on` rejects, or the last failure to arrive, unchanged.
    pub async fn run<F, Fut>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        Hedged::new(
            Setup {
                policy: self.policy,
                hedge: self.hedge,
                budget: self.budget,
                breaker: self.breaker,
                limit: self.limit,
                name: self.name.get(),
            },
            Boxed::new(self.policy.max_attempts()),
            self.rules,
            attempt,
        )
        .await
    }
}
