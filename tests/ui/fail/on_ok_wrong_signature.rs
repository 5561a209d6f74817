use retry_runtime::retry;

#[retry(on_ok = |status: &String| status.is_empty())]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
