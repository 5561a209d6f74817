use retry_runtime::retry;

type Answer = u32;

#[retry(max = 3)]
async fn f() -> Answer {
    1
}

fn main() {}
