//! `RetryBudget::ratio`: retries up to a share of the first attempts of the
//! last window, with no floor, so that the bound holds from the first
//! failures whatever a process's rate (docs/overload.md): a quiet process
//! does not retry at all, a busy one retries a tenth of its traffic, and
//! the first attempts count for one window only.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{retry, RetryBudget};

#[derive(Debug, PartialEq)]
struct Down;

impl From<retry_runtime::TimedOut> for Down {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Down
    }
}

#[retry(max = 3, base = "1ms", budget = budget)]
async fn call(budget: &RetryBudget, calls: &AtomicU32, fail: bool) -> Result<(), Down> {
    calls.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err(Down)
    } else {
        Ok(())
    }
}

/// Calls that reach the dependency for one failing call.
async fn failing_call(budget: &RetryBudget) -> u32 {
    let calls = AtomicU32::new(0);
    assert_eq!(call(budget, &calls, true).await, Err(Down));
    calls.load(Ordering::SeqCst)
}

async fn succeed(budget: &RetryBudget, times: u32) {
    let calls = AtomicU32::new(0);
    for _ in 0..times {
        call(budget, &calls, false).await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn retries_stay_within_their_share_of_the_first_attempts() {
    let budget = RetryBudget::ratio(0.1, Duration::from_secs(10));
    succeed(&budget, 19).await;
    // With the failing call's own first attempt, 20 first attempts: two
    // retries, both on it.
    assert_eq!(failing_call(&budget).await, 3);
    assert!(budget.tokens().abs() < 1e-9, "{budget:?}");
    assert!((budget.max_tokens() - 2.0).abs() < 1e-9);
    // 21 first attempts allow 2.1: no third retry.
    assert_eq!(failing_call(&budget).await, 1);
    // Successes give nothing back: only first attempts count.
    succeed(&budget, 8).await;
    assert_eq!(
        failing_call(&budget).await,
        2,
        "30 first attempts, 3 retries"
    );
    assert_eq!(failing_call(&budget).await, 1);
}

#[tokio::test(start_paused = true)]
async fn a_quiet_process_has_no_floor_of_retries() {
    let budget = RetryBudget::ratio(0.1, Duration::from_secs(10));
    // One call a second for 8 s: the failing call is the ninth first
    // attempt of the window, 0.9 of a retry, so none is made.
    for _ in 0..8 {
        succeed(&budget, 1).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(failing_call(&budget).await, 1, "9 first attempts: none");
    succeed(&budget, 1).await;
    assert_eq!(failing_call(&budget).await, 2, "11 first attempts: one");
}

#[tokio::test(start_paused = true)]
async fn first_attempts_count_for_one_window() {
    let budget = RetryBudget::ratio(0.5, Duration::from_secs(10));
    succeed(&budget, 3).await;
    assert!((budget.tokens() - 1.5).abs() < 1e-9);
    // Ten buckets of a second: after 9 s the first attempts still count...
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert!((budget.tokens() - 1.5).abs() < 1e-9);
    // ...and after 10 they have left the window, with the retries.
    assert_eq!(failing_call(&budget).await, 3);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(budget.tokens(), 0.0);
    assert!(!budget.allows_retry());
    assert_eq!(failing_call(&budget).await, 1, "one first attempt: 0.5");
}

/// The closure API and a hedged call draw from it the same way: each call
/// counts one first attempt, each retry or hedge one retry.
#[tokio::test(start_paused = true)]
async fn the_closure_api_and_hedges_count_first_attempts_and_retries() {
    let budget = RetryBudget::ratio(1.0, Duration::from_secs(10));
    let policy = retry_runtime::Policy::new().with_max_attempts(3);
    let calls = AtomicU32::new(0);
    let failing = || async {
        calls.fetch_add(1, Ordering::SeqCst);
        Err::<(), Down>(Down)
    };
    // One first attempt allows one retry.
    let _ = policy
        .on(|_: &Down| true)
        .budget(&budget)
        .run(failing)
        .await;
    assert_eq!(calls.swap(0, Ordering::SeqCst), 2);
    // Hedged after 10 ms, never answering: the second first attempt allows
    // one more copy.
    let hanging = || async {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<(), Down>>().await
    };
    let hedged = policy
        .on(|_: &Down| true)
        .budget(&budget)
        .hedge(retry_runtime::hedge::Hedge::after(Duration::from_millis(
            10,
        )))
        .run(hanging);
    assert!(tokio::time::timeout(Duration::from_secs(1), hedged)
        .await
        .is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one hedge, then none");
    assert_eq!(budget.tokens(), 0.0);
}

#[test]
fn odd_ratios_and_windows_do_not_panic() {
    for ratio in [f32::NAN, -1.0, 0.0, 0.001, 1e30, f32::INFINITY] {
        for window in [Duration::ZERO, Duration::from_nanos(1), Duration::MAX] {
            let budget = RetryBudget::ratio(ratio, window);
            budget.record_success();
            let _ = budget.record_failure();
            let _ = budget.allows_retry();
            assert!(budget.tokens() <= budget.max_tokens(), "{budget:?}");
        }
    }
}
