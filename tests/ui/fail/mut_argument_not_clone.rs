use retry_runtime::retry;

pub struct Batch(Vec<u32>);

#[retry(max = 3)]
async fn send(mut batch: Batch) -> Result<usize, ()> { Ok(batch.0.drain(..).count()) }

fn main() {}
