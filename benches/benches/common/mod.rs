//! The contenders every benchmark of this package compares: the same cheap
//! dependency call, the same policy (4 attempts, capped exponential backoff
//! from 1 ms with full jitter, only transient errors retried), written by
//! hand, with `#[retry]`, with the closure API, with backon and with
//! tokio-retry2. Included by each benchmark (`mod common;`), so every
//! contender is compiled in the same crate as the code that times it.
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::Retryable;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Jitter, Policy};

#[derive(Debug)]
pub struct Failure(pub bool);

impl From<retry_runtime::TimedOut> for Failure {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Failure(true)
    }
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure(false)
    }
}

pub fn is_transient(error: &Failure) -> bool {
    error.0
}

/// The dependency: fails its first `fail` calls of every `cycle`.
pub struct Dependency {
    calls: AtomicU32,
    fail: u32,
    cycle: u32,
    transient: bool,
}

impl Dependency {
    /// Every call succeeds.
    pub const fn healthy() -> Self {
        Self::new(0, 1, true)
    }

    /// Three transient failures, then a success, over and over.
    pub const fn flaky() -> Self {
        Self::new(3, 4, true)
    }

    /// Every call fails with an error that is not retried.
    pub const fn broken() -> Self {
        Self::new(1, 1, false)
    }

    const fn new(fail: u32, cycle: u32, transient: bool) -> Self {
        Dependency {
            calls: AtomicU32::new(0),
            fail,
            cycle,
            transient,
        }
    }

    /// Cheap on purpose, so that what surrounds it shows; not inlined, as a
    /// network call would not be.
    #[inline(never)]
    pub async fn call(&self, x: u64) -> Result<u64, Failure> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) % self.cycle;
        if call < self.fail {
            Err(Failure(self.transient))
        } else {
            Ok(black_box(x))
        }
    }
}

pub const MAX_ATTEMPTS: u32 = 4;

/// What a careful engineer writes by hand: capped exponential backoff with
/// full jitter.
pub async fn by_hand(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let mut attempt = 1u32;
    loop {
        match dependency.call(x).await {
            Err(error) if attempt < MAX_ATTEMPTS && is_transient(&error) => {
                let ceiling =
                    (Duration::from_millis(1) * 2u32.pow(attempt - 1)).min(Duration::from_secs(10));
                let wait = ceiling.mul_f64(rand::random::<f64>());
                attempt += 1;
                tokio::time::sleep(wait).await;
            }
            outcome => return outcome,
        }
    }
}

/// The same, with a 10 s deadline from the start of the first attempt.
pub async fn by_hand_with_deadline(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let started = tokio::time::Instant::now();
    let mut attempt = 1u32;
    loop {
        match dependency.call(x).await {
            Err(error) if attempt < MAX_ATTEMPTS && is_transient(&error) => {
                let ceiling =
                    (Duration::from_millis(1) * 2u32.pow(attempt - 1)).min(Duration::from_secs(10));
                let wait = ceiling.mul_f64(rand::random::<f64>());
                if started.elapsed() + wait > Duration::from_secs(10) {
                    return Err(error);
                }
                attempt += 1;
                tokio::time::sleep(wait).await;
            }
            outcome => return outcome,
        }
    }
}

#[retry(max = 4, base = "1ms", on = is_transient)]
pub async fn with_attribute(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

#[retry(max = 4, base = "1ms", deadline = "10s", on = is_transient)]
pub async fn with_attribute_and_deadline(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

/// A breaker that stays closed on every path measured here (the flaky
/// dependency fails three calls in four, in a row), so that its row shows
/// what asking and telling it costs, not refusals.
pub static BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_failure_ratio(1.0)
    .with_consecutive_failures(0);

#[retry(max = 4, base = "1ms", on = is_transient, breaker = &BREAKER)]
pub async fn with_attribute_and_breaker(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

pub const POLICY: Policy = Policy::new()
    .with_max_attempts(MAX_ATTEMPTS)
    .with_base(Duration::from_millis(1))
    .with_jitter(Jitter::Full);

pub async fn with_closure(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    POLICY.on(is_transient).run(|| dependency.call(x)).await
}

pub async fn with_backon(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let backoff = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(1))
        .with_max_times(3)
        .with_jitter();
    (|| dependency.call(x))
        .retry(backoff)
        .when(is_transient)
        .await
}

pub async fn with_tokio_retry2(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    use tokio_retry2::strategy::{jitter, ExponentialBackoff};
    use tokio_retry2::{Retry, RetryError};
    let strategy = ExponentialBackoff::from_millis(1).map(jitter).take(3);
    Retry::spawn(strategy, || async {
        dependency.call(x).await.map_err(|error| {
            if is_transient(&error) {
                RetryError::transient(error)
            } else {
                RetryError::permanent(error)
            }
        })
    })
    .await
}

/// Every contender, the hand-written loop first, by the name the tables use.
#[macro_export]
macro_rules! for_each_contender {
    ($m:ident) => {
        $m!("hand-written loop", common::by_hand);
        $m!("#[retry]", common::with_attribute);
        $m!(
            "hand-written loop with deadline",
            common::by_hand_with_deadline
        );
        $m!(
            "#[retry] with deadline",
            common::with_attribute_and_deadline
        );
        $m!("#[retry] with breaker", common::with_attribute_and_breaker);
        $m!("Policy::on(..).run(..)", common::with_closure);
        $m!("backon", common::with_backon);
        $m!("tokio-retry2", common::with_tokio_retry2);
        $m!("hand-written loop again (noise gauge)", common::by_hand);
    };
}

/// A current-thread runtime, its clock paused or not.
pub fn runtime(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(paused)
        .build()
        .expect("a current-thread runtime")
}

/// Counts allocations, then lets the system allocator do the work: each
/// benchmark that reports allocations makes it its global allocator.
pub struct Counting;

/// Allocations made since the process started.
pub static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
