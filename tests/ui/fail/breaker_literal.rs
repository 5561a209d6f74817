use retry_runtime::retry;

#[retry(breaker = "inventory")]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
