//! A by-value `mut` argument whose type is not `Clone` is carried across
//! attempts, as a `&mut` argument would be: it compiles, and asks nothing of
//! the type.
#![deny(warnings, clippy::pedantic)]

use retry_runtime::retry;

pub struct Batch(Vec<u32>);

/// Sends what is left of the batch.
///
/// # Errors
///
/// Never.
#[retry(max = 3)]
pub async fn send(mut batch: Batch) -> Result<usize, ()> { Ok(batch.0.drain(..).count()) }

fn main() {}
