use retry_runtime::retry;

#[retry(max = 3)]
async fn f() -> Result<impl std::fmt::Display, ()> {
    Ok(1)
}

fn main() {}
