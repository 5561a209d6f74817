use retry_runtime::retry;

// Below the smallest duration: not "must be above zero", which the user did
// not write.
#[retry(base = "0.1ns")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
