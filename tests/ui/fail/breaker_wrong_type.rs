use retry_runtime::{retry, CircuitOpen};

#[derive(Debug)]
pub struct ApiError;

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError
    }
}

#[retry(breaker = &5u32)]
async fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
