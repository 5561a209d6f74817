use retry_runtime::{retry, CircuitBreaker, CircuitOpen};

static INVENTORY: CircuitBreaker = CircuitBreaker::new();

#[derive(Debug)]
pub struct ApiError;

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError
    }
}

#[retry(breaker = INVENTORY)]
async fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
