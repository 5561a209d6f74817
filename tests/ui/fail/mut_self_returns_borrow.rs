use retry_runtime::retry;

pub struct Cache {
    value: String,
}

impl Cache {
    #[retry(max = 3)]
    pub async fn get(&mut self) -> Result<&str, ()> {
        Ok(&self.value)
    }
}

fn main() {}
