use retry_runtime::retry;

#[retry(max = 3, hedge = "50 millis")]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
