use retry_runtime::retry;

// `crate` written raw, as a keyword elsewhere must be: the compiler's one
// error, not a second one calling `r#crate` an unknown key.
#[retry(r#crate = "::retry_runtime", max = 2)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
