use std::time::Duration;

use retry_runtime::{retry, Policy, TimedOut};

static POLICY: Policy<TimedOut> = Policy::new().with_timeout(Duration::from_secs(1));

#[retry(policy = &POLICY)]
async fn get(client: &reqwest::Client) -> Result<String, reqwest::Error> { client.get("http://localhost/").send().await?.text().await }

fn main() {}
