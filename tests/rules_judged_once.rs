//! Each outcome is judged once: a rule may count, log or keep state, and
//! sees every attempt's outcome exactly once. And the attempt context shows
//! the call's `max` as written, however large.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{current_attempt, retry, Policy};

#[tokio::test(start_paused = true)]
async fn the_closure_api_judges_each_failure_once() {
    let judged = Cell::new(0u32);
    let hinted = Cell::new(0u32);
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(1));
    let result: std::io::Result<()> = policy
        .on(|_: &std::io::Error| {
            judged.set(judged.get() + 1);
            true
        })
        .retry_after(|_: &std::io::Error| {
            hinted.set(hinted.get() + 1);
            None
        })
        .run(|| async { Err(std::io::ErrorKind::Other.into()) })
        .await;
    assert!(result.is_err());
    assert_eq!(
        (judged.get(), hinted.get()),
        (3, 3),
        "(`on` calls, `retry_after` calls) for 3 failed attempts"
    );
}

static ON_OK_CALLS: AtomicU32 = AtomicU32::new(0);

#[retry(max = 3, base = "1ms", on_ok = |value: &u32| {
    ON_OK_CALLS.fetch_add(1, Ordering::SeqCst);
    *value == 0
})]
async fn always_zero() -> Result<u32, std::io::Error> {
    Ok(0)
}

#[tokio::test(start_paused = true)]
async fn the_attribute_judges_each_retried_value_once() {
    assert_eq!(always_zero().await.unwrap(), 0);
    assert_eq!(
        ON_OK_CALLS.load(Ordering::SeqCst),
        3,
        "`on_ok` calls for 3 attempts"
    );
}

#[retry(max = 4294967295)]
async fn retried_until_it_works() -> Result<(u32, bool), ()> {
    let attempt = current_attempt().unwrap();
    Ok((attempt.max_attempts(), attempt.is_last()))
}

#[retry(max = 4294967295)]
fn blocking_until_it_works() -> Result<(u32, bool), ()> {
    let attempt = current_attempt().unwrap();
    Ok((attempt.max_attempts(), attempt.is_last()))
}

#[tokio::test(start_paused = true)]
async fn the_context_shows_the_calls_max_however_large() {
    assert_eq!(retried_until_it_works().await, Ok((u32::MAX, false)));
    assert_eq!(blocking_until_it_works(), Ok((u32::MAX, false)));
}
