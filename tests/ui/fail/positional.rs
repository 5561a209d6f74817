use retry_runtime::retry;

#[retry(3)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
