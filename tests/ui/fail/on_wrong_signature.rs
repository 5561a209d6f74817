use retry_runtime::retry;

fn is_transient(_: &String) -> bool {
    true
}

#[retry(on = is_transient)]
async fn f() -> Result<(), u32> {
    Err(1)
}

fn main() {}
