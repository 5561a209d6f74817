//! `timeout`: each attempt is cut off and fails with `E::from(TimedOut)`,
//! classified like any other error; the deadline still bounds the call.

use std::io;
use std::time::Duration;

use retry_runtime::{retry, TimedOut};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq)]
enum Error {
    TimedOut,
    Refused,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

#[retry(max = 3, base = "100ms", jitter = "none", timeout = "1s")]
async fn hangs(took: Duration) -> Result<Duration, Error> {
    sleep(took).await;
    Ok(took)
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_cut_off_and_retried() {
    let start = Instant::now();
    assert_eq!(hangs(Duration::from_secs(60)).await, Err(Error::TimedOut));
    // 1s, wait 100ms, 1s, wait 200ms, 1s.
    assert_eq!(start.elapsed(), Duration::from_millis(3300));
}

#[tokio::test(start_paused = true)]
async fn a_fast_attempt_is_not_touched() {
    let start = Instant::now();
    assert_eq!(
        hangs(Duration::from_millis(999)).await,
        Ok(Duration::from_millis(999))
    );
    assert_eq!(start.elapsed(), Duration::from_millis(999));
}

#[retry(
    max = 5,
    base = "100ms",
    jitter = "none",
    timeout = "2s",
    deadline = "3s"
)]
async fn hangs_with_deadline() -> Result<(), Error> {
    sleep(Duration::from_secs(60)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_deadline_shortens_the_last_attempt() {
    let start = Instant::now();
    assert_eq!(hangs_with_deadline().await, Err(Error::TimedOut));
    // Attempt 1 is cut at 2s; after 100ms, attempt 2 has 900ms left.
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[retry(max = 3, base = "100ms", timeout = "1s", on = |e| *e == Error::Refused)]
async fn timeouts_not_retried() -> Result<(), Error> {
    sleep(Duration::from_secs(60)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_timeout_error_is_classified_by_on() {
    let start = Instant::now();
    assert_eq!(timeouts_not_retried().await, Err(Error::TimedOut));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[retry(max = 2, base = "100ms", timeout = "50ms")]
async fn io_call() -> io::Result<()> {
    sleep(Duration::from_secs(1)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn io_errors_convert_with_the_timed_out_kind() {
    let error = io_call().await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert!(error.get_ref().is_some_and(|inner| inner.is::<TimedOut>()));
}

#[tokio::test(start_paused = true)]
async fn the_closure_driver_honours_the_policy_timeout() {
    let policy = retry_runtime::Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(100))
        .with_jitter(retry_runtime::Jitter::None)
        .with_timeout(Duration::from_millis(500));
    let start = Instant::now();
    let result: Result<(), Error> = policy
        .retry(|| async {
            sleep(Duration::from_secs(5)).await;
            Ok(())
        })
        .await;
    assert_eq!(result, Err(Error::TimedOut));
    assert_eq!(start.elapsed(), Duration::from_millis(1100));
}
