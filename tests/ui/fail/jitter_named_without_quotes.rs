use retry_runtime::retry;

// A jitter named without quotes, in any case or as a path: the suggestion is
// the jitter it names (`"none"`), not the default.
#[retry(jitter = None)]
async fn f() -> Result<(), ()> {
    Ok(())
}

#[retry(jitter = Jitter::Equal)]
async fn g() -> Result<(), ()> {
    Ok(())
}

#[retry(jitter = false)]
async fn h() -> Result<(), ()> {
    Ok(())
}

// A name close to none of them: the list, after a `;`.
#[retry(jitter = "exponential")]
async fn i() -> Result<(), ()> {
    Ok(())
}

fn main() {}
