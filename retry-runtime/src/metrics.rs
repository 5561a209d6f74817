//! Process-wide counters of retries and of calls that gave up, for a metrics
//! exporter to read. Updated only on the retry and give-up paths: a call that
//! succeeds at once touches none of them.
//!
//! With the `metrics` feature, the same events also go to the
//! [`metrics`](https://docs.rs/metrics) facade, labelled by function (the
//! retried function's name, or the name given to a tower layer or
//! middleware) and by stop reason ([`Stop::as_str`](crate::Stop::as_str)):
//!
//! | counter | labels | counts |
//! |---|---|---|
//! | `retry_retries_total` | `function` | retries started (waits begun) |
//! | `retry_calls_total` | `function`, `reason` | calls that ended, by why: `done` (a success), `exhausted`, `not_retryable`, `deadline`, `budget`, `hint_too_long`, `nested` |
//!
//! With the `metrics` feature, call `describe` once after installing a recorder to give exporters the
//! counters' descriptions.
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
static OPEN: AtomicU64 = AtomicU64::new(0);
static CIRCUIT_OPENED: AtomicU64 = AtomicU64::new(0);
static CIRCUIT_HALF_OPENED: AtomicU64 = AtomicU64::new(0);
static CIRCUIT_CLOSED: AtomicU64 = AtomicU64::new(0);

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
    /// Calls refused by an open circuit breaker, and failed attempts not
    /// retried because the breaker had opened.
    pub open: u64,
    /// Times a circuit breaker opened (from closed, or again after a failed
    /// probe).
    pub circuit_opened: u64,
    /// Times a circuit breaker's open period ended and it let probes through.
    pub circuit_half_opened: u64,
    /// Times a circuit breaker closed after its probes succeeded.
    pub circuit_closed: u64,
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
        open: OPEN.load(Ordering::Relaxed),
        circuit_opened: CIRCUIT_OPENED.load(Ordering::Relaxed),
        circuit_half_opened: CIRCUIT_HALF_OPENED.load(Ordering::Relaxed),
        circuit_closed: CIRCUIT_CLOSED.load(Ordering::Relaxed),
    }
}

/// The name of the facade counter of retries started.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub const RETRIES_TOTAL: &str = "retry_retries_total";

/// The name of the facade counter of calls that ended, by reason.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub const CALLS_TOTAL: &str = "retry_calls_total";

/// Describes the facade counters to the installed recorder.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe() {
    ::metrics::describe_counter!(
        RETRIES_TOTAL,
        ::metrics::Unit::Count,
        "Retries started (waits begun), by function."
    );
    ::metrics::describe_counter!(
        CALLS_TOTAL,
        ::metrics::Unit::Count,
        "Retried calls that ended, by function and reason."
    );
}

#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_retry(function: &'static str) {
    RETRIES.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "metrics")]
    ::metrics::counter!(RETRIES_TOTAL, "function" => function).increment(1);
}

#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_stop(stop: Stop, function: &'static str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(CALLS_TOTAL, "function" => function, "reason" => stop.as_str())
        .increment(1);
    let counter = match stop {
        Stop::Done => return,
        Stop::Exhausted => &EXHAUSTED,
        Stop::NotRetryable => &NOT_RETRYABLE,
        Stop::Deadline => &DEADLINE,
        Stop::Budget => &BUDGET,
        Stop::HintTooLong => &HINT_TOO_LONG,
        Stop::Nested => &NESTED,
        Stop::Open => &OPEN,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_circuit(transition: crate::breaker::Transition) {
    use crate::breaker::Transition;
    let counter = match transition {
        Transition::Opened => &CIRCUIT_OPENED,
        Transition::HalfOpened => &CIRCUIT_HALF_OPENED,
        Transition::Closed => &CIRCUIT_CLOSED,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}
