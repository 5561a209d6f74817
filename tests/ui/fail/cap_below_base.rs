use retry_runtime::retry;

#[retry(base = "2s", cap = "1s")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
