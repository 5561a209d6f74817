use retry_runtime::retry;

#[retry(retry_after = |_| 30)]
async fn f() -> Result<(), u32> {
    Ok(())
}

fn main() {}
