use retry_runtime::retry;

#[retry(multiplier = 0.5)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
