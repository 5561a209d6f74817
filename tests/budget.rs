//! A static `RetryBudget` shared by every function that names it: drained by
//! failures and refilled by successes exactly by gRPC's rule, and holding
//! under contention from many threads.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{retry, Policy, RetryBudget};

static BUDGET: RetryBudget = RetryBudget::new(10, 0.5);

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    Invalid,
}

#[retry(max = 3, base = "1ms", budget = &BUDGET, on = |e| *e == Error::Down)]
async fn failing(calls: &AtomicU32, error: fn() -> Error) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(error())
}

#[retry(max = 3, base = "1ms", budget = &BUDGET)]
async fn succeeding() -> Result<(), Error> {
    Ok(())
}

async fn attempts_of_one_failing_call() -> u32 {
    let calls = AtomicU32::new(0);
    assert_eq!(failing(&calls, || Error::Down).await, Err(Error::Down));
    calls.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn failures_drain_and_successes_refill_by_the_rule() {
    // 10 -> 9 (retry), 8 (retry), 7 (attempts exhausted).
    assert_eq!(attempts_of_one_failing_call().await, 3);
    assert!((BUDGET.tokens() - 7.0).abs() < 1e-9);
    // 7 -> 6 (retry), 5 (not above half: no retry).
    assert_eq!(attempts_of_one_failing_call().await, 2);
    // 5 -> 4: no retry.
    assert_eq!(attempts_of_one_failing_call().await, 1);
    assert!((BUDGET.tokens() - 4.0).abs() < 1e-9);

    // Errors `on` rejects neither take nor give.
    let calls = AtomicU32::new(0);
    assert_eq!(
        failing(&calls, || Error::Invalid).await,
        Err(Error::Invalid)
    );
    assert!((BUDGET.tokens() - 4.0).abs() < 1e-9);

    // Four successes give back 0.5 each: 6. A failure takes it to 5: no retry.
    for _ in 0..4 {
        succeeding().await.unwrap();
    }
    assert!((BUDGET.tokens() - 6.0).abs() < 1e-9);
    assert_eq!(attempts_of_one_failing_call().await, 1);

    // Six more: 8. Now a failing call retries again: 7, 6, then exhausted at 5.
    for _ in 0..6 {
        succeeding().await.unwrap();
    }
    assert_eq!(attempts_of_one_failing_call().await, 3);
    assert!((BUDGET.tokens() - 5.0).abs() < 1e-9);

    // Successes never fill it past the maximum.
    for _ in 0..100 {
        succeeding().await.unwrap();
    }
    assert!((BUDGET.tokens() - 10.0).abs() < 1e-9);
}

static OUTAGE_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
static OUTAGE_CALLS: AtomicU32 = AtomicU32::new(0);
static UNBUDGETED_CALLS: AtomicU32 = AtomicU32::new(0);

#[retry(max = 4, base = "1ms", cap = "2ms", budget = &OUTAGE_BUDGET)]
async fn during_outage() -> Result<(), Error> {
    OUTAGE_CALLS.fetch_add(1, Ordering::Relaxed);
    tokio::task::yield_now().await;
    Err(Error::Down)
}

#[retry(max = 4, base = "1ms", cap = "2ms")]
async fn during_outage_without_budget() -> Result<(), Error> {
    UNBUDGETED_CALLS.fetch_add(1, Ordering::Relaxed);
    tokio::task::yield_now().await;
    Err(Error::Down)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_calls_in_an_outage_stay_within_the_budget() {
    let tasks: Vec<_> = (0..1000).map(|_| tokio::spawn(during_outage())).collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), Err(Error::Down));
    }
    let calls = OUTAGE_CALLS.load(Ordering::Relaxed);
    // Retries are allowed only while the count, after taking a token, is
    // above 50: from 99 down to 51, so at most 49 retries in all.
    assert!(
        (1000..=1049).contains(&calls),
        "{calls} calls for 1000 requests"
    );

    let tasks: Vec<_> = (0..1000)
        .map(|_| tokio::spawn(during_outage_without_budget()))
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap_err();
    }
    assert_eq!(UNBUDGETED_CALLS.load(Ordering::Relaxed), 4000);
}

#[tokio::test(start_paused = true)]
async fn the_closure_driver_draws_from_a_budget_too() {
    static SHARED: RetryBudget = RetryBudget::new(4, 1.0);
    let policy = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(1));
    let calls = AtomicU32::new(0);
    let result: Result<(), std::io::Error> = policy
        .retrying()
        .budget(&SHARED)
        .run(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(std::io::ErrorKind::ConnectionReset.into()) }
        })
        .await;
    assert!(result.is_err());
    // 4 -> 3 (retry), 2 (not above 2: stop).
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

static LAZY_BUDGET: std::sync::LazyLock<RetryBudget> =
    std::sync::LazyLock::new(|| RetryBudget::new(2, 1.0));
static BORROWED: &RetryBudget = &BUDGET_BEHIND_A_REFERENCE;
static BUDGET_BEHIND_A_REFERENCE: RetryBudget = RetryBudget::new(2, 1.0);

#[retry(max = 3, base = "1ms", budget = &LAZY_BUDGET)]
async fn lazily_budgeted(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Down)
}

#[retry(max = 3, base = "1ms", budget = BORROWED)]
async fn budgeted_through_a_reference(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn budgets_behind_lazy_statics_and_references() {
    // 2 -> 1: not above half (1), so no retry at all.
    let calls = AtomicU32::new(0);
    lazily_budgeted(&calls).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let calls = AtomicU32::new(0);
    budgeted_through_a_reference(&calls).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
