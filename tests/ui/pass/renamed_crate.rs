//! `crate = "..."` points the expansion at a re-export of the runtime.
#![deny(warnings)]

mod rt {
    pub use retry_runtime::*;
}

#[rt::retry(max = 2, base = "1ms", crate = "crate::rt")]
async fn f() -> Result<u32, ()> {
    Ok(1)
}

fn main() {
    drop(f());
}
