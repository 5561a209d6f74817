//! A hedged function, its docs and a method, under the strictest lints.
#![deny(warnings, clippy::pedantic)]

use retry_runtime::retry;

/// Reads a user; hedged after 50 ms.
#[retry(max = 3, hedge = "50ms", timeout = "1s", on = |e| e.kind() == std::io::ErrorKind::TimedOut)]
pub async fn get_user(id: u64, name: String) -> Result<String, std::io::Error> {
    Ok(format!("{id}: {name}"))
}

/// A client.
pub struct Client;

impl Client {
    /// Reads an item; hedged at the 99th percentile.
    #[retry(max = 2, hedge = "p99.9")]
    pub async fn get(&self, id: &str) -> Result<String, std::io::Error> {
        Ok(id.to_owned())
    }
}

fn main() {}
