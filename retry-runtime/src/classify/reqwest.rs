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
use super::source::find;

/// Whether a reqwest error may go away on a repeat: a timeout, a failure to
/// connect, or an error status (from `error_for_status`) that is transient.
#[must_use]
pub fn is_transient(error: &::reqwest::Error) -> bool {
    error.is_timeout() || error.is_connect() || error.status().is_some_and(is_transient_status)
}

/// Whether the connection closed or was reset before the whole response
/// arrived (hyper's `IncompleteMessage`, a reset, a broken pipe). The server
/// may have acted on the request, so this is transient only for a request
/// that is safe to repeat: see [`is_transient_repeatable`].
#[must_use]
pub fn is_connection_closed(error: &::reqwest::Error) -> bool {
    find::<::hyper::Error>(error).is_some_and(super::hyper::is_transient_repeatable)
        || find::<std::io::Error>(error).is_some_and(|error| {
            matches!(
                error.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        })
}

/// [`is_transient`], and also a connection closed before the response
/// ([`is_connection_closed`]): for a request that is safe to repeat, such
/// as a GET, a PUT, or a POST carrying an idempotency key.
///
/// ```
/// use retry_runtime::{classify::reqwest as transient, retry};
///
/// #[retry(max = 3, on = transient::is_transient_repeatable)]
/// async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
///     client.get(url).send().await
/// }
/// ```
#[must_use]
pub fn is_transient_repeatable(error: &::reqwest::Error) -> bool {
    is_transient(error) || is_connection_closed(error)
}

/// [`is_transient_repeatable`] when the request's method is idempotent (GET,
/// HEAD, OPTIONS, TRACE, PUT, DELETE, RFC 9110 section 9.2.2) or it carries
/// an idempotency key (the [`IdempotencyKey::HEADER`](crate::IdempotencyKey::HEADER)
/// header), [`is_transient`] otherwise: for a function that sends requests
/// of any method.
///
/// ```
/// use reqwest::{header::HeaderMap, Client, Method, Response};
/// use retry_runtime::{classify::reqwest as transient, retry};
///
/// #[retry(max = 3, on = |error| transient::is_transient_for(method, headers, error))]
/// async fn send(
///     client: &Client,
///     method: &Method,
///     headers: &HeaderMap,
///     url: &str,
/// ) -> reqwest::Result<Response> {
///     client.request(method.clone(), url).headers(headers.clone()).send().await
/// }
/// ```
#[must_use]
pub fn is_transient_for(
    method: &::http::Method,
    headers: &::http::HeaderMap,
    error: &::reqwest::Error,
) -> bool {
    if crate::idempotency::is_repeatable(method, headers) {
        is_transient_repeatable(error)
    } else {
        is_transient(error)
    }
}

/// Whether a response's status is transient (408, 429, 5xx except 501). A
/// failure the server marked as one it already retried and gave up on is
/// not retried, as [`http::is_transient_response`](status::is_transient_response)
/// says.
#[must_use]
pub fn is_transient_response(response: &::reqwest::Response) -> bool {
    status::report_mark(is_transient_status(response.status()), response.headers())
}

/// The wait a response's `Retry-After` header asks for.
#[must_use]
pub fn retry_after(response: &::reqwest::Response) -> Option<Duration> {
    status::retry_after(response.headers())
}
