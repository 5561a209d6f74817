use retry_runtime::retry;

#[retry(max = 3, hedge = "p95")]
async fn f(mut batch: Vec<u64>) -> Result<(), std::io::Error> {
    batch.clear();
    Ok(())
}

fn main() {}
