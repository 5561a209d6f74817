use retry_runtime::{retry, TimedOut};

fn attempt_timed_out(_: TimedOut) -> &'static str {
    "attempt timed out"
}

// The conversion must build the function's error type: one error, on the
// key's value, not on the whole attribute.
#[retry(timeout = "1s", timed_out = attempt_timed_out)]
async fn get() -> Result<(), tonic::Status> {
    Ok(())
}

// The same for a closure, hedged.
#[retry(timeout = "1s", hedge = "50ms", timed_out = |_| "attempt timed out")]
async fn get_hedged() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
