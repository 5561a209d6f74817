//! The expansion names everything by absolute path: a user's own `core`,
//! `std`, `Result` or `Ok` cannot capture it.
#![deny(warnings)]

mod core {}
mod std {}

#[allow(dead_code)]
struct Duration;
#[allow(dead_code)]
struct ControlFlow;
#[allow(dead_code)]
fn sleep() {}

use retry_runtime::retry;

#[retry(max = 2, base = "1ms", deadline = "1s")]
async fn f(attempts: &mut u32) -> ::core::result::Result<u32, ()> {
    *attempts += 1;
    ::core::result::Result::Ok(*attempts)
}

fn main() {
    let mut attempts = 0;
    drop(f(&mut attempts));
}
