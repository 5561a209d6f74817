use retry_runtime::retry;

#[retry(max = 3,, base = "1s")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
