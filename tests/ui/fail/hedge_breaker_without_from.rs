use retry_runtime::{retry, CircuitBreaker};

static INVENTORY: CircuitBreaker = CircuitBreaker::new();

#[derive(Debug)]
pub struct ApiError;

// With `hedge` too: one error on the breaker, saying to implement the `From`
// or write `circuit_open = ...` (as `breaker_without_from.rs`).
#[retry(max = 3, hedge = "10ms", breaker = &INVENTORY)]
async fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
