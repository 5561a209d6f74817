use retry_runtime::retry;

#[retry(deadline = "30")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
