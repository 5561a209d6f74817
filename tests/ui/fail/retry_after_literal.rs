use retry_runtime::retry;

#[retry(retry_after = 30)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
