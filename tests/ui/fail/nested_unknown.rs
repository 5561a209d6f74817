use retry_runtime::retry;

#[retry(nested = "never")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
