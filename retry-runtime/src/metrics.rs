//! Process-wide counters of retries and of calls that gave up, for a metrics
//! exporter to read, and (feature `metrics`) the same events through the
//! [`metrics`](https://docs.rs/metrics) facade. The process-wide counters
//! move only on the retry and give-up paths: a call that succeeds at once
//! touches none of them.
//!
//! # Through the facade
//!
//! Named in Prometheus style with the prefix `retry_runtime_`, so that
//! nothing collides with other retry crates' metrics (tower-resilience's
//! `retry_calls_total`). `function` is the retried function's path
//! (`my_crate::fetch_user`), the name given to a tower layer
//! (`RetryLayer::named`), middleware or closure loop (`Retry::named`), or
//! `closure` for a loop of the closure API not named; `breaker` is the
//! breaker's name:
//! the one given with `CircuitBreaker::with_name` or `with_owned_name`, the
//! key of a breaker a `Registry` made (the host, for `per_authority`), or
//! `circuit`. The breaker metrics have one series per name, so give each
//! breaker its own.
//!
//! | metric | kind | labels | counts |
//! |---|---|---|---|
//! | `retry_runtime_calls_total` | counter | `function`, `outcome`, `reason` | calls that ended: `outcome` is `success` or `failure`; `reason` is why the call stopped, one of `none` (a success), `not_retryable`, `exhausted`, `deadline`, `budget`, `hint_too_long` (the server asked for a wait above `cap`), `open` (the circuit breaker is open) or `nested` (an inner retried function already gave up) |
//! | `retry_runtime_retries_total` | counter | `function` | retries made: attempts after the first |
//! | `retry_runtime_wait_seconds` | histogram | `function` | each wait before a retry, in seconds |
//! | `retry_runtime_circuit_transitions_total` | counter | `breaker`, `from`, `to` | circuit breaker state changes; states `closed`, `half_open`, `open` |
//! | `retry_runtime_circuit_state` | gauge | `breaker` | the breaker's state: 0 closed, 1 half-open, 2 open |
//!
//! A retried `Ok` value returned when no retry is left (an HTTP 503 after
//! `max` attempts) counts as `outcome="failure"`, with its reason.
//!
//! `retry_retries_total`, the counter's name on `main` before the metric
//! names took the `retry_runtime_` prefix, is still emitted alongside
//! `retry_runtime_retries_total`, until 0.2.
//! `retry_calls_total{reason="done"}` is gone without an alias: its name is
//! the one that collided, and emitting both would double the facade's work
//! on the success path. Count `retry_runtime_calls_total` instead.
//!
//! Call [`describe`] once after installing a recorder to give exporters
//! the metrics' descriptions and units.
//!
//! # In process
//!
//! ```
//! let before = retry_runtime::metrics::snapshot();
//! // ... calls ...
//! let now = retry_runtime::metrics::snapshot();
//! let retries = now.retries - before.retries;
//! # assert_eq!(retries, 0);
//! ```
//!
// The facade's items exist with the feature only: linked here when it is on,
// on docs.rs otherwise, so that no build shows an unresolved link.
#![cfg_attr(feature = "metrics", doc = "[`describe`]: describe")]
#![cfg_attr(
    not(feature = "metrics"),
    doc = "[`describe`]: https://docs.rs/retry-runtime/latest/retry_runtime/metrics/fn.describe.html"
)]

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::sync::{Arc, Mutex, PoisonError};

use crate::Stop;

// The counts of retries and stops, by position: a thread's own, and those
// of threads that have ended.
const RETRIES: usize = 0;
const EXHAUSTED: usize = 1;
const NOT_RETRYABLE: usize = 2;
const DEADLINE: usize = 3;
const BUDGET: usize = 4;
const HINT_TOO_LONG: usize = 5;
const NESTED: usize = 6;
const OPEN: usize = 7;
const COUNTS: usize = 8;

/// One thread's counts. Only its thread writes them, with a load and a
/// store rather than a locked read-modify-write: a shared atomic counter
/// cost a call that fails with an error that is not retried some 10 ns,
/// a fifth of the call. `snapshot` reads every thread's.
struct Counts([AtomicU64; COUNTS]);

/// The counts of the threads alive, and those left by threads that ended,
/// behind one lock so that a snapshot never counts a thread twice.
struct Threads {
    alive: Vec<Arc<Counts>>,
    ended: [u64; COUNTS],
}

static THREADS: Mutex<Threads> = Mutex::new(Threads {
    alive: Vec::new(),
    ended: [0; COUNTS],
});

fn threads() -> std::sync::MutexGuard<'static, Threads> {
    // The counts stay meaningful whatever panicked while the lock was held.
    THREADS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This thread's counts, registered on first use and folded into the
/// `ended` totals when the thread ends.
struct Registered(Arc<Counts>);

impl Registered {
    fn new() -> Self {
        let counts = Arc::new(Counts([const { AtomicU64::new(0) }; COUNTS]));
        threads().alive.push(Arc::clone(&counts));
        Registered(counts)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut threads = threads();
        for (ended, count) in threads.ended.iter_mut().zip(&self.0 .0) {
            *ended = ended.wrapping_add(count.load(Ordering::Relaxed));
        }
        threads.alive.retain(|counts| !Arc::ptr_eq(counts, &self.0));
    }
}

thread_local! {
    static MINE: Registered = Registered::new();
}

/// Counts one event of kind `index` on this thread.
fn count(index: usize) {
    let counted = MINE.try_with(|mine| {
        let count = &mine.0 .0[index];
        count.store(
            count.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    });
    if counted.is_err() {
        // The thread is ending (another thread-local's destructor retried a
        // call): straight into the totals of ended threads.
        let mut threads = threads();
        threads.ended[index] = threads.ended[index].wrapping_add(1);
    }
}

/// Totals since the process started, over every retried function: what
/// [`snapshot`] reads.
///
/// ```
/// use retry_runtime::metrics::{snapshot, Counters};
///
/// fn gave_up(counters: &Counters) -> u64 {
///     counters.exhausted + counters.deadline + counters.budget + counters.open
/// }
/// let before = snapshot();
/// // ... calls ...
/// assert_eq!(gave_up(&snapshot()), gave_up(&before));
/// ```
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
    let threads = threads();
    let mut total = threads.ended;
    for counts in &threads.alive {
        for (total, count) in total.iter_mut().zip(&counts.0) {
            *total = total.wrapping_add(count.load(Ordering::Relaxed));
        }
    }
    drop(threads);
    // Counted where a breaker reports its transitions, below this module.
    let (circuit_opened, circuit_half_opened, circuit_closed) = crate::circuit::counts();
    Counters {
        retries: total[RETRIES],
        exhausted: total[EXHAUSTED],
        not_retryable: total[NOT_RETRYABLE],
        deadline: total[DEADLINE],
        budget: total[BUDGET],
        hint_too_long: total[HINT_TOO_LONG],
        nested: total[NESTED],
        open: total[OPEN],
        circuit_opened,
        circuit_half_opened,
        circuit_closed,
    }
}

/// The facade counter of calls that ended, labelled `function`, `outcome`
/// (`success` or `failure`) and `reason` (see [the module](self)).
#[cfg(feature = "metrics")]
pub(crate) const CALLS_TOTAL: &str = "retry_runtime_calls_total";

/// The facade counter of retries made (attempts after the first),
/// labelled `function`.
#[cfg(feature = "metrics")]
pub(crate) const RETRIES_TOTAL: &str = "retry_runtime_retries_total";

/// The facade histogram of the waits before retries, in seconds, labelled
/// `function`.
#[cfg(feature = "metrics")]
pub(crate) const WAIT_SECONDS: &str = "retry_runtime_wait_seconds";

// The breaker's names live with the one place its transitions are
// reported (below the breaker and this module, so neither imports the
// other).
#[cfg(feature = "metrics")]
pub(crate) use crate::circuit::{CIRCUIT_STATE, CIRCUIT_TRANSITIONS_TOTAL};

/// The name `RETRIES_TOTAL` had before it took the `retry_runtime_`
/// prefix, still emitted alongside it (same label, same counts) until 0.2,
/// so that dashboards can move over. Costs one more counter on the retry path only.
#[cfg(feature = "metrics")]
pub(crate) const RETRIES_TOTAL_BEFORE_0_2: &str = "retry_retries_total";

/// Describes the facade's metrics to the installed recorder.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe() {
    ::metrics::describe_counter!(
        CALLS_TOTAL,
        ::metrics::Unit::Count,
        "Retried calls that ended, by function, outcome and stop reason."
    );
    ::metrics::describe_counter!(
        RETRIES_TOTAL,
        ::metrics::Unit::Count,
        "Retries made (attempts after the first), by function."
    );
    ::metrics::describe_histogram!(
        WAIT_SECONDS,
        ::metrics::Unit::Seconds,
        "Waits before retries, by function."
    );
    ::metrics::describe_counter!(
        CIRCUIT_TRANSITIONS_TOTAL,
        ::metrics::Unit::Count,
        "Circuit breaker state changes, by breaker, from and to."
    );
    ::metrics::describe_gauge!(
        CIRCUIT_STATE,
        "Circuit breaker state, by breaker: 0 closed, 1 half-open, 2 open."
    );
    ::metrics::describe_counter!(
        RETRIES_TOTAL_BEFORE_0_2,
        ::metrics::Unit::Count,
        "Deprecated: use retry_runtime_retries_total. Removed in 0.2."
    );
}

/// The `reason` label of a call that stopped for `stop`: `none` for a
/// success, otherwise [`Stop::as_str`] (as `tracing` and
/// [`snapshot`](crate::metrics::snapshot) spell it).
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const fn reason_label(stop: Stop) -> &'static str {
    match stop {
        Stop::Done => "none",
        other => other.as_str(),
    }
}

/// The `outcome` label of a call that stopped for `stop`: `success` only
/// for [`Stop::Done`]. A retried `Ok` value returned when no retry is left
/// (an HTTP 503 after `max` attempts) is a `failure`.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) const fn outcome_label(stop: Stop) -> &'static str {
    match stop {
        Stop::Done => "success",
        _ => "failure",
    }
}

/// A retry is made after `wait`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_retry(function: &'static str, wait: Duration) {
    count(RETRIES);
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!(RETRIES_TOTAL, "function" => function).increment(1);
        ::metrics::counter!(RETRIES_TOTAL_BEFORE_0_2, "function" => function).increment(1);
        ::metrics::histogram!(WAIT_SECONDS, "function" => function).record(wait.as_secs_f64());
    }
}

/// A call ended for `stop` ([`Stop::Done`]: a success).
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_stop(stop: Stop, function: &'static str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(
        CALLS_TOTAL,
        "function" => function,
        "outcome" => outcome_label(stop),
        "reason" => reason_label(stop),
    )
    .increment(1);
    count(match stop {
        Stop::Done => return,
        Stop::Exhausted => EXHAUSTED,
        Stop::NotRetryable => NOT_RETRYABLE,
        Stop::Deadline => DEADLINE,
        Stop::Budget => BUDGET,
        Stop::HintTooLong => HINT_TOO_LONG,
        Stop::Nested => NESTED,
        Stop::Open => OPEN,
    });
}

#[cfg(test)]
mod tests {
    use super::{record_stop, snapshot};
    use crate::Stop;

    #[test]
    fn counts_of_threads_alive_and_ended_are_all_in_the_snapshot() {
        let before = snapshot().hint_too_long;
        let (counted, ended) = std::sync::mpsc::channel();
        let alive = std::thread::spawn(move || {
            for _ in 0..1000 {
                record_stop(Stop::HintTooLong, "alive");
            }
            counted.send(()).unwrap();
            std::thread::park();
        });
        ended.recv().unwrap();
        assert!(snapshot().hint_too_long - before >= 1000);
        std::thread::spawn(|| {
            for _ in 0..1000 {
                record_stop(Stop::HintTooLong, "ended");
            }
        })
        .join()
        .unwrap();
        assert!(snapshot().hint_too_long - before >= 2000);
        alive.thread().unpark();
        alive.join().unwrap();
        assert!(snapshot().hint_too_long - before >= 2000);
    }
}
