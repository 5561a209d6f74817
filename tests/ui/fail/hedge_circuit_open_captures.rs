use retry_runtime::{retry, CircuitBreaker, CircuitOpen};

static BREAKER: CircuitBreaker = CircuitBreaker::new();

#[derive(Debug)]
enum Error {
    Open(u32),
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open(0)
    }
}

// Hedged attempts keep the conversion for the whole call: it may capture
// nothing (without `hedge` it may).
#[retry(max = 2, hedge = "10ms", breaker = &BREAKER, circuit_open = |_| Error::Open(id))]
async fn hedged(id: u32) -> Result<u32, Error> {
    Ok(id)
}

fn main() {}
