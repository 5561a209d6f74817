//! `retry-suite` holds the integration tests (`tests/`) and examples
//! (`examples/`) of the workspace. It has no code of its own: the tests and
//! examples use `retry-runtime` exactly as a user's service would.

/// Every Rust block of the README, compiled and run as a doctest, so that
/// an example there can never stop compiling unnoticed.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
