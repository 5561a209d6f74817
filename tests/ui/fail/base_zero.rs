use retry_runtime::retry;

#[retry(base = "0ms")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
