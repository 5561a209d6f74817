use retry_runtime::retry;

#[retry(max = 3)]
async fn f() {}

fn main() {}
