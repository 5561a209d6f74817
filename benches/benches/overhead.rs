//! `cargo bench --bench overhead`
//!
//! What `#[retry]` costs over a hand-written loop, and how it compares with
//! the closure API and with the peer crates backon and tokio-retry2, in the
//! same run:
//!
//! - `success`: the first attempt succeeds, the path almost every call takes;
//! - `permanent`: the first attempt fails with an error that is not retried;
//! - `retried`: two failures then a success, with 1 ms base waits on a paused
//!   clock, so the timer is exercised but no real time passes.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::Retryable;
use criterion::{criterion_group, criterion_main, Criterion};
use retry_runtime::{retry, Jitter, Policy};

#[derive(Debug)]
struct Failure(bool);

impl From<retry_runtime::TimedOut> for Failure {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Failure(true)
    }
}

fn is_transient(error: &Failure) -> bool {
    error.0
}

/// The dependency: fails its first `fail` calls of every `cycle`.
struct Dependency {
    calls: AtomicU32,
    fail: u32,
    cycle: u32,
    transient: bool,
}

impl Dependency {
    const fn new(fail: u32, cycle: u32, transient: bool) -> Self {
        Dependency {
            calls: AtomicU32::new(0),
            fail,
            cycle,
            transient,
        }
    }

    #[inline(never)]
    async fn call(&self, x: u64) -> Result<u64, Failure> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) % self.cycle;
        if call < self.fail {
            Err(Failure(self.transient))
        } else {
            Ok(black_box(x))
        }
    }
}

#[retry(max = 3, base = "1ms", on = is_transient)]
async fn with_attribute(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

#[retry(max = 3, base = "1ms", deadline = "10s", on = is_transient)]
async fn with_attribute_and_deadline(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

/// What a careful engineer writes by hand: capped exponential backoff with
/// full jitter.
async fn by_hand(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let mut attempt = 1u32;
    loop {
        match dependency.call(x).await {
            Err(error) if attempt < 3 && is_transient(&error) => {
                let ceiling = Duration::from_millis(1) * 2u32.pow(attempt - 1);
                let wait = ceiling.mul_f64(rand::random::<f64>());
                attempt += 1;
                tokio::time::sleep(wait).await;
            }
            outcome => return outcome,
        }
    }
}

const POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(1))
    .with_jitter(Jitter::Full);

async fn with_closure(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    POLICY.on(is_transient).run(|| dependency.call(x)).await
}

async fn with_backon(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let backoff = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(1))
        .with_max_times(2)
        .with_jitter();
    (|| dependency.call(x))
        .retry(backoff)
        .when(is_transient)
        .await
}

async fn with_tokio_retry2(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    use tokio_retry2::strategy::{jitter, ExponentialBackoff};
    use tokio_retry2::{Retry, RetryError};
    let strategy = ExponentialBackoff::from_millis(1).map(jitter).take(2);
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

macro_rules! contenders {
    ($group:expr, $runtime:expr, $dependency:expr) => {{
        let dependency = $dependency;
        $group.bench_function("hand-written loop", |b| {
            b.to_async($runtime).iter(|| by_hand(&dependency, 7))
        });
        $group.bench_function("#[retry]", |b| {
            b.to_async($runtime).iter(|| with_attribute(&dependency, 7))
        });
        $group.bench_function("#[retry] with deadline", |b| {
            b.to_async($runtime)
                .iter(|| with_attribute_and_deadline(&dependency, 7))
        });
        $group.bench_function("Policy::on(..).run(..)", |b| {
            b.to_async($runtime).iter(|| with_closure(&dependency, 7))
        });
        $group.bench_function("backon", |b| {
            b.to_async($runtime).iter(|| with_backon(&dependency, 7))
        });
        $group.bench_function("tokio-retry2", |b| {
            b.to_async($runtime)
                .iter(|| with_tokio_retry2(&dependency, 7))
        });
    }};
}

fn runtime(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(paused)
        .build()
        .expect("a current-thread runtime")
}

fn benches(c: &mut Criterion) {
    let live = runtime(false);
    let paused = runtime(true);

    let mut group = c.benchmark_group("success");
    contenders!(group, &live, Dependency::new(0, 1, true));
    group.finish();

    let mut group = c.benchmark_group("permanent");
    contenders!(group, &live, Dependency::new(1, 1, false));
    group.finish();

    let mut group = c.benchmark_group("retried");
    contenders!(group, &paused, Dependency::new(2, 3, true));
    group.finish();
}

criterion_group!(overhead, benches);
criterion_main!(overhead);
