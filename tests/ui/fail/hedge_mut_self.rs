use retry_runtime::retry;

struct Client;

impl Client {
    #[retry(max = 3, hedge = "50ms")]
    async fn get(&mut self) -> Result<(), std::io::Error> {
        Ok(())
    }
}

fn main() {}
