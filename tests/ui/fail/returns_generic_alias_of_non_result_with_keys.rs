use retry_runtime::{retry, CircuitBreaker, Policy};

// A generic alias of a type that is not a `Result` (several tokens, so the
// return type's first and last tokens differ): one error, on the return
// type, with the keys that cut an attempt off as well.
type Maybe<T> = Option<T>;

static BREAKER: CircuitBreaker = CircuitBreaker::new();
static POLICY: Policy = Policy::new();

#[retry(timeout = "1s")]
async fn timed() -> Maybe<u32> {
    Some(1)
}

#[retry(policy = &POLICY)]
async fn configured() -> Maybe<u32> {
    Some(1)
}

#[retry(policy = &POLICY, timed_out = |_| ())]
async fn configured_timed_out() -> Maybe<u32> {
    Some(1)
}

#[retry(timeout = "1s", timed_out = |_| (), on = |_| true, breaker = &BREAKER)]
async fn every_key() -> Maybe<u32> {
    Some(1)
}

#[retry(timeout = "1s")]
fn blocking() -> Maybe<u32> {
    Some(1)
}

fn main() {}
