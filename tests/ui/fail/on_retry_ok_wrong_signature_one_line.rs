use retry_runtime::retry;

#[retry(on_ok = |status: &u16| *status == 503, on_retry_ok = |status: &String, _, _| drop(status))]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
