use retry_runtime::retry;

#[retry(max_retries = 3)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
