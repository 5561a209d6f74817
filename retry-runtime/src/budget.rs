//! A retry budget shared by every call that names it: gRPC's retry
//! throttling rule, or a ratio of retries to first attempts over a window;
//! lock-free.

use core::fmt;

use crate::clock::{Clock, Epoch};
use crate::decision::Classification;
// The model in `tests/loom_budget.rs` runs the same code on loom's atomics.
use crate::ring::{AtomicU64, Ordering, Ring};

/// Thousandths of a token: the ratio is kept to three decimals, as gRPC does.
const MILLI: u64 = 1000;

/// Retries as a share of traffic, shared across tasks and threads.
///
/// Per-call limits do not stop a fleet-wide storm: when every request fails,
/// `max = 4` still makes every request four calls. A budget switches retries
/// off when too many calls are failing and back on as calls succeed again.
///
/// The rule is gRPC's retry throttling: the count starts at `max_tokens`;
/// every attempt that fails with an error `on` accepts takes one token (never
/// below zero), and a retry is made only if the count is then still above
/// `max_tokens / 2`; every success gives back `token_ratio` (never above
/// `max_tokens`).
///
/// # The bound it gives
///
/// During a total outage, once the count reaches `max_tokens / 2` no call
/// retries any more: at most about `max_tokens / 2` retries are made in all,
/// however many calls fail (plus one per call racing at the threshold), and
/// then each further call costs exactly one attempt. Without a budget, `n`
/// failing calls make `max * n` attempts. With `RetryBudget::new(100, 0.1)`
/// and a thousand requests, that is about 1,050 calls instead of 4,000 at
/// `max = 4`. Afterwards, retries come back once successes have refilled the
/// count above half: ten successes per token at a ratio of 0.1, so retries
/// stay below about one in ten calls.
///
/// ```
/// use retry_runtime::{retry, RetryBudget};
///
/// static API_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
///
/// #[retry(max = 4, budget = &API_BUDGET)]
/// async fn fetch(id: u64) -> Result<u64, std::io::Error> {
///     Ok(id)
/// }
/// ```
///
/// The count is one atomic integer in thousandths of a token, updated with
/// compare-and-swap: no lock, no allocation.
///
/// # A ratio of the first attempts
///
/// [`RetryBudget::ratio`] is the other rule: retries up to a share of the
/// first attempts of the last `window`, with no floor, as Finagle's and
/// tower's budgets count (without their floor). Its bound holds from the
/// first failures whatever the process's rate, where gRPC's rule lets a
/// process that makes one call a second retry for minutes: what a fleet
/// of many small clients should use (docs/overload.md).
pub struct RetryBudget {
    /// The count, in thousandths of a token.
    tokens: AtomicU64,
    max: u64,
    ratio: u64,
    /// A [`ratio`](Self::ratio) budget's first attempts and retries; for
    /// gRPC's rule, a ring of buckets 0 ms wide, unused.
    window: Ring,
    epoch: Epoch,
}

/// A budget: gRPC's rule of `max_tokens` and `token_ratio`, or for
/// `bucket_ms` above 0, retries up to `ratio` of the first attempts.
macro_rules! budget {
    ($max_tokens:expr, $ratio:expr, $bucket_ms:expr) => {{
        let max = $max_tokens as u64 * MILLI;
        RetryBudget {
            tokens: AtomicU64::new(max),
            max,
            ratio: milli($ratio),
            window: Ring::new($bucket_ms),
            epoch: Epoch::new(),
        }
    }};
}

impl RetryBudget {
    /// A full budget of `max_tokens`, refilled by `token_ratio` per success.
    ///
    /// `token_ratio` is kept to three decimals; a negative or NaN ratio is 0,
    /// so successes never refill the budget.
    #[cfg(not(loom))]
    #[must_use]
    pub const fn new(max_tokens: u32, token_ratio: f32) -> Self {
        budget!(max_tokens, token_ratio, 0)
    }

    /// Under loom, whose atomics cannot be made in a `const fn`.
    #[cfg(loom)]
    #[must_use]
    pub fn new(max_tokens: u32, token_ratio: f32) -> Self {
        budget!(max_tokens, token_ratio, 0)
    }

    /// Retries up to `ratio` of the first attempts of the last `window`
    /// (kept to three decimals; ten buckets of a tenth each, so the window
    /// slides in tenths), with no floor: a retry is made only if, with it,
    /// the retries of the window are still at most `ratio` times its first
    /// attempts. A hedge is a retry. `RetryBudget::ratio(0.1,
    /// Duration::from_secs(10))` keeps retries to a tenth of the traffic
    /// from the first failures, at any rate: a process that made eight
    /// calls in the last 10 s makes no retry.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{retry, RetryBudget};
    ///
    /// static API_BUDGET: RetryBudget = RetryBudget::ratio(0.1, Duration::from_secs(10));
    ///
    /// #[retry(max = 3, timeout = "1s", budget = &API_BUDGET)]
    /// async fn fetch(id: u64) -> Result<u64, std::io::Error> {
    ///     Ok(id)
    /// }
    /// ```
    ///
    /// Its count is the window's ring of ten atomic words (first attempts
    /// and retries), updated with compare-and-swap; a first attempt reads
    /// the clock only when its bucket rolls over and every 16th call.
    /// Retries racing at the bound may each be let through.
    #[cfg(not(loom))]
    #[must_use]
    pub const fn ratio(ratio: f32, window: core::time::Duration) -> Self {
        budget!(0, ratio, Ring::bucket_ms(window))
    }

    /// The tokens left now; for a [`ratio`](Self::ratio) budget, the
    /// retries it would allow now (its share of the window's first
    /// attempts, less the retries made).
    #[must_use]
    pub fn tokens(&self) -> f64 {
        milli_to_tokens(self.window_counts().map_or_else(
            || self.tokens.load(Ordering::Relaxed),
            |(first, retries)| (first * self.ratio).saturating_sub(retries * MILLI),
        ))
    }

    /// The size of the budget; for a [`ratio`](Self::ratio) budget, its
    /// share of the window's first attempts.
    #[must_use]
    pub fn max_tokens(&self) -> f64 {
        let first = self.window_counts().map(|(first, _)| first);
        milli_to_tokens(first.map_or(self.max, |first| first * self.ratio))
    }

    /// The tokens each success gives back, as kept: to three decimals; for
    /// a [`ratio`](Self::ratio) budget, its ratio.
    ///
    /// ```
    /// use retry_runtime::RetryBudget;
    ///
    /// let budget = RetryBudget::new(10, 0.1);
    /// assert_eq!((budget.max_tokens(), budget.token_ratio()), (10.0, 0.1));
    /// ```
    #[must_use]
    pub fn token_ratio(&self) -> f64 {
        milli_to_tokens(self.ratio)
    }

    /// Whether a retry would be allowed after one more failure now.
    #[must_use]
    pub fn allows_retry(&self) -> bool {
        match self.window_counts() {
            Some((first, retries)) => (retries + 1) * MILLI <= first * self.ratio,
            None => self.tokens.load(Ordering::Relaxed).saturating_sub(MILLI) > self.max / 2,
        }
    }

    /// Records an attempt that failed with an error `on` accepts: takes one
    /// token and says whether a retry is allowed. A [`ratio`](Self::ratio)
    /// budget takes nothing for a failure, only for the retry made.
    pub fn record_failure(&self) -> bool {
        if self.is_ratio() {
            return self.allows_retry();
        }
        let before = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                Some(tokens.saturating_sub(MILLI))
            })
            .unwrap_or_else(|tokens| tokens);
        before.saturating_sub(MILLI) > self.max / 2
    }

    /// Whether the count is above `max_tokens / 2`: under gRFC A6, a
    /// hedge is sent only then, and takes no token.
    pub(crate) fn above_half(&self) -> bool {
        self.tokens.load(Ordering::Acquire) > self.max / 2
    }

    /// Takes a token for a hedge, only if a retry is allowed after taking
    /// it: one compare-and-swap, so that a hedge never takes a token
    /// without being allowed (as asking `allows_retry` and then
    /// `record_failure` could, when another failure came between them).
    pub(crate) fn try_take(&self) -> bool {
        if self.is_ratio() {
            let allowed = self.allows_retry();
            if allowed {
                RetryBudget::retrying(Some(self));
            }
            return allowed;
        }
        let half = self.max / 2;
        self.tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                let after = tokens.saturating_sub(MILLI);
                (after > half).then_some(after)
            })
            .is_ok()
    }

    /// Gives back the token a hedge took when the hedge could not be sent
    /// after all (no copy of the request could be made, or the breaker
    /// refused it), up to `max_tokens`. A [`ratio`](Self::ratio) budget
    /// keeps it counted as a retry.
    pub(crate) fn refund(&self) {
        self.give(MILLI);
    }

    /// A call starts: a [`ratio`](Self::ratio) `budget`, if any, counts its
    /// first attempt, reading the clock only when the bucket rolls over (and
    /// every 16th call).
    #[inline]
    pub(crate) fn first_attempt(budget: Option<&Self>) {
        if let Some(b) = budget.filter(|b| b.is_ratio() && !b.window.count_latest()) {
            let _ = b.window.add(b.now_ms(), 1, 0);
        }
    }

    /// A retry is made: a [`ratio`](Self::ratio) `budget`, if any, counts
    /// it (gRPC's rule took its token at the failure).
    pub(crate) fn retrying(budget: Option<&Self>) {
        if let Some(b) = budget.filter(|b| b.is_ratio()) {
            let _ = b.window.add(b.now_ms(), 0, 1);
        }
    }

    /// An attempt judged `verdict` is not retried: a transient failure of a
    /// request that must not be repeated (`Unrepeatable`) still takes its
    /// token from `budget`, if any, as any retryable failure does (gRFC A6).
    /// What the retry loop and the hedged call both do.
    pub(crate) fn not_retried(budget: Option<&Self>, verdict: Classification) {
        if let (Classification::Unrepeatable, Some(budget)) = (verdict, budget) {
            let _ = budget.record_failure();
        }
    }

    /// A ratio budget's first attempts and retries in the window now;
    /// `None` for gRPC's rule.
    fn window_counts(&self) -> Option<(u64, u64)> {
        self.is_ratio().then(|| self.window.counts(self.now_ms()))
    }

    /// A [`ratio`](Self::ratio) budget, rather than gRPC's rule.
    fn is_ratio(&self) -> bool {
        self.window.bucket_ms != 0
    }

    fn now_ms(&self) -> u64 {
        self.epoch.ms(Clock::Async)
    }

    /// Records a success: gives back `token_ratio`, up to `max_tokens`
    /// (nothing, for a [`ratio`](Self::ratio) budget).
    pub fn record_success(&self) {
        if self.ratio != 0 && !self.is_ratio() {
            self.give(self.ratio);
        }
    }

    /// Gives back `milli` thousandths of a token, up to `max_tokens`.
    fn give(&self, milli: u64) {
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                (tokens < self.max).then(|| tokens.saturating_add(milli).min(self.max))
            });
    }
}

/// Thousandths from `value`, rounded: a ratio, a budget's or a breaker's,
/// kept to three decimals.
pub(crate) const fn milli(value: f32) -> u64 {
    // Float-to-integer `as` saturates: negative and NaN become 0.
    (value as f64 * MILLI as f64 + 0.5) as u64
}

#[allow(clippy::cast_precision_loss)] // Exact for any count below 2^53 thousandths.
fn milli_to_tokens(milli: u64) -> f64 {
    milli as f64 / MILLI as f64
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("tokens", &self.tokens())
            .field("max_tokens", &self.max_tokens())
            .field("token_ratio", &milli_to_tokens(self.ratio))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
