//! Calls, retries and circuit transitions counted through the `metrics`
//! facade, read back with metrics-util's debugging recorder installed on
//! this thread (a `current_thread` test runs its calls there): totals by
//! stop reason, as a test compares them before and after its calls.

#![allow(dead_code)]

use std::cell::Cell;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Totals since [`Counting::on_this_thread`], over every function and
/// breaker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub retries: u64,
    pub exhausted: u64,
    pub not_retryable: u64,
    pub deadline: u64,
    pub budget: u64,
    pub hint_too_long: u64,
    pub nested: u64,
    pub open: u64,
    pub circuit_opened: u64,
    pub circuit_half_opened: u64,
    pub circuit_closed: u64,
}

/// The debugging recorder, this thread's until dropped.
pub struct Counting {
    snapshotter: Snapshotter,
    total: Cell<Counts>,
    _installed: metrics::LocalRecorderGuard<'static>,
}

impl Counting {
    /// Counts what calls on this thread record from now on.
    pub fn on_this_thread() -> Counting {
        let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
        Counting {
            snapshotter: recorder.snapshotter(),
            total: Cell::new(Counts::default()),
            _installed: metrics::set_default_local_recorder(recorder),
        }
    }

    /// The totals now.
    pub fn now(&self) -> Counts {
        let mut total = self.total.get();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let DebugValue::Counter(count) = value else {
                continue;
            };
            let label = |name: &str| {
                key.key()
                    .labels()
                    .find(|label| label.key() == name)
                    .map(|label| label.value().to_owned())
            };
            let counter = match key.key().name() {
                "retry_runtime_retries_total" => &mut total.retries,
                "retry_runtime_calls_total" => match label("reason").as_deref() {
                    Some("exhausted") => &mut total.exhausted,
                    Some("not_retryable") => &mut total.not_retryable,
                    Some("deadline") => &mut total.deadline,
                    Some("budget") => &mut total.budget,
                    Some("hint_too_long") => &mut total.hint_too_long,
                    Some("nested") => &mut total.nested,
                    Some("open") => &mut total.open,
                    _ => continue,
                },
                "retry_runtime_circuit_transitions_total" => match label("to").as_deref() {
                    Some("open") => &mut total.circuit_opened,
                    Some("half_open") => &mut total.circuit_half_opened,
                    Some("closed") => &mut total.circuit_closed,
                    _ => continue,
                },
                _ => continue,
            };
            *counter += count;
        }
        self.total.set(total);
        total
    }
}
