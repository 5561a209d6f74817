use retry_runtime::{retry, CircuitBreaker, Policy};

// An alias named `Result` of a type that is not one: the loop matches an
// `Ok` and an `Err` apart, yet this is one error, on the return type, with
// every key that binds the return type (a generic alias: its first and last
// tokens differ).
type Result<T> = Option<T>;

static BREAKER: CircuitBreaker = CircuitBreaker::new();
static POLICY: Policy = Policy::new();

#[retry(max = 3)]
async fn plain() -> Result<u32> {
    Some(1)
}

#[retry(on = |_| true, breaker = &BREAKER, on_give_up = |_, _| ())]
async fn with_keys() -> Result<u32> {
    Some(1)
}

#[retry(timeout = "1s")]
async fn timed() -> Result<u32> {
    Some(1)
}

#[retry(policy = &POLICY, on_give_up = |_, _| ())]
async fn configured() -> Result<u32> {
    Some(1)
}

#[retry(timeout = "1s")]
fn blocking() -> Result<u32> {
    Some(1)
}

fn main() {}
