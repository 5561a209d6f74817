//! Generated code adds no warning, even under the strictest settings.
#![deny(warnings, clippy::pedantic)]

use retry_runtime::retry;

#[derive(Debug)]
pub struct ApiError(u16);

fn is_transient(error: &ApiError) -> bool {
    matches!(error.0, 429 | 502..=504)
}

/// Every key of the attribute.
///
/// # Errors
///
/// The last attempt's error.
#[retry(
    max = 4,
    base = "200ms",
    cap = "10s",
    multiplier = 2,
    jitter = "decorrelated",
    deadline = "30s",
    on = is_transient,
    crate = "::retry_runtime"
)]
pub async fn fetch(id: u64) -> Result<u64, ApiError> {
    if id == 0 {
        return Err(ApiError(503));
    }
    Ok(id)
}

/// Unit success, a closure, and `?`.
///
/// # Errors
///
/// The last attempt's error.
#[retry(on = |e| e.0 >= 500)]
pub async fn store(value: &str) -> Result<(), ApiError> {
    value.parse::<u8>().map_err(|_| ApiError(400))?;
    Ok(())
}

fn main() {
    drop(fetch(1));
    drop(store("1"));
}
