use retry_runtime::retry;

#[retry(on = true)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
