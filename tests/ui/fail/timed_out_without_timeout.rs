use retry_runtime::retry;

#[retry(max = 3, timed_out = |_| tonic::Status::deadline_exceeded("attempt timed out"))]
async fn get() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
