//! What both `retry-macros` and `retry-runtime` need, with no dependencies:
//! the duration grammar and the backoff arithmetic.
//!
//! Users depend on `retry-runtime`, which re-exports what is public here
//! ([`parse_duration`], [`DurationError`]). This crate exists so that the
//! attribute, checking a policy while compiling, and the runtime, following
//! it, agree to the nanosecond: the `# Retries` table in a function's docs is
//! computed by the same code that computes its waits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backoff;
mod duration;

pub use duration::{parse_duration, DurationError};
