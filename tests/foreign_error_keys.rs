//! An error type that cannot implement `From<TimedOut>` or `From<CircuitOpen>`
//! (`tonic::Status`, foreign to both crates) still works with `timeout`,
//! `breaker` and `policy`: `timed_out = ...` and `circuit_open = ...` say
//! how a cut-off attempt and a refused call fail (issue 17, item 4).
#![deny(warnings, clippy::pedantic)]

use std::cell::Cell;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Policy, TimedOut};
use tonic::{Code, Status};

fn is_transient(status: &Status) -> bool {
    matches!(status.code(), Code::Unavailable | Code::DeadlineExceeded)
}

fn deadline_exceeded(_: TimedOut) -> Status {
    Status::deadline_exceeded("attempt timed out")
}

/// Every attempt hangs: each is cut off and fails with the key's error.
#[retry(
    max = 3,
    base = "1ms",
    timeout = "50ms",
    on = is_transient,
    timed_out = |_| Status::deadline_exceeded("attempt timed out")
)]
async fn hangs(calls: &Cell<u32>) -> Result<(), Status> {
    calls.set(calls.get() + 1);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_cut_off_attempt_fails_with_the_timed_out_key() {
    let calls = Cell::new(0);
    let status = hangs(&calls).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(status.message(), "attempt timed out");
    assert_eq!(calls.get(), 3, "each timed-out attempt is retried by `on`");
}

/// The conversion is a function, and the policy is set at run time.
static POLICY: Policy<TimedOut> = Policy::new()
    .with_max_attempts(2)
    .with_base(Duration::from_millis(1))
    .with_timeout(Duration::from_millis(10));

#[retry(policy = &POLICY, timed_out = deadline_exceeded)]
async fn hangs_under_policy(calls: &Cell<u32>) -> Result<(), Status> {
    calls.set(calls.get() + 1);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_policy_with_a_timeout_runs_with_the_timed_out_key() {
    let calls = Cell::new(0);
    let status = hangs_under_policy(&calls).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(calls.get(), 2);
}

#[retry(max = 2, base = "1ms", timeout = "5ms", timed_out = deadline_exceeded)]
fn sleeps(calls: &Cell<u32>) -> Result<(), Status> {
    calls.set(calls.get() + 1);
    std::thread::sleep(Duration::from_millis(20));
    Ok(())
}

#[test]
fn a_plain_fn_that_returns_late_fails_with_the_timed_out_key() {
    let calls = Cell::new(0);
    assert_eq!(sleeps(&calls).unwrap_err().code(), Code::DeadlineExceeded);
    assert_eq!(calls.get(), 2);
}

/// Opens after two failures in a row, for a minute.
static PAYMENTS: CircuitBreaker = CircuitBreaker::new()
    .with_min_calls(100)
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(60))
    .with_jitter(0.0);

#[retry(
    max = 1,
    breaker = &PAYMENTS,
    circuit_open = |_| Status::unavailable("circuit open")
)]
async fn charge(calls: &Cell<u32>) -> Result<(), Status> {
    calls.set(calls.get() + 1);
    Err(Status::unavailable("payments are down"))
}

#[tokio::test(start_paused = true)]
async fn a_refused_call_fails_with_the_circuit_open_key() {
    let calls = Cell::new(0);
    for _ in 0..2 {
        assert_eq!(
            charge(&calls).await.unwrap_err().message(),
            "payments are down"
        );
    }
    assert_eq!(PAYMENTS.state(), CircuitState::Open);
    let refused = charge(&calls).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert_eq!(refused.message(), "circuit open");
    assert_eq!(calls.get(), 2, "the refused call never ran the body");
}

fn refused(_: CircuitOpen) -> Status {
    Status::unavailable("circuit open")
}

static INVENTORY: CircuitBreaker = CircuitBreaker::new()
    .with_min_calls(100)
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(60))
    .with_jitter(0.0);

#[retry(max = 1, breaker = &INVENTORY, circuit_open = refused)]
fn reserve(calls: &Cell<u32>) -> Result<(), Status> {
    calls.set(calls.get() + 1);
    Err(Status::unavailable("inventory is down"))
}

#[test]
fn a_plain_fn_refused_by_the_breaker_fails_with_the_circuit_open_key() {
    let calls = Cell::new(0);
    assert_eq!(reserve(&calls).unwrap_err().message(), "inventory is down");
    assert_eq!(reserve(&calls).unwrap_err().message(), "circuit open");
    assert_eq!(calls.get(), 1);
}

/// The future stays `Send` with both keys.
#[retry(
    max = 2,
    base = "1ms",
    timeout = "1s",
    timed_out = deadline_exceeded,
    breaker = &PAYMENTS,
    circuit_open = refused
)]
async fn both(value: u32) -> Result<u32, Status> {
    Ok(value)
}

#[test]
fn both_keys_keep_the_future_send() {
    fn assert_send<F: std::future::Future + Send>(_: &F) {}
    assert_send(&both(1));
}
