use retry_runtime::retry;

#[retry(multiplier = -2)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
