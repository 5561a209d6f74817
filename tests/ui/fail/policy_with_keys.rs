use retry_runtime::retry;
use retry_runtime::Policy;

static POLICY: Policy = Policy::new();

#[retry(policy = &POLICY, max = 4)]
async fn f() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
