use retry_runtime::retry;

#[retry(max = 3, circuit_open = |_| tonic::Status::unavailable("circuit open"))]
async fn get() -> Result<(), tonic::Status> {
    Ok(())
}

fn main() {}
