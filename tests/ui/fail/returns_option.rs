use retry_runtime::retry;

#[retry(max = 3)]
async fn f() -> Option<u32> {
    Some(1)
}

fn main() {}
