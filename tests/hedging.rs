//! Hedged attempts (DESIGN §4.15) through the closure API, on a paused
//! clock: who starts when, who wins, what is dropped, the shared key, the
//! deadline, the budget, the breaker and the adaptive delay. The attribute's
//! `hedge` key runs the same runtime; `hedge_key.rs` covers it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use retry_runtime::hedge::{Hedge, Latencies};
use retry_runtime::{current_attempt, CircuitBreaker, CircuitOpen, Policy, RetryBudget, TimedOut};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Error {
    /// Retryable, from attempt `n`.
    Busy(u32),
    /// Not retryable, from attempt `n`.
    Invalid(u32),
    TimedOut,
    Open,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

fn retryable(error: &Error) -> bool {
    matches!(error, Error::Busy(_) | Error::TimedOut)
}

/// What each attempt does: how long it runs, then what it returns.
type Script = fn(u32) -> (u64, Result<u32, Error>);

/// What a call's attempts did: when each started (ms after the call), which
/// finished, and how many were dropped before finishing.
#[derive(Default)]
struct Log {
    started: Mutex<Vec<(u32, u64)>>,
    finished: Mutex<Vec<u32>>,
    dropped: AtomicU32,
}

/// Counts an attempt dropped before it finished: cancelled.
struct DropGuard<'a> {
    log: &'a Log,
    finished: bool,
}

impl Drop for DropGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.log.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn attempt(log: &Log, origin: Instant, script: Script) -> Result<u32, Error> {
    let context = current_attempt().expect("inside a hedged call");
    let number = context.attempt();
    let millis = u64::try_from(origin.elapsed().as_millis()).unwrap();
    log.started.lock().unwrap().push((number, millis));
    let mut guard = DropGuard {
        log,
        finished: false,
    };
    let (took, outcome) = script(number);
    sleep(Duration::from_millis(took)).await;
    // The context is still this attempt's after a wait.
    assert_eq!(current_attempt().unwrap().attempt(), number);
    guard.finished = true;
    log.finished.lock().unwrap().push(number);
    outcome
}

const HEDGE: Hedge = Hedge::after(Duration::from_millis(50));

async fn call(policy: &Policy<TimedOut>, log: &Log, script: Script) -> (Result<u32, Error>, u64) {
    let origin = Instant::now();
    let outcome = policy
        .on(retryable)
        .hedge(HEDGE)
        .run(|| attempt(log, origin, script))
        .await;
    (
        outcome,
        u64::try_from(origin.elapsed().as_millis()).unwrap(),
    )
}

/// Of the form that may cut attempts off, with no timeout unless a test
/// sets one.
fn policy(max: u32) -> Policy<TimedOut> {
    Policy::new()
        .with_max_attempts(max)
        .with_base(Duration::from_millis(100))
        .into()
}

fn started(log: &Log) -> Vec<(u32, u64)> {
    log.started.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_hedge_starts_each_time_the_newest_has_run_for_the_delay() {
    let log = Log::default();
    let (outcome, took) = call(&policy(3), &log, |n| (1000, Ok(n))).await;
    assert_eq!(started(&log), [(1, 0), (2, 50), (3, 100)]);
    // Attempt 1 answers first (at 1000 ms); 2 and 3 are dropped.
    assert_eq!(outcome, Ok(1));
    assert_eq!(took, 1000);
    assert_eq!(*log.finished.lock().unwrap(), [1]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn the_first_answer_wins_and_the_slower_attempts_are_dropped() {
    let log = Log::default();
    let (outcome, took) = call(&policy(3), &log, |n| match n {
        1 => (1000, Ok(1)),
        _ => (20, Ok(n)),
    })
    .await;
    assert_eq!(outcome, Ok(2));
    assert_eq!(took, 70);
    // Attempt 3 never started: attempt 2 answered before its delay.
    assert_eq!(started(&log), [(1, 0), (2, 50)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn an_answer_before_the_delay_starts_nothing_else() {
    let log = Log::default();
    let (outcome, took) = call(&policy(3), &log, |n| (10, Ok(n))).await;
    assert_eq!((outcome, took), (Ok(1), 10));
    assert_eq!(started(&log), [(1, 0)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_starts_the_next_attempt_at_once() {
    let log = Log::default();
    let (outcome, _) = call(&policy(3), &log, |n| match n {
        1 => (10, Err(Error::Busy(1))),
        _ => (10, Ok(n)),
    })
    .await;
    assert_eq!(outcome, Ok(2));
    assert_eq!(started(&log), [(1, 0), (2, 10)]);
}

#[tokio::test(start_paused = true)]
async fn after_a_failure_the_hedge_delay_runs_from_the_new_attempt() {
    let log = Log::default();
    let (outcome, _) = call(&policy(3), &log, |n| match n {
        1 => (10, Err(Error::Busy(1))),
        2 => (1000, Ok(2)),
        _ => (10, Ok(n)),
    })
    .await;
    assert_eq!(outcome, Ok(3));
    assert_eq!(started(&log), [(1, 0), (2, 10), (3, 60)]);
}

#[tokio::test(start_paused = true)]
async fn a_server_hint_is_waited_before_the_next_attempt() {
    let log = Log::default();
    let origin = Instant::now();
    let outcome = policy(2)
        .on(retryable)
        .retry_after(|error: &Error| {
            (*error == Error::Busy(1)).then_some(Duration::from_millis(30))
        })
        .hedge(HEDGE)
        .run(|| {
            attempt(&log, origin, |n| match n {
                1 => (10, Err(Error::Busy(1))),
                _ => (10, Ok(n)),
            })
        })
        .await;
    assert_eq!(outcome, Ok(2));
    let second = started(&log)[1];
    // The hint, plus up to a tenth of it so that clients told the same do
    // not return together; the hedge's 50 ms do not apply.
    assert!(second.0 == 2 && (40..=44).contains(&second.1), "{second:?}");
}

#[tokio::test(start_paused = true)]
async fn an_error_on_rejects_ends_the_call_and_drops_the_rest() {
    let log = Log::default();
    let (outcome, took) = call(&policy(3), &log, |n| match n {
        2 => (10, Err(Error::Invalid(2))),
        _ => (1000, Ok(n)),
    })
    .await;
    assert_eq!((outcome, took), (Err(Error::Invalid(2)), 60));
    assert_eq!(started(&log), [(1, 0), (2, 50)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn when_every_attempt_fails_the_last_failure_to_arrive_is_returned() {
    let log = Log::default();
    // Attempt 2 (started at 50 ms) fails at 70 ms, attempt 1 at 500 ms.
    let (outcome, took) = call(&policy(2), &log, |n| match n {
        1 => (500, Err(Error::Busy(1))),
        _ => (20, Err(Error::Busy(2))),
    })
    .await;
    assert_eq!((outcome, took), (Err(Error::Busy(1)), 500));
    assert_eq!(log.dropped.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn every_attempt_of_a_call_shares_its_idempotency_key() {
    let keys = Mutex::new(Vec::new());
    let policy = policy(3);
    let run = || {
        policy
            .retrying::<(), std::io::Error>()
            .hedge(HEDGE)
            .run(|| async {
                let context = current_attempt().unwrap();
                keys.lock()
                    .unwrap()
                    .push((context.attempt(), context.idempotency_key()));
                sleep(Duration::from_millis(if context.attempt() == 3 {
                    1
                } else {
                    500
                }))
                .await;
                Ok(())
            })
    };
    run().await.unwrap();
    run().await.unwrap();
    let keys = keys.lock().unwrap();
    let numbers: Vec<u32> = keys.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [1, 2, 3, 1, 2, 3]);
    assert!(keys[..3].iter().all(|(_, key)| *key == keys[0].1));
    assert!(keys[3..].iter().all(|(_, key)| *key == keys[3].1));
    assert_ne!(keys[0].1, keys[3].1);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_when_attempts_may_start() {
    let log = Log::default();
    let policy = policy(5).with_deadline(Duration::from_millis(120));
    let (outcome, took) = call(&policy, &log, |n| (1000, Ok(n))).await;
    // 150 ms would be past the deadline: no fourth attempt.
    assert_eq!(started(&log), [(1, 0), (2, 50), (3, 100)]);
    assert_eq!((outcome, took), (Ok(1), 1000));
}

#[tokio::test(start_paused = true)]
async fn a_failure_before_the_deadline_still_starts_the_next_attempt() {
    let log = Log::default();
    let policy = policy(5).with_deadline(Duration::from_millis(120));
    // No hedge at 150 ms, but attempt 3 fails at 110 ms: attempt 4 starts at
    // once, before the deadline.
    let (outcome, took) = call(&policy, &log, |n| match n {
        3 => (10, Err(Error::Busy(3))),
        4 => (5, Ok(4)),
        _ => (1000, Ok(n)),
    })
    .await;
    assert_eq!(started(&log), [(1, 0), (2, 50), (3, 100), (4, 110)]);
    assert_eq!((outcome, took), (Ok(4), 115));
}

#[tokio::test(start_paused = true)]
async fn the_timeout_bounds_each_attempt() {
    let log = Log::default();
    let policy = policy(2).with_timeout(Duration::from_millis(80));
    // Both hang: attempt 1 is cut off at 80 ms, attempt 2 at 130 ms.
    let (outcome, took) = call(&policy, &log, |n| (1000, Ok(n))).await;
    assert_eq!((outcome, took), (Err(Error::TimedOut), 130));
    assert_eq!(started(&log), [(1, 0), (2, 50)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn each_hedge_is_a_retry_for_the_budget() {
    static BUDGET: RetryBudget = RetryBudget::new(10, 0.5);
    let log = Log::default();
    let origin = Instant::now();
    let policy = policy(3);
    let run = |log| {
        policy
            .on(retryable)
            .budget(&BUDGET)
            .hedge(HEDGE)
            .run(move || attempt(log, origin, |n| (1000, Ok(n))))
    };
    // Each hedge takes a token and is made only while the count stays
    // above half of 10 after it; each success gives back 0.5.
    let mut expected = Vec::new();
    for (attempts, tokens) in [(3, 8.5), (3, 7.0), (2, 6.5), (2, 6.0), (1, 6.5)] {
        let before = log.started.lock().unwrap().len();
        assert_eq!(run(&log).await, Ok(1));
        let made = log.started.lock().unwrap().len() - before;
        expected.push((attempts, tokens));
        assert_eq!((made, BUDGET.tokens()), (attempts, tokens), "{expected:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_the_call_and_stops_the_hedges() {
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(1)
        .with_open_for(Duration::from_secs(60));
    let log = Log::default();
    let origin = Instant::now();
    // Attempt 1 fails and opens the circuit: attempt 2 is refused, and the
    // caller gets the real error.
    let outcome = policy(3)
        .on(retryable)
        .breaker(&breaker)
        .hedge(HEDGE)
        .run(|| attempt(&log, origin, |n| (10, Err(Error::Busy(n)))))
        .await;
    assert_eq!(outcome, Err(Error::Busy(1)));
    assert_eq!(started(&log), [(1, 0)]);
    // Now the call is refused without running.
    let outcome = policy(3)
        .on(retryable)
        .breaker(&breaker)
        .hedge(HEDGE)
        .run(|| attempt(&log, origin, |n| (10, Ok(n))))
        .await;
    assert_eq!(outcome, Err(Error::Open));
    assert_eq!(started(&log).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_percentile_delay_is_base_until_enough_calls_then_follows_the_latencies() {
    static LATENCIES: Latencies = Latencies::new();
    let hedge = Hedge::percentile(95.0, &LATENCIES);
    let policy = policy(2);
    // Attempt 1 hangs, attempt 2 answers at once: when did 2 start?
    let second_start = || async {
        let log = Log::default();
        let origin = Instant::now();
        let outcome = policy
            .on(retryable)
            .hedge(hedge)
            .run(|| {
                attempt(&log, origin, |n| match n {
                    1 => (1000, Ok(1)),
                    _ => (0, Ok(n)),
                })
            })
            .await;
        assert_eq!(outcome, Ok(2));
        started(&log)[1].1
    };
    assert_eq!(second_start().await, 100, "base before the warm-up");
    // A few hundred calls answering in 10 ms.
    for _ in 0..300 {
        let outcome = policy
            .on(retryable)
            .hedge(hedge)
            .run(|| async {
                sleep(Duration::from_millis(10)).await;
                Ok::<u32, Error>(0)
            })
            .await;
        assert_eq!(outcome, Ok(0));
    }
    // p95 of 10 ms is 10.24 ms (the bucket's bound); tokio's timer ends on
    // the next millisecond.
    assert_eq!(
        LATENCIES.percentile(95.0),
        Some(Duration::from_micros(10_240))
    );
    assert_eq!(second_start().await, 11);
}

#[test]
fn the_hedged_future_is_send_when_the_attempts_are() {
    fn is_send<T: Send>(_: &T) {}
    let policy = policy(3);
    let future = policy
        .retrying::<u32, std::io::Error>()
        .hedge(HEDGE)
        .run(|| async { Ok(1) });
    is_send(&future);
}
