use retry_runtime::retry;

#[retry(cap = "10sec")]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
