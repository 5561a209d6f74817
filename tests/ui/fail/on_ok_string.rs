use retry_runtime::retry;

#[retry(on_ok = "is_unavailable")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
