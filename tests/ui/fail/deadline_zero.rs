use retry_runtime::retry;

#[retry(deadline = "0s")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
