use retry_runtime::retry;

// A `crate` path that does not resolve: one error, on the key, not one for
// each path the expansion writes.
#[retry(crate = "::my_facade::retry_runtime", max = 3, timeout = "1s", on = |_: &std::io::Error| true)]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
