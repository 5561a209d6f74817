use retry_runtime::retry;

// The whole expression is at fault, not its first token.
#[retry(base = std::time::Duration::from_millis(200))]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
