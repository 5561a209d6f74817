//! A hedged function's attempts borrow its arguments at once, so its future
//! is `Send` only when a by-value argument is `Sync` too. Spawned, the error
//! names the type that is not `Sync`, and its notes point at `hedge`, not at
//! another key.
use std::cell::Cell;

use retry_runtime::retry;

#[derive(Debug)]
struct Unavailable;

fn is_transient(_: &Unavailable) -> bool {
    true
}

#[retry(max = 3, hedge = "50ms", on = is_transient)]
async fn count(counter: Cell<u32>) -> Result<u32, Unavailable> {
    counter.set(counter.get() + 1);
    Ok(counter.get())
}

#[tokio::main]
async fn main() {
    let _ = tokio::spawn(count(Cell::new(0))).await;
}
