//! `deadline` bounds the whole call, attempts included, and never starts a
//! wait that would end past it.

mod support;

use std::time::Duration;

use retry_runtime::retry;
use support::{Failure, Flaky};
use tokio::time::{sleep, Instant};

#[retry(
    max = 10,
    base = "100ms",
    cap = "10s",
    jitter = "none",
    deadline = "1s"
)]
async fn quick(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 10, base = "100ms", jitter = "none", deadline = "1s")]
async fn slow(dep: &Flaky) -> Result<u32, Failure> {
    // Each attempt takes 250ms before it fails.
    sleep(Duration::from_millis(250)).await;
    dep.call()
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_would_pass_the_deadline_is_not_started() {
    let dep = Flaky::failing(100);
    let start = Instant::now();
    let error = quick(&dep).await.unwrap_err();
    // Waits 100, 200, 400 end at 700ms; the next (800ms) would end at 1500ms.
    assert_eq!(dep.starts_ms(), [0, 100, 300, 700]);
    assert_eq!(error.call, 4, "the last attempt's error comes back");
    // Returned at once after the fourth attempt, not after sleeping.
    assert_eq!(start.elapsed(), Duration::from_millis(700));
}

#[tokio::test(start_paused = true)]
async fn time_spent_inside_attempts_counts() {
    let dep = Flaky::failing(100);
    let start = Instant::now();
    let error = slow(&dep).await.unwrap_err();
    // Attempt 1 ends at 250, waits 100 -> attempt 2 ends at 600, waits 200 ->
    // attempt 3 ends at 1050: no time left.
    assert_eq!(dep.starts_ms(), [250, 600, 1050]);
    assert_eq!(error.call, 3);
    assert_eq!(start.elapsed(), Duration::from_millis(1050));
}

#[tokio::test(start_paused = true)]
async fn a_wait_ending_exactly_at_the_deadline_is_allowed() {
    #[retry(
        max = 10,
        base = "500ms",
        multiplier = 1,
        jitter = "none",
        deadline = "1s"
    )]
    async fn exact(dep: &Flaky) -> Result<u32, Failure> {
        dep.call()
    }
    let dep = Flaky::failing(100);
    exact(&dep).await.unwrap_err();
    assert_eq!(dep.starts_ms(), [0, 500, 1000]);
}

#[tokio::test(start_paused = true)]
async fn success_before_the_deadline_is_returned() {
    let dep = Flaky::failing(2);
    assert_eq!(quick(&dep).await, Ok(3));
}

#[retry(max = 2, deadline = "10s")]
async fn inner_with_a_far_deadline() -> Result<Option<tokio::time::Instant>, ()> {
    // Polled more than once, so that its context is entered again.
    tokio::task::yield_now().await;
    Ok(retry_runtime::current_attempt().unwrap().deadline())
}

#[retry(max = 2)]
async fn inner_without_a_deadline() -> Result<Option<tokio::time::Instant>, ()> {
    Ok(retry_runtime::current_attempt().unwrap().deadline())
}

#[retry(max = 2, deadline = "1s")]
async fn outer_with_a_near_deadline() -> Result<[Option<tokio::time::Instant>; 4], ()> {
    let before = retry_runtime::current_attempt().unwrap().deadline();
    let far = inner_with_a_far_deadline().await?;
    let none = inner_without_a_deadline().await?;
    let after = retry_runtime::current_attempt().unwrap().deadline();
    Ok([before, far, none, after])
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_sees_the_nearest_deadline_and_leaves_the_outer_one_as_it_was() {
    let start = tokio::time::Instant::now();
    let [before, far, none, after] = outer_with_a_near_deadline().await.unwrap();
    let near = start + std::time::Duration::from_secs(1);
    assert_eq!(before, Some(near));
    assert_eq!(
        far,
        Some(near),
        "the enclosing deadline is nearer than its own"
    );
    assert_eq!(
        none,
        Some(near),
        "without one of its own, the enclosing one"
    );
    assert_eq!(after, Some(near));
    let alone = inner_with_a_far_deadline().await.unwrap();
    assert_eq!(alone, Some(start + std::time::Duration::from_secs(10)));
    assert!(retry_runtime::current_attempt().is_none());
}
