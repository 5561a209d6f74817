use retry_runtime::retry;

pub struct Batch(Vec<u64>);

// A `mut` binding inside a pattern is a by-value `mut` argument too: the
// attempts run at the same time and cannot share it.
#[retry(max = 3, hedge = "10ms")]
async fn f(Batch(mut items): Batch) -> Result<usize, std::io::Error> {
    items.push(1);
    Ok(items.len())
}

fn main() {}
