//! A return type the user over-qualified is one `unused_qualifications`
//! error, on the type they wrote, however many keys copy that type into the
//! expansion.
#![deny(unused_qualifications, elided_lifetimes_in_paths)]

use std::io::Error;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, Policy};

static BREAKER: CircuitBreaker = CircuitBreaker::new();
static POLICY: Policy = Policy::new();

#[retry(max = 3, timeout = "1s", breaker = &BREAKER, on = |_| true, on_give_up = |_, _| {})]
async fn timeout_and_breaker() -> Result<u32, std::io::Error> {
    Ok(1)
}

#[retry(policy = &POLICY, breaker = &BREAKER, on_give_up = |_, _| {})]
async fn policy() -> Result<u32, std::io::Error> {
    Ok(2)
}

#[rustfmt::skip]
#[retry(
    policy = &POLICY,
    timed_out = |_| Error::other("timed out"),
    breaker = &BREAKER,
    circuit_open = |_| Error::other("open"),
    on = |_| true,
    on_ok = |n| *n == 0,
    retry_after = |_| Some(Duration::from_millis(1)),
)]
async fn conversions_and_rules() -> Result<u32, std::io::Error> {
    Ok(3)
}

#[retry(max = 3, timeout = "1s", breaker = &BREAKER, on_give_up = |_, _| {})]
fn blocking() -> Result<u32, std::io::Error> {
    Ok(4)
}

#[retry(max = 3, hedge = "10ms", timeout = "1s", breaker = &BREAKER, on = |_| true, on_give_up = |_, _| {})]
async fn hedged() -> Result<u32, std::io::Error> {
    Ok(5)
}

#[retry(max = 3, hedge = "10ms", breaker = &BREAKER, circuit_open = |_| Error::other("open"))]
async fn hedged_circuit_open() -> Result<u32, std::io::Error> {
    Ok(6)
}

pub struct Page<'a>(&'a str);

// The same for a lifetime the return type hides.
#[retry(max = 3, timeout = "1s", breaker = &BREAKER, circuit_open = |_| Error::other("open"), on = |_| true, on_give_up = |_, _| {})]
async fn hidden_lifetime(text: &str) -> Result<Page, Error> {
    Ok(Page(text))
}

fn main() {}
