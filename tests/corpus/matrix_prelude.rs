// Shared by corpus_matrix.rs and corpus_pairs.rs (included with `include!`).
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{CircuitBreaker, CircuitOpen, Policy, RetryBudget, TimedOut};

/// The one error type of the matrix: it converts from `TimedOut` and
/// `CircuitOpen`, so `timeout` and `breaker` work without their keys.
#[derive(Debug, PartialEq, Eq)]
struct Fail(u32);

impl From<TimedOut> for Fail {
    fn from(_: TimedOut) -> Self {
        Fail(0)
    }
}

impl From<CircuitOpen> for Fail {
    fn from(_: CircuitOpen) -> Self {
        Fail(0)
    }
}

/// A dependency that fails its first call and answers the rest with the
/// call's number.
#[derive(Default)]
struct Dep(AtomicU32);

impl Dep {
    fn call(&self) -> Result<u32, Fail> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            Err(Fail(n))
        } else {
            Ok(n)
        }
    }

    fn calls(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

trait Call {
    fn call(&self) -> Result<u32, Fail>;
}

impl Call for Dep {
    fn call(&self) -> Result<u32, Fail> {
        Dep::call(self)
    }
}

fn assert_send<T: Send>(_: &T) {}

static BUDGET: RetryBudget = RetryBudget::new(1_000, 1.0);
static BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_failure_ratio(0.95)
    .with_consecutive_failures(1_000)
    .with_name("matrix");
static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(1));
