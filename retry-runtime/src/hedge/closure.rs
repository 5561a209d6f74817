//! Hedging over a closure, for policies built at run time:
//! `policy.on(..).hedge(Hedge::after(d)).run(|| async { .. })`.

use core::future::Future;

use super::slots::Boxed;
use super::{Hedged, Setup};
use crate::rules::RulesFor;

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
    /// The loop's policy, budget, breaker, time limit and name, with when
    /// to hedge.
    pub(crate) setup: Setup<'p, Result<T, E>>,
    pub(crate) rules: Rules,
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
        let slots = Boxed::new(self.setup.policy.max_attempts);
        Hedged::new(self.setup, slots, self.rules, attempt).await
    }
}
