use retry_runtime::retry;

// The conversion of a cut-off attempt cannot capture an argument: one error,
// on the capture.
#[retry(timeout = "1s", timed_out = |_| tonic::Status::deadline_exceeded(reason.clone()))]
async fn get(reason: String) -> Result<(), tonic::Status> {
    let _ = reason;
    Ok(())
}

fn main() {}
