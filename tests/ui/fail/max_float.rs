use retry_runtime::retry;

#[retry(max = 3.5)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
