use retry_runtime::retry;

fn is_transient(_: &String) -> bool {
    true
}

// With `hedge` too, a rule of the wrong signature is one error, on the rule.
#[retry(max = 3, hedge = "10ms", on = is_transient)]
async fn f() -> Result<(), u32> {
    Err(1)
}

fn main() {}
