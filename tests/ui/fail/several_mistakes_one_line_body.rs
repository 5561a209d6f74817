use retry_runtime::retry;

pub struct Client;

impl Client {
    async fn get(&self) -> Result<u32, ()> { Ok(1) }
}

#[retry(max = 0, base = 200, jiter = "full", cap = "1x")]
async fn get(client: &Client) -> Result<u32, ()> { client.get().await }

fn main() {}
