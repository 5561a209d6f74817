use retry_runtime::retry;

#[retry(base = "1m")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
