use retry_runtime::retry;

#[retry(max = 3)]
pub struct Client {
    pub url: String,
}

fn main() {}
