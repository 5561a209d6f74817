use retry_runtime::{retry, CircuitBreaker};

static INVENTORY: CircuitBreaker = CircuitBreaker::new();

#[derive(Debug)]
pub struct ApiError;

#[retry(max = 3, breaker = &INVENTORY)]
async fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
