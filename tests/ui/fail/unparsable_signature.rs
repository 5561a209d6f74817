use retry_runtime::retry;

// rustc's own syntax error, and nothing about `#[retry]`.
#[retry(max = 3)]
fn parse(x: u32,, y: u32) -> Result<u32, std::io::Error> {
    Ok(x + y)
}

fn main() {}
