use retry_runtime::retry;

#[retry(timeout = 5)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
