use retry_runtime::retry;

#[retry(max = 3, hedge = "p100")]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
