use retry_runtime::retry;

#[retry(jitter = equal)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
