use std::time::Duration;

use retry_runtime::Policy;

async fn get(client: &reqwest::Client) -> Result<String, reqwest::Error> {
    Policy::new()
        .with_max_attempts(4)
        .with_timeout(Duration::from_secs(2))
        .on(|error: &reqwest::Error| error.is_connect())
        .run(|| async { client.get("http://localhost/").send().await?.text().await })
        .await
}

fn main() {
    drop(get(&reqwest::Client::new()));
}
