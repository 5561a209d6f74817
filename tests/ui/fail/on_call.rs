use retry_runtime::retry;

fn is_transient(_: &()) -> bool {
    true
}

#[retry(on = is_transient())]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
