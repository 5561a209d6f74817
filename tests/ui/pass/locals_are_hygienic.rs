//! Arguments named like the expansion's locals still mean the caller's values.
#![deny(warnings)]

use retry_runtime::retry;

#[retry(max = 2, base = "1ms", on = |e| *e > 1)]
async fn f(on: u32, wait: u32, attempts: u32, outcome: u32) -> Result<u32, u32> {
    Ok(on + wait + attempts + outcome)
}

fn main() {
    drop(f(1, 2, 3, 4));
}
