//! Retries done right, as an attribute.
//!
//! ```
//! use retry_runtime::retry;
//!
//! #[derive(Debug)]
//! enum ApiError { Timeout, BadRequest }
//!
//! fn is_transient(error: &ApiError) -> bool {
//!     matches!(error, ApiError::Timeout)
//! }
//!
//! #[retry(max = 4, base = "200ms", cap = "10s", on = is_transient)]
//! async fn fetch_user(id: u64) -> Result<String, ApiError> {
//!     if id == 0 { Err(ApiError::BadRequest) } else { Ok(format!("user {id}")) }
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() { assert_eq!(fetch_user(7).await.unwrap(), "user 7"); }
//! ```
//!
//! `#[retry]` rewrites the function into a loop: each attempt runs the
//! original body afresh; an error that `on` accepts is retried after a wait of
//! capped exponential backoff with jitter, until `max` attempts or the
//! `deadline` are used up; the caller always gets the last attempt's result,
//! unchanged. The keys are checked while compiling.
//!
//! The attribute also honours a server's `Retry-After` (`retry_after`),
//! retries `Ok` values such as an HTTP 503 (`on_ok`), draws from a shared
//! [`RetryBudget`] (`budget`) and cuts off hung attempts (`timeout`); see
//! [`retry`] for every key, and [`classify`] for ready-made classifiers.
//!
//! Without the attribute, the same loop runs over a closure with a
//! [`Policy`] built at run time: see [`Policy::on`] and [`Policy::retry`].
//!
//! # Guarantees
//!
//! - Nothing is spawned and nothing allocates; dropping the future cancels
//!   the call. Waits are `tokio::time::sleep`, so a paused test clock runs a
//!   whole schedule instantly; each wait ends on tokio's next 1 ms tick.
//! - The generated future is `Send` whenever the body's is; the error of a
//!   failed attempt is dropped before the wait.
//! - A panic in the body propagates and is not retried.
//! - No input makes the runtime panic or overflow.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attempts;
mod breaker;
mod budget;
mod circuit;
pub mod classify;
mod clock;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod config;
mod context;
mod decision;
mod driver;
pub mod idempotency;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod integration;
pub mod metrics;
mod observe;
mod policy;
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod reqwest_middleware;
pub mod retry_after;
mod rng;
mod rules;
mod sleep;
mod timeout;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[doc(hidden)]
pub mod __private;

pub use breaker::{CircuitBreaker, CircuitOpen, CircuitPermit};
pub use budget::RetryBudget;
pub use circuit::{CircuitState, Transition};
pub use context::{current_attempt, AttemptContext};
pub use decision::Stop;
pub use driver::{DefaultRetry, Retry};
pub use idempotency::IdempotencyKey;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub use integration::Classification;
pub use policy::{Jitter, Nested, Policy, PolicyError, UnknownJitter, UntimedPolicy};
pub use retry_core::{parse_duration, DurationError};
pub use rng::seed_thread_rng;
pub use timeout::TimedOut;

/// Retries an `async fn` that returns a `Result`.
///
/// ```
/// use retry_runtime::retry;
/// # #[derive(Debug)] struct ApiError;
/// # fn is_transient(_: &ApiError) -> bool { true }
///
/// #[retry(max = 4, base = "200ms", cap = "10s", on = is_transient)]
/// async fn fetch_user(id: u64) -> Result<String, ApiError> {
///     Ok(format!("user {id}"))
/// }
/// ```
///
/// The function keeps its signature, visibility, generics, attributes and
/// docs. Each attempt runs the body afresh, borrowing the arguments; a
/// by-value `mut` argument is cloned for each attempt, so that every attempt
/// starts from what the caller passed (its type must be `Clone`), and nothing
/// else is cloned. The caller gets the last attempt's result, unchanged.
///
/// # Keys
///
/// | key | value | default | meaning |
/// |---|---|---|---|
/// | `max` | integer >= 1 | `3` | attempts in total, the first call included |
/// | `base` | duration string > 0 | `"100ms"` | ceiling of the first backoff |
/// | `cap` | duration string >= base | `"10s"` | no computed backoff exceeds it |
/// | `multiplier` | number >= 1 | `2` | `ceiling(n) = min(cap, base * multiplier^n)`, `n = 0` before the first retry |
/// | `jitter` | `"full"`, `"equal"`, `"decorrelated"`, `"none"` | `"full"` | see [`Jitter`] |
/// | `deadline` | duration string | none | total time from the start of the first attempt; no wait that would pass it is started |
/// | `on` | `Fn(&E) -> bool` | every error | which errors may succeed on a repeat |
/// | `retry_after` | `Fn(&E) -> Option<Duration>` | none | a wait the server asked for; wait `max(hint, backoff) + uniform[0, hint/10]`; a hint above `cap` returns at once |
/// | `on_ok` | `Fn(&T) -> bool` | none | `Ok` values to retry (an HTTP 503); the last one is returned as it came |
/// | `retry_after_ok` | `Fn(&T) -> Option<Duration>` | none | the server's wait, read from an `Ok` value `on_ok` retries |
/// | `budget` | `&'static RetryBudget` | none | a [`RetryBudget`] shared by every call that names it |
/// | `timeout` | duration string | none | each attempt is cut off and fails with `E::from(`[`TimedOut`]`)`; for an error type without that `From` (`reqwest::Error`), bound the attempt in the client instead |
/// | `breaker` | `&CircuitBreaker` | none | a [`CircuitBreaker`] shared by every call that names it; a refused call fails with `E::from(`[`CircuitOpen`]`)` |
/// | `on_retry` | `Fn(&E, u32, Duration)` | none | called before each wait with the error, the attempt number and the wait |
/// | `on_retry_ok` | `Fn(&T, u32, Duration)` | none | the same for an `Ok` value `on_ok` retries |
/// | `nested` | `"once"`, `"retry"` | `"once"` | on an outer function: return at once a failed attempt in which an inner retried function already gave up after retrying, or retry it anyway; see [`Nested`] |
/// | `policy` | `&Policy` or `&UntimedPolicy` | none | a [`Policy`] built at run time instead of the keys `max` .. `nested`; a `&Policy` needs `E: From<TimedOut>`, for any other error type pass `&policy.untimed()?` |
/// | `crate` | string holding a path | `"::retry_runtime"` | where this crate is, if renamed |
///
/// A plain (non-async) `fn` works too: waits are `std::thread::sleep`, the
/// deadline runs on the real clock, and every key applies; since a blocking
/// call cannot be cut off, an attempt that returns after its `timeout` counts
/// as timed out.
///
/// `#[retry]` works under `#[async_trait]` (on impls and on default methods of
/// traits), and above or below `#[tracing::instrument]`, `#[tokio::test]`,
/// `#[test]`, `#[tokio::main]` and axum's `#[debug_handler]`.
///
/// Durations are a number and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`),
/// largest first: `"200ms"`, `"1.5s"`, `"1m30s"`. Every key is checked while
/// compiling; a mistake is one error on the token at fault.
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use retry_macros::retry;
