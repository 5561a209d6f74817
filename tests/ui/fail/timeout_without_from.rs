use retry_runtime::retry;

#[derive(Debug)]
pub struct ApiError;

#[retry(timeout = "2s")]
async fn f() -> Result<(), ApiError> {
    Ok(())
}

fn main() {}
