use retry_runtime::retry;

#[retry(base = "200 ms")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
