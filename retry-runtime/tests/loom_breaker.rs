//! A model of `CircuitBreaker` under loom: every interleaving of a few
//! callers asking for permits, recording successes and failures or dropping
//! their permits unrecorded, while the open period ends. Checked throughout:
//! never more than `probes` permits out while half-open. Checked at the end,
//! every permit gone: a half-open circuit has no place taken (so a caller can
//! still take one and leave half-open), and after the longest open period a
//! caller is let through whatever state it ended in.
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
