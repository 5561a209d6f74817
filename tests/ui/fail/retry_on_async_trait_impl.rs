use async_trait::async_trait;
use retry_runtime::retry;

#[async_trait]
trait Store {
    async fn get(&self) -> Result<u32, ()>;
}

struct Remote;

#[retry(max = 3)]
#[async_trait]
impl Store for Remote {
    async fn get(&self) -> Result<u32, ()> { Ok(1) }
}

fn main() {}
