use retry_runtime::retry;

#[retry(max = 3)]
fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
