//! A breaker named at run time costs its calls nothing: asking for a permit
//! and recording a success allocate nothing, for a breaker named with
//! `with_owned_name` as for one named in a `static`, and so does looking up
//! a registry's breaker already made. Alone in its test binary: it counts
//! this thread's allocations with a global allocator of its own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::{CircuitBreaker, CircuitState};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

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
