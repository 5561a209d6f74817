use retry_runtime::retry;

#[retry(max = 0)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
