//! The keys for foreign error types, rules that capture arguments, and
//! parameters configured out, under the strictest lints.
#![deny(warnings, clippy::pedantic)]

use std::future::Future;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Policy, TimedOut};
use tonic::Status;

static PAYMENTS: CircuitBreaker = CircuitBreaker::new();
static POLICY: Policy<TimedOut> = Policy::new().with_timeout(Duration::from_secs(1));

fn refused(_: CircuitOpen) -> Status {
    Status::unavailable("circuit open")
}

fn deadline_exceeded(_: TimedOut) -> Status {
    Status::deadline_exceeded("attempt timed out")
}

/// Charges a card.
///
/// # Errors
///
/// The last attempt's status.
#[retry(
    max = 3,
    timeout = "2s",
    timed_out = |_| Status::deadline_exceeded("attempt timed out"),
    breaker = &PAYMENTS,
    circuit_open = |_| Status::unavailable("circuit open"),
    on = |status| idempotent && status.code() == expected
)]
pub async fn charge(
    idempotent: bool,
    expected: tonic::Code,
    #[cfg(any())] never: u32,
) -> Result<u32, Status> {
    Ok(1)
}

/// Under a policy set at run time.
///
/// # Errors
///
/// The last attempt's status.
#[retry(policy = &POLICY, timed_out = deadline_exceeded, breaker = &PAYMENTS, circuit_open = refused)]
pub async fn refund(amount: u64) -> Result<u64, Status> {
    Ok(amount)
}

/// Runs an operation the caller passes, carried across attempts.
///
/// # Errors
///
/// The last attempt's status.
#[retry(max = 3, on = when)]
pub async fn run<F, Fut, W>(mut operation: F, when: W) -> Result<u32, Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u32, Status>>,
    W: Fn(&Status) -> bool,
{
    operation().await
}

/// A plain fn with both keys.
///
/// # Errors
///
/// The last attempt's status.
#[retry(max = 2, timeout = "1s", timed_out = deadline_exceeded, breaker = &PAYMENTS, circuit_open = refused)]
pub fn reserve(mut count: u32) -> Result<u32, Status> {
    count += 1;
    Ok(count)
}



/// A policy without a timeout runs with an error type that cannot express
/// one.
static UNTIMED: Policy = Policy::new().with_max_attempts(4);

/// Fetches a page.
///
/// # Errors
///
/// The last attempt's error.
#[retry(policy = &UNTIMED)]
pub async fn fetch(client: &reqwest::Client) -> Result<String, reqwest::Error> {
    client.get("http://localhost/").send().await?.text().await
}

fn main() {}
