//! reqwest errors and responses.
//!
//! reqwest returns `Ok(response)` for a 503, so a retrying client classifies
//! both sides: errors with `on`, responses with `on_ok`, and reads the
//! server's `Retry-After` with `retry_after_ok`.
//!
//! ```
//! use retry_runtime::{classify::reqwest as transient, retry};
//!
//! #[retry(
//!     max = 4,
//!     base = "200ms",
//!     on = transient::is_transient,
//!     on_ok = transient::is_transient_response,
//!     retry_after_ok = transient::retry_after,
//! )]
//! async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
//!     client.get(url).send().await
//! }
//! ```
//!
//! When attempts run out on a 503, the caller gets that last response, as it
//! came; `response.error_for_status()` turns it into an error if wanted.
//!
//! `reqwest::Error` cannot be made from a [`TimedOut`](crate::TimedOut), so
//! the `timeout` key does not apply to a function returning
//! `reqwest::Result`: bound each attempt with the client's own
//! `ClientBuilder::timeout` instead. Its timeouts are transient errors here.

use std::time::Duration;

use super::http::{self as status, is_transient_status};

/// Whether a reqwest error may go away on a repeat: a timeout, a failure to
/// connect, or an error status (from `error_for_status`) that is transient.
#[must_use]
pub fn is_transient(error: &::reqwest::Error) -> bool {
    error.is_timeout() || error.is_connect() || error.status().is_some_and(is_transient_status)
}

/// Whether a response's status is transient (408, 429, 5xx except 501).
#[must_use]
pub fn is_transient_response(response: &::reqwest::Response) -> bool {
    is_transient_status(response.status())
}

/// The wait a response's `Retry-After` header asks for.
#[must_use]
pub fn retry_after(response: &::reqwest::Response) -> Option<Duration> {
    status::retry_after(response.headers())
}
