use std::time::Duration;

use retry_runtime::retry;

// Several rules, one of the wrong signature: one error, on that rule, with
// `hedge` as without it.
#[retry(
    max = 3,
    hedge = "10ms",
    on = |error: &String| error.is_empty(),
    on_retry = |_: &u32, _: u32, _: Duration| {},
)]
async fn f() -> Result<(), u32> {
    Err(1)
}

fn main() {}
