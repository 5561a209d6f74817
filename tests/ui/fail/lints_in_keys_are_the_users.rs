//! The `allow` that keeps a lint about the return type from being reported
//! again on each key must not cover the user's own code in the keys: an
//! unnecessary qualification written in `timed_out`, `policy`, a hedged
//! call's rules, `on_give_up` or `circuit_open` is reported, once, as it
//! would be in the body (see `expand::split_on_output` and
//! `expand::call_keeping_output`).
#![deny(unused_qualifications)]

use std::convert::identity;
use std::io::{Error, ErrorKind};

use retry_runtime::{retry, CircuitBreaker, Policy};

static POLICY: Policy = Policy::new();

#[retry(max = 3, timeout = "1s", timed_out = |_| std::io::Error::other("timed out"))]
async fn timed_out() -> Result<u32, Error> {
    Ok(1)
}

#[retry(policy = std::convert::identity(&POLICY))]
async fn policy() -> Result<u32, Error> {
    Ok(2)
}

#[retry(max = 3, hedge = "10ms", on = |error: &Error| error.kind() == std::io::ErrorKind::Other)]
async fn hedged() -> Result<u32, Error> {
    Ok(4)
}

static BREAKER: CircuitBreaker = CircuitBreaker::new();

#[retry(max = 3, on_give_up = |_, _| assert_eq!(std::convert::identity(5), 5))]
async fn on_give_up() -> Result<u32, Error> {
    Ok(5)
}

#[retry(max = 3, on_give_up = |_, _| assert_eq!(std::convert::identity(6), 6))]
fn on_give_up_blocking() -> Result<u32, Error> {
    Ok(6)
}

#[retry(breaker = &BREAKER, circuit_open = |_| std::io::Error::other("open"))]
async fn circuit_open() -> Result<u32, Error> {
    Ok(7)
}

#[retry(breaker = &BREAKER, circuit_open = |_| std::io::Error::other("open"))]
fn circuit_open_blocking() -> Result<u32, Error> {
    Ok(8)
}

fn main() {
    let _ = (identity(0), ErrorKind::Other);
}
