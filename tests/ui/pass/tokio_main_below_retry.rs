//! `#[retry]` above `#[tokio::main]`: the body is retried inside one runtime.
use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;

static CALLS: AtomicU32 = AtomicU32::new(0);

#[retry(max = 2, base = "1ms")]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err("first attempt fails".to_owned());
    }
    Ok(())
}
