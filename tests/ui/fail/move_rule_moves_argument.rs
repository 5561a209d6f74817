use retry_runtime::retry;

struct Classifier;

impl Classifier {
    fn is_transient(&self, _: &()) -> bool {
        true
    }
}

// A `move` rule would move the argument out at the first attempt: one
// error, on the argument in the rule, saying to remove `move`.
#[retry(on = move |e| classifier.is_transient(e))]
async fn unused_in_body(classifier: Classifier) -> Result<(), ()> {
    Ok(())
}

#[retry(on = move |e| classifier.is_transient(e))]
async fn used_in_body(classifier: Classifier) -> Result<(), ()> {
    let _ = &classifier;
    Ok(())
}

#[retry(on = move |e| classifier.is_transient(e))]
fn blocking(classifier: Classifier) -> Result<(), ()> {
    Ok(())
}

fn main() {}
