use retry_runtime::retry;

pub struct Cache {
    value: String,
}

impl Cache {
    // `self: &mut Self` is `&mut self`: the one error of
    // `mut_self_returns_borrow.rs`, not the borrow checker's two.
    #[allow(clippy::needless_arbitrary_self_type)]
    #[retry(max = 3)]
    pub async fn get(self: &mut Self) -> Result<&str, ()> {
        Ok(&self.value)
    }
}

fn main() {}
