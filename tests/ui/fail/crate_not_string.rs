use retry_runtime::retry;

#[retry(crate = retry_runtime)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
