use retry_runtime::retry;

#[retry(base = 200)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
