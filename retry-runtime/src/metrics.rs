//! Process-wide counters of retries and of calls that gave up, for a metrics
//! exporter to read. Updated only on the retry and give-up paths: a call that
//! succeeds at once touches none of them.
//!
//! ```
//! let before = retry_runtime::metrics::snapshot();
//! // ... calls ...
//! let now = retry_runtime::metrics::snapshot();
//! let retries = now.retries - before.retries;
//! # assert_eq!(retries, 0);
//! ```

use core::sync::atomic::{AtomicU64, Ordering};

use crate::Stop;

static RETRIES: AtomicU64 = AtomicU64::new(0);
static EXHAUSTED: AtomicU64 = AtomicU64::new(0);
static NOT_RETRYABLE: AtomicU64 = AtomicU64::new(0);
static DEADLINE: AtomicU64 = AtomicU64::new(0);
static BUDGET: AtomicU64 = AtomicU64::new(0);
static HINT_TOO_LONG: AtomicU64 = AtomicU64::new(0);
static NESTED: AtomicU64 = AtomicU64::new(0);

/// Totals since the process started, over every retried function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// Retries started (waits begun).
    pub retries: u64,
    /// Calls that failed after their last attempt.
    pub exhausted: u64,
    /// Calls that failed with an error `on` rejects.
    pub not_retryable: u64,
    /// Calls that stopped because the next wait would pass the deadline.
    pub deadline: u64,
    /// Calls that stopped because the retry budget was spent.
    pub budget: u64,
    /// Calls that stopped because the server asked for a wait above `cap`.
    pub hint_too_long: u64,
    /// Calls that returned at once because a retried function their failed
    /// attempt called had already retried and given up.
    pub nested: u64,
}

/// The counters now.
#[must_use]
pub fn snapshot() -> Counters {
    Counters {
        retries: RETRIES.load(Ordering::Relaxed),
        exhausted: EXHAUSTED.load(Ordering::Relaxed),
        not_retryable: NOT_RETRYABLE.load(Ordering::Relaxed),
        deadline: DEADLINE.load(Ordering::Relaxed),
        budget: BUDGET.load(Ordering::Relaxed),
        hint_too_long: HINT_TOO_LONG.load(Ordering::Relaxed),
        nested: NESTED.load(Ordering::Relaxed),
    }
}

pub(crate) fn record_retry() {
    RETRIES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_stop(stop: Stop) {
    let counter = match stop {
        Stop::Done => return,
        Stop::Exhausted => &EXHAUSTED,
        Stop::NotRetryable => &NOT_RETRYABLE,
        Stop::Deadline => &DEADLINE,
        Stop::Budget => &BUDGET,
        Stop::HintTooLong => &HINT_TOO_LONG,
        Stop::Nested => &NESTED,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}
