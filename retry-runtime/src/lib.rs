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
//! Without the attribute, the same loop runs over a closure with a
//! [`Policy`] built at run time: see [`Policy::on`] and [`Policy::retry`].
//!
//! # Guarantees
//!
//! - Nothing is spawned and nothing allocates; dropping the future cancels
//!   the call. Waits are `tokio::time::sleep`, so a paused test clock runs a
//!   whole schedule instantly and exactly.
//! - The generated future is `Send` whenever the body's is; the error of a
//!   failed attempt is dropped before the wait.
//! - A panic in the body propagates and is not retried.
//! - No input makes the runtime panic or overflow.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
pub mod classify;
mod driver;
mod duration;
mod policy;
pub mod retry_after;
mod rng;

#[doc(hidden)]
pub mod __private;

pub use budget::RetryBudget;
pub use driver::{DefaultRetry, Retry, Stop, TimedOut};
pub use duration::{parse_duration, DurationError};
pub use policy::{Jitter, Policy, PolicyError, UnknownJitter};
pub use rng::seed_thread_rng;

/// Retries an `async fn` that returns a `Result`. See the [crate docs](crate).
#[cfg(feature = "macros")]
pub use retry_macros::retry;
