use retry_runtime::retry;

// `on_retry_ok` is called only for the `Ok` values `on_ok` retries: without
// `on_ok` it would never be called, as `retry_after_ok` would never be read.
#[retry(on_retry_ok = |status, attempt, _| eprintln!("retrying {status} after attempt {attempt}"))]
async fn f() -> Result<u16, ()> {
    Ok(503)
}

fn main() {}
