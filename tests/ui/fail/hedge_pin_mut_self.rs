use std::pin::Pin;

use retry_runtime::retry;

struct Client {
    calls: u32,
}

impl Client {
    // `self: Pin<&mut Self>` is a `&mut` too: one error, naming `hedge`.
    #[retry(max = 3, hedge = "50ms")]
    async fn get(self: Pin<&mut Self>) -> Result<u32, std::io::Error> {
        let this = self.get_mut();
        this.calls += 1;
        Ok(this.calls)
    }
}

#[retry(max = 3, hedge = "50ms")]
async fn fill(buffer: Pin<&mut Vec<u8>>) -> Result<usize, std::io::Error> {
    Ok(buffer.get_mut().len())
}

fn main() {}
