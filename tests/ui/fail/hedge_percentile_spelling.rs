use retry_runtime::retry;

// A percentile written with a capital `P`, or as `95%`: the error spells
// it `"p95"`.
#[retry(max = 3, hedge = "P95")]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

#[retry(max = 3, hedge = "99.9%")]
async fn g() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
