use retry_runtime::retry;

#[retry(timeout = "1s", timed_out = "deadline_exceeded")]
async fn get() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
