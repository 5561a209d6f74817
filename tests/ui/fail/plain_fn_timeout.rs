use retry_runtime::retry;

#[retry(timeout = "1s")]
fn f() -> std::io::Result<()> {
    Ok(())
}

fn main() {}
