//! `#[tokio::main]` above `#[retry]`: the whole `main` is retried, a fresh
//! runtime for each attempt.
use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;

static CALLS: AtomicU32 = AtomicU32::new(0);

#[tokio::main(flavor = "current_thread")]
#[retry(max = 2, base = "1ms")]
async fn main() -> Result<(), String> {
    if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err("first attempt fails".to_owned());
    }
    Ok(())
}
