//! A breaker named at run time costs its calls nothing: asking for a permit
//! and recording a success allocate nothing, for a breaker named with
//! `with_owned_name` as for one named in a `static`, and so does looking up
//! a registry's breaker already made. Alone in its test binary: it counts
//! this thread's allocations with a global allocator of its own.

use std::sync::Arc;

use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::{CircuitBreaker, CircuitState};

#[path = "support/allocations.rs"]
mod counting_allocator;

use counting_allocator::allocations;

#[global_allocator]
static COUNTING: counting_allocator::Counting = counting_allocator::Counting;

static NAMED: CircuitBreaker = CircuitBreaker::new().with_name("inventory");

/// Allocations made by 10 000 successful calls through `breaker`, after a
/// first call that may set the breaker's time zero.
fn successes(breaker: &CircuitBreaker) -> u64 {
    breaker.acquire().unwrap().record(true);
    let before = allocations();
    for _ in 0..10_000 {
        breaker.acquire().unwrap().record(true);
    }
    allocations() - before
}

#[test]
fn successes_allocate_nothing_whatever_the_name() {
    let owned = CircuitBreaker::new().with_owned_name(format!("{}:{}", "users.internal", 443));
    assert_eq!(owned.name(), "users.internal:443");
    assert_eq!(successes(&owned), 0);
    assert_eq!(successes(&NAMED), 0);

    let registry = Registry::new(16, |_host: &str| {
        Upstream::new().with_breaker(CircuitBreaker::new())
    });
    drop(registry.get("users.internal:443"));
    let before = allocations();
    for _ in 0..10_000 {
        let upstream: Arc<Upstream> = registry.get("users.internal:443");
        let breaker = upstream.breaker().unwrap();
        breaker.acquire().unwrap().record(true);
        assert_eq!(breaker.state(), CircuitState::Closed);
    }
    assert_eq!(allocations() - before, 0);
}
