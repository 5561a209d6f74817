//! A `move` rule may copy a `Copy` argument, or move a reference.
#![deny(warnings)]

use retry_runtime::retry;

struct Classifier;

impl Classifier {
    fn is_transient(&self, _: &u32) -> bool {
        true
    }
}

#[retry(on = move |e: &u32| *e < limit)]
async fn copied(limit: u32) -> Result<(), u32> {
    Err(limit)
}

#[retry(on = move |e| classifier.is_transient(e))]
async fn borrowed(classifier: &Classifier) -> Result<(), u32> {
    let _ = classifier;
    Err(1)
}

fn main() {
    drop(copied(1));
    drop(borrowed(&Classifier));
}
