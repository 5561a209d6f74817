use retry_runtime::retry;

#[retry(max = 3)]
async fn send(body: String) -> Result<usize, ()> {
    let owned = body;
    Ok(owned.len())
}

fn main() {}
