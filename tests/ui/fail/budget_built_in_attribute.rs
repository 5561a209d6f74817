use retry_runtime::{retry, CircuitOpen};

#[derive(Debug)]
pub struct ApiError;

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError
    }
}

// A budget or breaker built in the attribute would be a new one at each
// call, shared by none: one error each, saying to declare a `static`, not
// the compiler's "temporary value dropped while borrowed" (nor its "consider
// borrowing here", which leads to it).
#[retry(budget = &retry_runtime::RetryBudget::new(100, 0.1))]
async fn borrowed() -> Result<(), ApiError> {
    Ok(())
}

#[retry(budget = retry_runtime::RetryBudget::new(100, 0.1))]
async fn by_value() -> Result<(), ApiError> {
    Ok(())
}

#[retry(breaker = &retry_runtime::CircuitBreaker::new().with_name("inventory"))]
async fn breaker() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
