use retry_runtime::retry;

// The attribute's mistake is reported next to rustc's syntax error.
#[retry(max = 0)]
async fn parse(x: u32,, y: u32) -> Result<u32, std::io::Error> {
    Ok(x + y)
}

fn main() {}
