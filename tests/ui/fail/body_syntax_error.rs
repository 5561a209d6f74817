use retry_runtime::retry;

#[retry(max = 3)]
async fn answer() -> Result<u32, ()> { let x = ; Ok(x) }

fn main() {}
