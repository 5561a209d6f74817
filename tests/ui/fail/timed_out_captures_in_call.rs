use retry_runtime::{retry, TimedOut};

fn deadline_exceeded(_: TimedOut, id: u32) -> tonic::Status {
    tonic::Status::deadline_exceeded(format!("item {id}: attempt timed out"))
}

// An argument passed on in a call is captured all the same: one error, on
// the argument, saying what to write instead.
#[retry(timeout = "1s", timed_out = |cut_off| deadline_exceeded(cut_off, id))]
async fn get(id: u32) -> Result<(), tonic::Status> {
    let _ = id;
    Ok(())
}

fn main() {}
