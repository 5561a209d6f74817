use retry_runtime::retry;

#[retry(retry_after_ok = |_| None)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
