//! `#[retry(hedge = ...)]` (DESIGN §4.15) on a paused clock: the attribute
//! runs the hedging runtime that `hedging.rs` specifies through the closure
//! API; here, what the attribute adds: the arguments shared by the
//! attempts, methods, `current_attempt()`, the per-function histogram of
//! `hedge = "p95"`, `timeout`, `budget` and `breaker` as keys, and `Send`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use retry_runtime::{current_attempt, retry, CircuitBreaker, CircuitOpen, RetryBudget, TimedOut};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Error {
    Busy(u32),
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

/// Which attempts started, when (ms from `origin`), and how many were
/// dropped before they finished.
struct Log {
    origin: Instant,
    started: Mutex<Vec<(u32, u64)>>,
    dropped: AtomicU32,
}

impl Log {
    fn new() -> Self {
        Log {
            origin: Instant::now(),
            started: Mutex::new(Vec::new()),
            dropped: AtomicU32::new(0),
        }
    }

    fn started(&self) -> Vec<(u32, u64)> {
        self.started.lock().unwrap().clone()
    }

    fn elapsed(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap()
    }
}

/// Counts an attempt dropped before it finished.
struct DropGuard<'a>(&'a Log, bool);

impl Drop for DropGuard<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Attempt `n` runs `took(n)` ms, then returns `outcome(n)`.
async fn attempt(
    log: &Log,
    took: fn(u32) -> u64,
    outcome: fn(u32) -> Result<u32, Error>,
) -> Result<u32, Error> {
    let n = current_attempt().unwrap().attempt();
    log.started.lock().unwrap().push((n, log.elapsed()));
    let mut guard = DropGuard(log, false);
    sleep(Duration::from_millis(took(n))).await;
    guard.1 = true;
    outcome(n)
}

fn retryable(error: &Error) -> bool {
    matches!(error, Error::Busy(_) | Error::TimedOut)
}

#[retry(max = 3, hedge = "50ms", on = retryable)]
async fn hedged(
    log: &Log,
    took: fn(u32) -> u64,
    outcome: fn(u32) -> Result<u32, Error>,
) -> Result<u32, Error> {
    attempt(log, took, outcome).await
}

#[tokio::test(start_paused = true)]
async fn the_attribute_hedges_after_the_delay_and_the_first_answer_wins() {
    let log = Log::new();
    let answer = hedged(&log, |n| if n == 1 { 1000 } else { 20 }, Ok).await;
    assert_eq!((answer, log.elapsed()), (Ok(2), 70));
    assert_eq!(log.started(), [(1, 0), (2, 50)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn up_to_max_attempts_start_then_the_call_waits_for_one() {
    let log = Log::new();
    let answer = hedged(&log, |n| 1000 - 60 * u64::from(n), Ok).await;
    // Attempt 3 started last (100 ms) and answers first (920 ms; attempt 2
    // would at 930, attempt 1 at 940).
    assert_eq!((answer, log.elapsed()), (Ok(3), 920));
    assert_eq!(log.started(), [(1, 0), (2, 50), (3, 100)]);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn an_error_on_rejects_is_returned_at_once() {
    let log = Log::new();
    let answer = hedged(
        &log,
        |n| if n == 1 { 1000 } else { 5 },
        |n| {
            if n == 2 {
                Err(Error::Invalid(2))
            } else {
                Ok(n)
            }
        },
    )
    .await;
    assert_eq!((answer, log.elapsed()), (Err(Error::Invalid(2)), 55));
    assert_eq!(log.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_starts_the_next_at_once_and_the_last_failure_is_returned() {
    let log = Log::new();
    let answer = hedged(&log, |n| 10 * u64::from(n), |n| Err(Error::Busy(n))).await;
    // 1 fails at 10 ms, 2 (started then) at 30 ms, 3 (started then) at 60 ms.
    assert_eq!(log.started(), [(1, 0), (2, 10), (3, 30)]);
    assert_eq!((answer, log.elapsed()), (Err(Error::Busy(3)), 60));
}

struct Client {
    name: String,
    keys: Mutex<Vec<retry_runtime::IdempotencyKey>>,
}

impl Client {
    /// A method: the attempts share `&self` and a by-value argument.
    #[retry(max = 2, hedge = "10ms")]
    async fn get(&self, id: String) -> Result<String, Error> {
        let context = current_attempt().unwrap();
        self.keys.lock().unwrap().push(context.idempotency_key());
        if context.attempt() == 1 {
            sleep(Duration::from_secs(1)).await;
        }
        Ok(format!("{}/{id}/{}", self.name, context.attempt()))
    }
}

#[tokio::test(start_paused = true)]
async fn attempts_share_the_arguments_and_the_idempotency_key() {
    let client = Client {
        name: "users".to_owned(),
        keys: Mutex::new(Vec::new()),
    };
    assert_eq!(client.get("7".to_owned()).await.unwrap(), "users/7/2");
    assert_eq!(client.get("8".to_owned()).await.unwrap(), "users/8/2");
    let keys = client.keys.lock().unwrap();
    assert_eq!(keys.len(), 4);
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[2], keys[3]);
    assert_ne!(keys[0], keys[2]);
}

#[retry(max = 2, base = "100ms", hedge = "p95")]
async fn adaptive(slow_first: bool, log: &Log) -> Result<u32, Error> {
    let n = current_attempt().unwrap().attempt();
    log.started.lock().unwrap().push((n, log.elapsed()));
    let took = if slow_first && n == 1 { 1000 } else { 20 };
    sleep(Duration::from_millis(took)).await;
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn p95_hedges_after_base_until_a_hundred_successes_then_at_the_percentile() {
    let log = Log::new();
    // Before: `base`.
    let origin = log.elapsed();
    assert_eq!(adaptive(true, &log).await, Ok(2));
    assert_eq!(log.started()[1].1 - origin, 100);
    // A few hundred calls answering in 20 ms.
    for _ in 0..300 {
        assert_eq!(adaptive(false, &log).await, Ok(1));
    }
    // p95 of 20 ms is 20.48 ms (its bucket's bound): the hedge starts at
    // tokio's next millisecond, 21 ms.
    let before = log.started().len();
    let origin = log.elapsed();
    assert_eq!(adaptive(true, &log).await, Ok(2));
    assert_eq!(log.started()[before + 1].1 - origin, 21);
}

#[retry(max = 3, hedge = "50ms", timeout = "80ms", on = retryable)]
async fn hung(log: &Log) -> Result<u32, Error> {
    attempt(log, |_| 1000, Ok).await
}

#[tokio::test(start_paused = true)]
async fn timeout_cuts_each_attempt_off() {
    let log = Log::new();
    // 1 starts at 0 and is cut off at 80; 2 starts at 50 and is cut off at
    // 130; 3 starts at 80 (after 1's failure) and is cut off at 160.
    assert_eq!(hung(&log).await, Err(Error::TimedOut));
    assert_eq!(log.started(), [(1, 0), (2, 50), (3, 80)]);
    assert_eq!(log.elapsed(), 160);
    assert_eq!(log.dropped.load(Ordering::SeqCst), 3);
}

static BUDGET: RetryBudget = RetryBudget::new(4, 0.0);

#[retry(max = 3, hedge = "50ms", budget = &BUDGET)]
async fn budgeted(log: &Log) -> Result<u32, Error> {
    attempt(log, |_| 1000, Ok).await
}

#[tokio::test(start_paused = true)]
async fn each_hedge_takes_a_token_and_none_is_made_without_one() {
    let log = Log::new();
    // 4 tokens: a hedge is made while the count stays above 2 after it.
    assert_eq!(budgeted(&log).await, Ok(1));
    assert_eq!(log.started().len(), 2);
    assert!((BUDGET.tokens() - 3.0).abs() < 1e-9);
    assert_eq!(budgeted(&log).await, Ok(1));
    assert_eq!(log.started().len(), 3);
}

static BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(60));

#[retry(max = 3, hedge = "50ms", breaker = &BREAKER)]
async fn guarded(log: &Log) -> Result<u32, Error> {
    attempt(log, |_| 10, |n| Err(Error::Busy(n))).await
}

#[tokio::test(start_paused = true)]
async fn the_breaker_is_asked_for_every_attempt() {
    let log = Log::new();
    assert_eq!(guarded(&log).await, Err(Error::Busy(1)));
    assert_eq!(guarded(&log).await, Err(Error::Open));
    assert_eq!(log.started().len(), 1);
}

#[test]
fn a_hedged_future_is_send_when_the_arguments_are_send_and_sync() {
    fn is_send<T: Send>(_: &T) {}
    let log = Log::new();
    is_send(&hedged(&log, |_| 1, Ok));
    let client = Client {
        name: String::new(),
        keys: Mutex::new(Vec::new()),
    };
    is_send(&client.get(String::new()));
}

static RUNTIME_POLICY: std::sync::LazyLock<retry_runtime::Policy<retry_runtime::TimedOut>> =
    std::sync::LazyLock::new(|| {
        retry_runtime::Policy::new()
            .with_max_attempts(20)
            .with_timeout(Duration::from_secs(5))
    });

/// A policy built at run time: its `max` is known only then, so the slots
/// are on the heap (at most 16 attempts at once).
#[retry(policy = &RUNTIME_POLICY, hedge = "0ms", on = retryable)]
async fn from_configuration(log: &Log) -> Result<u32, Error> {
    attempt(log, |n| 1000 - u64::from(n), Ok).await
}

#[tokio::test(start_paused = true)]
async fn a_runtime_policy_hedges_up_to_sixteen_at_once() {
    let log = Log::new();
    // A zero delay starts every slot at once; the 16th, the fastest, wins.
    assert_eq!(from_configuration(&log).await, Ok(16));
    let started = log.started();
    assert_eq!(started.len(), 16);
    assert!(started.iter().all(|&(_, at)| at == 0));
    assert_eq!(log.dropped.load(Ordering::SeqCst), 15);
}
