use retry_runtime::retry;

#[retry(jitter = "ful")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
