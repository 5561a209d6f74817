use retry_runtime::retry;

// `retries` misspelt is still a count of retries: the error says how to
// write it with `max`, as for `retries` itself.
#[retry(retires = 3)]
async fn f() -> Result<(), ()> {
    Ok(())
}

// So is `retry` given a number, not the hook `on_retry` it is close to.
#[retry(retry = 3)]
async fn g() -> Result<(), ()> {
    Ok(())
}

fn main() {}
