use retry_runtime::retry;

#[retry(max, base = "1s")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
