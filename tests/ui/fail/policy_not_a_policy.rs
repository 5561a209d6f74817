use retry_runtime::retry;

static SETTINGS: &str = "max = 3";

#[retry(policy = &SETTINGS)]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
