use retry_runtime::retry;

#[retry(max = 3, on_give_up = "report")]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn report(_: &Result<u16, std::io::Error>, _: &retry_runtime::Stopped) {}

fn main() {}
