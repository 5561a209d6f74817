//! The expansion is clean under the strictest lints a user may set: CI runs
//! `cargo clippy --all-targets -- -D warnings` over this file, so any lint the
//! generated code trips fails the build.
#![deny(warnings, clippy::pedantic)]

use std::io;
use std::time::Duration;

use retry_runtime::retry;

#[derive(Debug, PartialEq, Eq)]
pub struct ApiError(u16);

fn is_transient(error: &ApiError) -> bool {
    matches!(error.0, 408 | 429 | 502..=504)
}

/// Every key.
///
/// # Errors
///
/// The last attempt's error.
#[retry(
    max = 4,
    base = "200ms",
    cap = "10s",
    multiplier = 1.5,
    jitter = "equal",
    deadline = "1m",
    on = is_transient,
    crate = "::retry_runtime"
)]
pub async fn every_key(status: u16) -> Result<u16, ApiError> {
    if status >= 400 {
        return Err(ApiError(status));
    }
    Ok(status)
}

fn report_give_up(outcome: &Result<u16, ApiError>, stopped: &retry_runtime::Stopped) {
    assert!(outcome.is_err() || stopped.attempts() > 0);
}

/// `on_give_up` as a function's path and as a closure, async and blocking.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms", on_give_up = report_give_up)]
pub async fn given_up(status: u16) -> Result<u16, ApiError> {
    every_key(status).await
}

/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms", on_give_up = |outcome, stopped| assert!(outcome.is_err() && stopped.attempts() == 2))]
pub fn given_up_blocking(status: u16) -> Result<u16, ApiError> {
    if status >= 400 {
        return Err(ApiError(status));
    }
    Ok(status)
}

pub struct Service {
    hits: u32,
}

impl Service {
    /// # Errors
    ///
    /// The last attempt's error.
    #[retry(max = 3, base = "1ms", jitter = "none", on = |e| e.0 == 503)]
    pub async fn hit(&mut self) -> Result<u32, ApiError> {
        self.hits += 1;
        if self.hits < 2 {
            Err(ApiError(503))
        } else {
            Ok(self.hits)
        }
    }

    /// # Errors
    ///
    /// The last attempt's error.
    #[retry(jitter = "full")]
    pub async fn unit(&self) -> io::Result<()> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn strict_lints_accept_the_expansion() {
    assert_eq!(every_key(200).await, Ok(200));
    assert_eq!(every_key(400).await, Err(ApiError(400)));
    let mut service = Service { hits: 0 };
    assert_eq!(service.hit().await, Ok(2));
    service.unit().await.unwrap();
}

static BUDGET: retry_runtime::RetryBudget = retry_runtime::RetryBudget::new(10, 0.5);
static POLICY: retry_runtime::Policy = retry_runtime::Policy::new().with_max_attempts(2);

fn log_retry(error: &ApiError, attempt: u32, wait: Duration) {
    let _ = (error, attempt, wait);
}

impl From<retry_runtime::TimedOut> for ApiError {
    fn from(_: retry_runtime::TimedOut) -> Self {
        ApiError(408)
    }
}

/// The keys of the later issues.
///
/// # Errors
///
/// The last attempt's error.
#[retry(
    max = 3,
    timeout = "1s",
    budget = &BUDGET,
    retry_after = |e| (e.0 == 429).then_some(Duration::from_secs(1)),
    on_ok = |status| *status == 503,
    retry_after_ok = |_| None,
    on_retry = log_retry,
    on_retry_ok = |status, attempt, wait| assert!(*status > 0 && attempt > 0 && wait > Duration::ZERO),
    nested = "retry",
)]
pub async fn later_keys(status: u16) -> Result<u16, ApiError> {
    Ok(status)
}

/// A policy from elsewhere.
///
/// # Errors
///
/// The last attempt's error.
#[retry(policy = &POLICY, on = is_transient)]
pub async fn with_policy(status: u16) -> Result<u16, ApiError> {
    Ok(status)
}

/// A plain function.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms", deadline = "1s", on = is_transient)]
pub fn blocking(status: u16) -> Result<u16, ApiError> {
    if status >= 400 {
        return Err(ApiError(status));
    }
    Ok(status)
}

/// A body that starts with items: they must not count as items after
/// statements.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms")]
pub async fn starts_with_items(text: &str) -> Result<usize, std::num::ParseIntError> {
    use std::str::FromStr;
    fn parse(text: &str) -> Result<usize, std::num::ParseIntError> {
        usize::from_str(text)
    }
    const OFFSET: usize = 1;
    parse(text).map(|n| n + OFFSET)
}

/// The same in a plain function, with a timeout.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms", timeout = "1s")]
pub fn plain_starts_with_items(text: &str) -> Result<usize, ApiError> {
    use std::str::FromStr;
    usize::from_str(text).map_err(|_| ApiError(400))
}

#[tokio::test(start_paused = true)]
async fn strict_lints_accept_every_key() {
    assert_eq!(starts_with_items("41").await, Ok(42));
    assert_eq!(plain_starts_with_items("7"), Ok(7));
    assert_eq!(later_keys(200).await, Ok(200));
    assert_eq!(with_policy(200).await, Ok(200));
    assert_eq!(blocking(404), Err(ApiError(404)));
}

/// Stands for a client whose error type the user cannot extend.
pub struct Client;

impl Client {
    async fn get(&self, url: &str) -> Result<usize, ApiError> {
        tokio::task::yield_now().await;
        Ok(url.len())
    }
}

/// A one-line body: its braces are the user's, and must not read as
/// `unused_braces`.
///
/// # Errors
///
/// The last attempt's error.
#[rustfmt::skip] // the one-line body is what this checks
#[retry(max = 2, base = "1ms")]
pub async fn one_line(client: &Client, url: &str) -> Result<usize, ApiError> { client.get(url).await }

/// By-value and `mut` arguments on one line.
///
/// # Errors
///
/// The last attempt's error.
#[rustfmt::skip] // the one-line body is what this checks
#[retry(max = 2, base = "1ms")]
pub async fn by_value(client: &Client, url: String, mut batch: Vec<u32>) -> Result<usize, ApiError> { batch.push(1); client.get(&url).await.map(|n| n + batch.len()) }

static UNTIMED: std::sync::LazyLock<retry_runtime::Policy> =
    std::sync::LazyLock::new(retry_runtime::Policy::new);

/// A policy without a timeout, for an error type without `From<TimedOut>`.
///
/// # Errors
///
/// The last attempt's error.
#[rustfmt::skip] // the one-line body is what this checks
#[retry(policy = &UNTIMED)]
pub fn untimed(value: u32) -> Result<u32, std::fmt::Error> { Ok(value) }

#[tokio::test(start_paused = true)]
async fn strict_lints_accept_one_line_bodies() {
    assert_eq!(one_line(&Client, "/a").await, Ok(2));
    assert_eq!(by_value(&Client, "/ab".to_owned(), vec![]).await, Ok(4));
    assert_eq!(untimed(3), Ok(3));
}

/// Arguments named with a leading underscore (unused by the body, or kept
/// for a `#[cfg]`), by value and `mut`: the expansion reads them (to rebind
/// them and to keep the caller's value), which is no
/// `used_underscore_binding` of the user's.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms")]
pub async fn underscore_arguments(
    _id: u64,
    mut _batch: Vec<u8>,
    #[cfg(test)] _only_in_tests: String,
) -> Result<u8, ApiError> {
    Ok(1)
}

/// The same, blocking.
///
/// # Errors
///
/// The last attempt's error.
#[retry(max = 2, base = "1ms")]
pub fn underscore_arguments_blocking(_id: u64, mut _batch: Vec<u8>) -> Result<u8, ApiError> {
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn underscore_arguments_are_retried_as_any() {
    assert_eq!(underscore_arguments(1, vec![], String::new()).await, Ok(1));
    assert_eq!(underscore_arguments_blocking(1, vec![]), Ok(1));
}
