//! A key written as a raw identifier is that key.
#![deny(warnings)]

use retry_runtime::retry;

#[retry(r#max = 2, r#base = "1ms", r#on = |_: &()| true)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {
    drop(f());
}
