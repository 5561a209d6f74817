use retry_runtime::retry;

// A unit of another spelling inside the string gets the fix the bare literal
// `5sec` gets, the last number of a longer string too.
#[retry(base = "1sec", deadline = "1m30sec")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
