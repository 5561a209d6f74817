//! The `allow` that keeps a lint about the return type from being reported
//! again on each key must not cover the user's own code in the keys: an
//! unnecessary qualification written in `timed_out`, `policy` or a hedged
//! call's rules is reported, as it would be in the body. (`on_give_up` and
//! `circuit_open` without `hedge` are still covered: see
//! `expand::split_on_output`.)
#![deny(unused_qualifications)]

use std::convert::identity;
use std::io::{Error, ErrorKind};

use retry_runtime::{retry, Policy};

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

fn main() {
    let _ = (identity(0), ErrorKind::Other);
}
