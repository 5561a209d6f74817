use retry_runtime::retry;

#[retry(on_retry = |error| drop(error))]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
