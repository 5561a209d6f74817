use retry_runtime::retry;

#[retry(cap = "99999999999999999999h")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
