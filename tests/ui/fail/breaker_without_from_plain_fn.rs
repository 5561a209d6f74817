use retry_runtime::{retry, CircuitBreaker};

static INVENTORY: CircuitBreaker = CircuitBreaker::new();

#[derive(Debug)]
pub struct ApiError;

#[retry(breaker = &INVENTORY)]
fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
