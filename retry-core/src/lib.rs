//! What both `retry-macros` and `retry-runtime` need, with no dependencies:
//! the duration grammar and the backoff arithmetic.
//!
//! Users depend on `retry-runtime`, which re-exports what is public here
//! ([`parse_duration`], [`DurationError`]). This crate exists so that the
//! attribute, checking a policy while compiling, and the runtime, following
//! it, agree to the nanosecond: the `# Retries` table in a function's docs is
//! computed by the same code that computes its waits.
//!
//! `no_std`: it needs only `core` and `alloc` (for the unit named in
//! [`DurationError::UnknownUnit`]). The `std` feature, on by default, makes
//! the backoff arithmetic use the standard library's `powf` for multipliers
//! that are not whole numbers; without it they are raised by repeated
//! squaring, which agrees with `powf` to a few parts in 10^15 (a
//! nanosecond or two on waits of days).
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod backoff;
mod duration;

pub use duration::{parse_duration, DurationError, UNITS};
