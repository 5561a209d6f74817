use retry_runtime::{retry, CircuitBreaker, CircuitOpen, RetryBudget};

#[derive(Debug)]
pub struct ApiError;

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError
    }
}

// A `const` is a new value at each use: a breaker or budget borrowed from
// one would be the call's own, shared by no other call. A hedged function
// is refused it as the loop is (it compiled, and its breaker never opened).
const PAYMENTS: CircuitBreaker = CircuitBreaker::new();
const BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[retry(hedge = "50ms", breaker = &PAYMENTS)]
async fn charge() -> Result<(), ApiError> {
    Ok(())
}

#[retry(hedge = "50ms", budget = &BUDGET)]
async fn refund() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
