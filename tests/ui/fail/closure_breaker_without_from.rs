use retry_runtime::{CircuitBreaker, Policy};

static BREAKER: CircuitBreaker = CircuitBreaker::new();

async fn get(client: &reqwest::Client) -> Result<String, reqwest::Error> {
    Policy::new()
        .with_max_attempts(4)
        .on(|error: &reqwest::Error| error.is_connect())
        .breaker(&BREAKER)
        .run(|| async { client.get("http://localhost/").send().await?.text().await })
        .await
}

fn main() {
    drop(get(&reqwest::Client::new()));
}
