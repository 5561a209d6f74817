use retry_runtime::retry;

#[retry(timeout = "0ms")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
