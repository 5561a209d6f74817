use retry_runtime::retry;

#[retry(max = 5000000000)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
