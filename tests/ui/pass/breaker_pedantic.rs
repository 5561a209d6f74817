//! A function with a breaker, next to every key it combines with, compiles
//! without a warning under pedantic lints.
#![deny(warnings, clippy::pedantic)]

use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, RetryBudget, TimedOut};

static INVENTORY: CircuitBreaker = CircuitBreaker::new()
    .with_window(Duration::from_secs(30))
    .with_min_calls(10)
    .with_failure_ratio(0.25)
    .with_open_for(Duration::from_secs(2))
    .with_max_open_for(Duration::from_secs(20))
    .with_probes(1)
    .with_close_after(2)
    .with_jitter(0.2)
    .with_name("inventory");
static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[derive(Debug)]
pub enum ApiError {
    Busy(Option<Duration>),
    TimedOut,
    Open,
}

impl From<TimedOut> for ApiError {
    fn from(_: TimedOut) -> Self {
        ApiError::TimedOut
    }
}

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError::Open
    }
}

fn hint(error: &ApiError) -> Option<Duration> {
    match error {
        ApiError::Busy(hint) => *hint,
        _ => None,
    }
}

/// Reserves an item.
///
/// # Errors
///
/// When the inventory is down.
#[retry(
    max = 4,
    deadline = "5s",
    timeout = "1s",
    retry_after = hint,
    budget = &BUDGET,
    breaker = &INVENTORY,
    on = |e: &ApiError| !matches!(e, ApiError::Open),
)]
pub async fn reserve(item: u64) -> Result<u64, ApiError> {
    Ok(item)
}

/// The same, blocking.
///
/// # Errors
///
/// When the inventory is down.
#[retry(max = 2, breaker = &INVENTORY)]
pub fn reserve_blocking(item: u64) -> Result<u64, ApiError> {
    Ok(item)
}

fn main() {
    drop(reserve(1));
    let _ = reserve_blocking(1);
}
