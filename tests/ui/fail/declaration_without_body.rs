use retry_runtime::retry;

pub trait Api {
    #[retry(max = 3)]
    async fn get(&self) -> Result<u32, ()>;
}

fn main() {}
