use retry_runtime::retry;

// `1s` is an integer literal with the suffix `s`: the fix keeps the unit
// the user wrote.
#[retry(base = 1s, cap = 2m, deadline = 1.5h)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
