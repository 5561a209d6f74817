//! One-line bodies, by-value and `mut` arguments and run-time policies add
//! no warning, even under the strictest settings.
#![deny(warnings, clippy::pedantic)]

use retry_runtime::{retry, Policy};

/// An error type the user cannot extend: no `From<TimedOut>`.
#[derive(Debug)]
pub struct ForeignError;

pub struct Client;

impl Client {
    /// # Errors
    ///
    /// Never.
    pub async fn get(&self, url: &str) -> Result<usize, ForeignError> { Ok(url.len()) }
}

/// # Errors
///
/// The last attempt's error.
#[retry(max = 3, base = "10ms")]
pub async fn fetch(client: &Client, url: &str) -> Result<usize, ForeignError> { client.get(url).await }

/// # Errors
///
/// The last attempt's error.
#[retry(max = 3, base = "10ms")]
pub async fn fetch_owned(client: &Client, url: String) -> Result<usize, ForeignError> { client.get(&url).await }

/// # Errors
///
/// The last attempt's error.
#[retry(max = 3, base = "10ms")]
pub async fn drain(mut batch: Vec<u32>) -> Result<usize, ForeignError> { Ok(batch.drain(..).count()) }

/// # Errors
///
/// The last attempt's error.
#[retry(max = 3, base = "10ms")]
pub fn blocking(mut batch: Vec<u32>) -> Result<usize, ForeignError> { Ok(batch.drain(..).count()) }

static UNTIMED: std::sync::LazyLock<Policy> = std::sync::LazyLock::new(Policy::new);

/// # Errors
///
/// The last attempt's error.
#[retry(policy = &UNTIMED)]
pub async fn under_policy(client: &Client) -> Result<usize, ForeignError> { client.get("/").await }

/// # Errors
///
/// The last attempt's error.
#[retry(policy = &*UNTIMED)]
pub fn under_policy_blocking(value: u32) -> Result<u32, ForeignError> { Ok(value) }

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = Client;
    assert_eq!(fetch(&client, "/a").await.ok(), Some(2));
    assert_eq!(fetch_owned(&client, "/ab".to_owned()).await.ok(), Some(3));
    assert_eq!(drain(vec![1, 2]).await.ok(), Some(2));
    assert_eq!(blocking(vec![1]).ok(), Some(1));
    assert_eq!(under_policy(&client).await.ok(), Some(1));
    assert_eq!(under_policy_blocking(4).ok(), Some(4));
}
