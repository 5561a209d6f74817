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
    let threads = threads();
    let mut total = threads.ended;
    for counts in &threads.alive {
        for (total, count) in total.iter_mut().zip(&counts.0) {
            *total = total.wrapping_add(count.load(Ordering::Relaxed));
        }
    }
    drop(threads);
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

/// The name of the facade counter of retries started.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub const RETRIES_TOTAL: &str = "retry_retries_total";

/// The name of the facade counter of calls that ended, by reason.
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub const CALLS_TOTAL: &str = "retry_calls_total";

#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::circuit::{CIRCUIT_STATE, CIRCUIT_TRANSITIONS_TOTAL};

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
    count(RETRIES);
    #[cfg(feature = "metrics")]
    ::metrics::counter!(RETRIES_TOTAL, "function" => function).increment(1);
}

#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_stop(stop: Stop, function: &'static str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(CALLS_TOTAL, "function" => function, "reason" => stop.as_str())
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
