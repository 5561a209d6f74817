use retry_runtime::retry;

// On the `:`, not on the key.
#[retry(max: 3)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
