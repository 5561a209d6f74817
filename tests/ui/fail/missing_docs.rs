//! A crate that documents its public items.
#![deny(missing_docs)]

use retry_runtime::retry;

#[retry(max = 3)]
pub async fn undocumented() -> Result<u32, ()> { Ok(1) }

fn main() {}
