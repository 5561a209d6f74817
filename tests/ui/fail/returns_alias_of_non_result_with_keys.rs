use retry_runtime::{retry, CircuitBreaker, Policy};

// An alias of a type that is not a `Result`: one error, on the return type,
// whichever keys are written.
type Answer = Option<u32>;

static BREAKER: CircuitBreaker = CircuitBreaker::new();
static POLICY: Policy = Policy::new();

#[retry(timeout = "1s")]
async fn timed() -> Answer {
    Some(1)
}

#[retry(on = |_| true)]
async fn ruled() -> Answer {
    Some(1)
}

#[retry(breaker = &BREAKER)]
async fn guarded() -> Answer {
    Some(1)
}

#[retry(timeout = "1s", timed_out = |_| (), on = |_| true, breaker = &BREAKER)]
async fn every_key() -> Answer {
    Some(1)
}

#[retry(policy = &POLICY)]
async fn configured() -> Answer {
    Some(1)
}

#[retry(timeout = "1s")]
fn blocking() -> Answer {
    Some(1)
}

fn main() {}
