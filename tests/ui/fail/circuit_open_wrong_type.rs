use retry_runtime::{retry, CircuitBreaker};

static PAYMENTS: CircuitBreaker = CircuitBreaker::new();

// The conversion must build the function's error type.
#[retry(breaker = &PAYMENTS, circuit_open = |_| "circuit open")]
async fn charge() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
