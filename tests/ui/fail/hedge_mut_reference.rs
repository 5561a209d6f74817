use retry_runtime::retry;

#[retry(max = 3, hedge = "50ms")]
async fn f(id: u64, buffer: &mut Vec<u8>) -> Result<(), std::io::Error> {
    buffer.push(id as u8);
    Ok(())
}

fn main() {}
