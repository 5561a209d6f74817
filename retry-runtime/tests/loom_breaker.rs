//! A model of `CircuitBreaker` under loom: every interleaving of a few
//! callers asking for permits, recording successes and failures or dropping
//! their permits unrecorded, while the open period ends. Checked throughout:
//! never more than `probes` permits out while half-open. Checked at the end,
//! every permit gone: a half-open circuit has no place taken (so a caller can
//! still take one and leave half-open), and after the longest open period a
//! caller is let through whatever state it ended in. And the closed
//! circuit's window: a success racing a failure that rolls it on never erases
//! the failure.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p retry-runtime --test loom_breaker`
//! (`.ci/run` runs it in a target directory of its own).
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use retry_runtime::{CircuitBreaker, CircuitState};

const PROBES: u64 = 2;
const CLOSE_AFTER: u32 = 3;

#[derive(Clone, Copy, Debug)]
enum Caller {
    /// Asks for a permit and records a success.
    Succeeds,
    /// Asks for a permit and records a failure.
    Fails,
    /// Asks for a permit and drops it unrecorded (a cancelled call).
    Cancelled,
    /// Ends the open period, then asks and records a success.
    EndsThePeriod,
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(1)
        .with_open_for(Duration::from_millis(10))
        .with_max_open_for(Duration::from_millis(40))
        .with_jitter(0.0)
        .with_probes(PROBES as u32)
        // More successes than the callers make: the model stays among the
        // open and half-open states, where the races are (the closed
        // circuit's window is a counter that only ever opens it).
        .with_close_after(CLOSE_AFTER)
}

/// No more than `PROBES` places taken while half-open.
fn check_probes(breaker: &CircuitBreaker) {
    let (_, out) = breaker.probes_out();
    assert!(out <= PROBES, "{out} probes out");
}

fn call(breaker: &CircuitBreaker, caller: Caller) {
    if let Caller::EndsThePeriod = caller {
        breaker.advance(10);
    }
    let Ok(permit) = breaker.acquire() else {
        return;
    };
    check_probes(breaker);
    match caller {
        Caller::Succeeds | Caller::EndsThePeriod => permit.record(true),
        Caller::Fails => permit.record(false),
        Caller::Cancelled => drop(permit),
    }
}

/// Runs `callers` on threads of their own against a circuit that has just
/// opened, with at most `preemptions` preemptions.
fn check(preemptions: Option<usize>, callers: &'static [&'static [Caller]]) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = preemptions;
    model.check(move || {
        let breaker = Arc::new(breaker());
        breaker.acquire().expect("closed at first").record(false);
        assert_eq!(breaker.state(), CircuitState::Open);
        let handles: Vec<_> = callers
            .iter()
            .map(|calls| {
                let breaker = Arc::clone(&breaker);
                thread::spawn(move || {
                    for &caller in *calls {
                        call(&breaker, caller);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        // Every permit is gone: no place may still be taken.
        if breaker.state() == CircuitState::HalfOpen {
            assert_eq!(breaker.probes_out().1, 0, "a place leaked");
        }
        // And there is a way out: after the longest open period a call goes
        // through, and successes close the circuit.
        breaker.advance(40);
        for _ in 0..CLOSE_AFTER {
            breaker
                .acquire()
                .expect("a call goes through once the open period is over")
                .record(true);
        }
        assert_eq!(breaker.state(), CircuitState::Closed);
    });
}

#[test]
fn probes_racing_the_end_of_the_open_period_never_exceed_the_limit() {
    check(
        Some(2),
        &[
            &[Caller::EndsThePeriod],
            &[Caller::Fails],
            &[Caller::Succeeds],
        ],
    );
}

#[test]
fn cancelled_probes_free_their_places() {
    check(
        Some(2),
        &[
            &[Caller::EndsThePeriod],
            &[Caller::Cancelled],
            &[Caller::Succeeds],
        ],
    );
}

#[test]
fn a_failed_probe_reopening_races_a_late_probe_of_its_round() {
    check(
        Some(2),
        &[&[Caller::EndsThePeriod, Caller::Fails], &[Caller::Succeeds]],
    );
}

/// The closed circuit's window: a success races a failure that reads the
/// clock a full turn of the ring later (the same slot, a new bucket). The
/// success counts without the clock in the bucket of the latest reading, or,
/// when `emptied` (the window reset, so the success must read the clock),
/// at a time it read before or after the failure's. The failure is always
/// counted, and the success at most once.
fn success_racing_a_rolling_failure(emptied: bool) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        // Buckets of 1 ms; never opens, so the window is all there is to see.
        let breaker = Arc::new(
            CircuitBreaker::new()
                .with_window(Duration::from_millis(10))
                .with_min_calls(1000)
                .with_consecutive_failures(0),
        );
        // The first success reads the clock: successes now count in bucket 0.
        breaker.acquire().expect("closed").record(true);
        if emptied {
            breaker.reset();
        }
        let succeeds = {
            let breaker = Arc::clone(&breaker);
            thread::spawn(move || breaker.acquire().expect("closed").record(true))
        };
        let fails = {
            let breaker = Arc::clone(&breaker);
            thread::spawn(move || {
                breaker.advance(10);
                breaker.acquire().expect("closed").record(false);
            })
        };
        succeeds.join().unwrap();
        fails.join().unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed);
        // The window ending at 10 ms: the failure, and the racing success
        // if it counted in bucket 10 rather than in bucket 0.
        let (calls, failures) = breaker.window_counts();
        assert_eq!(failures, 1, "the failure was lost");
        assert!(calls == 1 || calls == 2, "{calls} calls");
    });
}

#[test]
fn a_success_counted_without_the_clock_never_erases_a_failure_rolling_the_window() {
    success_racing_a_rolling_failure(false);
}

#[test]
fn a_success_read_before_a_failure_rolling_the_window_never_erases_it() {
    success_racing_a_rolling_failure(true);
}
