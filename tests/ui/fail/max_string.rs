use retry_runtime::retry;

#[retry(max = "4")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
