use retry_runtime::retry;
use retry_runtime::RetryBudget;

static API_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[retry(budget = API_BUDGET)]
async fn f() -> Result<(), ()> {
    Ok(())
}

fn main() {}
