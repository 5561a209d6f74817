//! The counts through the `metrics` facade, by stop reason, checked against
//! the calls made.

#[path = "support/counts.rs"]
mod counts;

use retry_runtime::retry;

#[derive(Debug)]
struct Failure(bool);

#[retry(max = 3, base = "1ms", on = |e| e.0)]
async fn failing(transient: bool) -> Result<(), Failure> {
    Err(Failure(transient))
}

#[retry(
    max = 3,
    base = "1ms",
    deadline = "2ms",
    multiplier = 10,
    jitter = "none"
)]
async fn deadline_bound() -> Result<(), Failure> {
    Err(Failure(true))
}

#[retry(max = 3, base = "1ms")]
async fn succeeding() -> Result<(), Failure> {
    Ok(())
}

#[retry(max = 3, base = "1ms")]
async fn outer() -> Result<(), Failure> {
    failing(true).await
}

#[tokio::test(start_paused = true)]
async fn counters_match_the_calls_made() {
    let counting = counts::Counting::on_this_thread();
    let before = counting.now();
    failing(true).await.unwrap_err(); // 2 retries, exhausted
    failing(false).await.unwrap_err(); // not retryable
    deadline_bound().await.unwrap_err(); // 1 retry (1ms), then 10ms would pass 2ms
    succeeding().await.unwrap(); // nothing
    outer().await.unwrap_err(); // inner: 2 retries, exhausted; outer: returns at once, nested
    let after = counting.now();
    assert_eq!(after.retries - before.retries, 2 + 1 + 2);
    assert_eq!(after.exhausted - before.exhausted, 2);
    assert_eq!(after.not_retryable - before.not_retryable, 1);
    assert_eq!(after.deadline - before.deadline, 1);
    assert_eq!(after.nested - before.nested, 1);
    assert_eq!(after.budget - before.budget, 0);
    assert_eq!(after.hint_too_long - before.hint_too_long, 0);
}
