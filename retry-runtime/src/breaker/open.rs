//! The error of a call the breaker refused.

use core::fmt;

/// The error a call refused by an open [`CircuitBreaker`](crate::CircuitBreaker) fails with,
/// converted into the function's error type by `From`. The body was not run.
///
/// ```
/// use retry_runtime::{retry, CircuitBreaker, CircuitOpen};
///
/// static INVENTORY: CircuitBreaker = CircuitBreaker::new();
///
/// #[derive(Debug)]
/// enum ApiError { Unavailable, Status(u16) }
///
/// impl From<CircuitOpen> for ApiError {
///     fn from(_: CircuitOpen) -> Self { ApiError::Unavailable }
/// }
///
/// #[retry(breaker = &INVENTORY)]
/// async fn reserve() -> Result<(), ApiError> { Ok(()) }
/// ```
///
/// `std::io::Error` converts already, with the kind `Other`, which the
/// [`classify::io`](crate::classify) classifiers do not retry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CircuitOpen;

impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the circuit is open: the call was refused without being made")
    }
}

impl std::error::Error for CircuitOpen {}

impl From<CircuitOpen> for std::io::Error {
    fn from(open: CircuitOpen) -> Self {
        std::io::Error::other(open)
    }
}
