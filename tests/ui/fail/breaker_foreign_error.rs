use retry_runtime::{retry, CircuitBreaker};

static PAYMENTS: CircuitBreaker = CircuitBreaker::new();

// `tonic::Status` has no `From<CircuitOpen>`: one error, saying to write
// `circuit_open = ...` or a wrapper enum.
#[retry(breaker = &PAYMENTS)]
async fn charge() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
