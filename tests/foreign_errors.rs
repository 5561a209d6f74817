//! Error types the user cannot extend (`reqwest::Error`, a database
//! driver's error, `anyhow::Error`) work with every key but `timeout`: no
//! `From<TimedOut>` is required unless a timeout can apply.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{retry, Policy, RetryBudget};

/// Stands for `sqlx::Error`: a foreign type, with no `From<TimedOut>`.
mod driver {
    #[derive(Debug)]
    pub enum Error {
        PoolTimedOut,
        RowNotFound,
    }
}

static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

fn transient(error: &driver::Error) -> bool {
    matches!(error, driver::Error::PoolTimedOut)
}

/// Every key but `timeout` and `policy`.
#[retry(
    max = 3,
    base = "10ms",
    cap = "1s",
    multiplier = 3,
    jitter = "none",
    deadline = "10s",
    on = transient,
    retry_after = |_| None,
    budget = &BUDGET,
    on_retry = |_, _, _| {},
    nested = "retry",
    crate = "::retry_runtime"
)]
async fn fetch_row(calls: &AtomicU32) -> Result<u32, driver::Error> {
    if calls.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(driver::Error::PoolTimedOut);
    }
    Err(driver::Error::RowNotFound)
}

#[tokio::test(start_paused = true)]
async fn a_driver_error_is_retried_with_every_key_but_timeout() {
    let calls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    assert!(matches!(
        fetch_row(&calls).await,
        Err(driver::Error::RowNotFound)
    ));
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    assert_eq!(start.elapsed(), Duration::from_millis(10));
}

#[retry(max = 2, base = "5ms", jitter = "none", on = reqwest::Error::is_connect)]
async fn get(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    client.get(url).send().await?.text().await
}

#[tokio::test(start_paused = true)]
async fn a_reqwest_error_is_retried() {
    // A port nothing listens on: bind one, then close it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let client = reqwest::Client::new();
    let error = get(&client, &url).await.unwrap_err();
    assert!(error.is_connect());
}

#[retry(max = 3, base = "1ms", jitter = "none", on = |e| e.to_string() == "busy")]
async fn anyhow_call(calls: &AtomicU32) -> anyhow::Result<u32> {
    if calls.fetch_add(1, Ordering::Relaxed) < 2 {
        anyhow::bail!("busy");
    }
    Ok(3)
}

#[tokio::test(start_paused = true)]
async fn an_anyhow_error_is_retried() {
    let calls = AtomicU32::new(0);
    assert_eq!(anyhow_call(&calls).await.unwrap(), 3);
}

fn untimed() -> Policy {
    Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(10))
        .with_jitter(retry_runtime::Jitter::None)
}

#[retry(policy = &untimed(), on = transient)]
async fn fetch_under_untimed(calls: &AtomicU32) -> Result<u32, driver::Error> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(driver::Error::PoolTimedOut)
}

#[retry(policy = &untimed(), on = transient)]
fn fetch_under_untimed_blocking(calls: &AtomicU32) -> Result<u32, driver::Error> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(driver::Error::PoolTimedOut)
}

#[tokio::test(start_paused = true)]
async fn the_attribute_runs_an_untimed_policy_for_a_foreign_error() {
    let calls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    assert!(fetch_under_untimed(&calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 4);
    assert_eq!(start.elapsed(), Duration::from_millis(10 + 20 + 40));
}

#[test]
fn a_plain_fn_runs_an_untimed_policy_for_a_foreign_error() {
    let calls = AtomicU32::new(0);
    assert!(fetch_under_untimed_blocking(&calls).is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 4);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_runs_an_untimed_policy_for_a_foreign_error() {
    let policy = untimed();
    let mut calls = 0;
    let outcome: Result<u32, driver::Error> = policy
        .on(transient)
        .run(|| {
            calls += 1;
            let outcome = if calls < 3 {
                Err(driver::Error::PoolTimedOut)
            } else {
                Ok(calls)
            };
            async move { outcome }
        })
        .await;
    assert_eq!(outcome.unwrap(), 3);
    let blocking: Result<u32, driver::Error> = policy
        .retrying()
        .run_blocking(|| Err(driver::Error::RowNotFound));
    assert!(matches!(blocking, Err(driver::Error::RowNotFound)));
    let retried: Result<(), driver::Error> = policy
        .retry(|| async { Err(driver::Error::RowNotFound) })
        .await;
    assert!(retried.is_err());
}

/// A policy given a timeout and then none is a `Policy` again, which runs
/// a foreign error type.
#[tokio::test(start_paused = true)]
async fn a_timeout_removed_runs_a_foreign_error_again() {
    let timed = untimed().with_timeout(Duration::from_secs(1));
    let mut calls = 0;
    let outcome: Result<(), driver::Error> = timed
        .without_timeout()
        .retry(|| {
            calls += 1;
            async { Err(driver::Error::RowNotFound) }
        })
        .await;
    assert!(matches!(outcome, Err(driver::Error::RowNotFound)));
    assert_eq!(calls, 4);
    assert_eq!(timed.without_timeout(), untimed());
}
