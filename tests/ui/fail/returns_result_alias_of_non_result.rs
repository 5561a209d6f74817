use retry_runtime::{retry, CircuitBreaker};

// An alias named `Result` of a type that is not one: the loop matches an
// `Ok` and an `Err` apart for a return type of that name, yet this is one
// error, on the return type, as for an alias of any other name.
type Result<T> = Option<T>;

static BREAKER: CircuitBreaker = CircuitBreaker::new();

#[retry(max = 3)]
async fn plain() -> Result<u32> {
    Some(1)
}

#[retry(on = |_| true, breaker = &BREAKER, on_give_up = |_, _| ())]
async fn with_keys() -> Result<u32> {
    Some(1)
}

#[retry(max = 3)]
fn blocking() -> Result<u32> {
    Some(1)
}

fn main() {}
