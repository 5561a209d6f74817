use retry_runtime::retry;

#[retry(jitter = "Full")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
