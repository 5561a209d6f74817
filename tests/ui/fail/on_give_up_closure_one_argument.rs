use retry_runtime::retry;

#[retry(max = 3, on_give_up = |stopped| eprintln!("gave up: {stopped}"))]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
