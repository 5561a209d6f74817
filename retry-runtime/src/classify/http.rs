//! HTTP status codes and the `Retry-After` header, for the `http` crate's
//! types (which hyper, axum and reqwest share).
//!
//! ```
//! use retry_runtime::{classify::http, retry};
//!
//! # struct Client;
//! # impl Client { async fn send(&self) -> Result<::http::Response<()>, std::io::Error> { Ok(::http::Response::new(())) } }
//! #[retry(
//!     max = 4,
//!     on_ok = http::is_transient_response,
//!     retry_after_ok = http::response_retry_after,
//! )]
//! async fn call(client: &Client) -> Result<::http::Response<()>, std::io::Error> {
//!     client.send().await
//! }
//! ```

use std::time::Duration;

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod classifier;
#[cfg(feature = "tower")]
pub(crate) use classifier::is_grpc;
#[cfg(feature = "tower")]
pub use classifier::BoxedHttpClassifier;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub use classifier::{Classify, HttpClassifier};

use ::http::header::{AsHeaderName, RETRY_AFTER};
use ::http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};

/// The mark of a failure a server's inner call gave up on, with the inner
/// stop reason (`exhausted`, `deadline`, ...): `tower::ServerLayer` writes
/// it, and a client does not retry the answer (DESIGN §4.17).
pub(crate) const EXHAUSTED: HeaderName = HeaderName::from_static("retry-exhausted");

/// Envoy's mark of a request it shed, or whose upstream it found overloaded.
const OVERLOADED: HeaderName = HeaderName::from_static("x-envoy-overloaded");

/// Tells the call judging a response that the server below gave up on it:
/// a failure (a transient HTTP status; a gRPC status other than OK) marked
/// `retry-exhausted` (a `ServerLayer`'s) or `x-envoy-overloaded` (an
/// Envoy's). A mark that is empty or repeated is ignored. Returns `failed`.
pub(crate) fn report_mark(failed: bool, headers: &HeaderMap) -> bool {
    let once = |name| one(headers, name).is_some_and(|value| !value.is_empty());
    if failed && (once(EXHAUSTED) || once(OVERLOADED)) {
        crate::context::below::gave_up_below(crate::context::Below::GaveUp);
    }
    failed
}

/// The header's value when it has exactly one.
pub(crate) fn one(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(value)
}

/// Whether a status says "try again later": 408 Request Timeout, 429 Too
/// Many Requests, and every 5xx except 501 Not Implemented (which will not
/// start working on a repeat).
///
/// ```
/// use http::StatusCode;
/// use retry_runtime::classify::http::is_transient_status;
///
/// assert!(is_transient_status(StatusCode::SERVICE_UNAVAILABLE));
/// assert!(is_transient_status(StatusCode::TOO_MANY_REQUESTS));
/// assert!(!is_transient_status(StatusCode::NOT_IMPLEMENTED));
/// assert!(!is_transient_status(StatusCode::NOT_FOUND));
/// ```
#[must_use]
pub fn is_transient_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429)
        || (status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED)
}

/// The wait the `Retry-After` header asks for, if there is one and it parses
/// (see [`retry_after::parse`](crate::retry_after::parse)).
#[must_use]
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    crate::retry_after::parse(headers.get(RETRY_AFTER)?.to_str().ok()?)
}

/// Whether a response's status is transient: for `on_ok`. A failure the
/// server marked as one it already retried and gave up on
/// (`retry-exhausted`, Envoy's `x-envoy-overloaded`) is not retried: the
/// call stops with reason `nested`, and counts it as a failure (DESIGN
/// §4.17).
#[must_use]
pub fn is_transient_response<B>(response: &Response<B>) -> bool {
    report_mark(is_transient_status(response.status()), response.headers())
}

/// A response's `Retry-After`: for `retry_after_ok`.
#[must_use]
pub fn response_retry_after<B>(response: &Response<B>) -> Option<Duration> {
    retry_after(response.headers())
}
