use retry_runtime::retry;

#[retry(max = 3)]
const fn answer() -> Result<u32, ()> { Ok(42) }

fn main() {}
