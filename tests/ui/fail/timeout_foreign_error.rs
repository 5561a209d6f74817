use retry_runtime::retry;

#[retry(max = 3, timeout = "2s")]
async fn get(client: &reqwest::Client) -> Result<String, reqwest::Error> { client.get("http://localhost/").send().await?.text().await }

fn main() {}
