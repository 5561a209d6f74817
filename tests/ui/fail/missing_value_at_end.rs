use retry_runtime::retry;

#[retry(base = "1s", max = )]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
