use retry_runtime::retry;

#[retry(budget = &5u32)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
