use retry_runtime::retry;

#[retry(maxx = 3)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
