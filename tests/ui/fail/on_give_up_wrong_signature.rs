use retry_runtime::retry;

fn report(error: &std::io::Error, attempts: u32) {
    eprintln!("{error} after {attempts}");
}

#[retry(max = 3, on_give_up = report)]
async fn f() -> Result<u16, std::io::Error> { Ok(200) }

fn main() {}
