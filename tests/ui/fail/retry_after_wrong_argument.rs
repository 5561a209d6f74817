use retry_runtime::retry;

#[retry(retry_after = |_: &String| None)]
async fn f() -> Result<(), u32> {
    Ok(())
}

fn main() {}
