use retry_runtime::{retry, Policy};

static POLICY: Policy = Policy::new();

#[retry(policy = &POLICY)]
async fn get(client: &reqwest::Client) -> Result<String, reqwest::Error> { client.get("http://localhost/").send().await?.text().await }

fn main() {}
