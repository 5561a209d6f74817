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
