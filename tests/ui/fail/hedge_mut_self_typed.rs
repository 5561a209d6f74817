use retry_runtime::retry;

struct Client {
    calls: u32,
}

impl Client {
    // `self: &mut Self` is `&mut self`: one error, naming `hedge`.
    #[allow(clippy::needless_arbitrary_self_type)]
    #[retry(max = 3, hedge = "50ms")]
    async fn get(self: &mut Self) -> Result<u32, std::io::Error> {
        self.calls += 1;
        Ok(self.calls)
    }
}

fn main() {}
