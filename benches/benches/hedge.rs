//! `cargo bench -p retry-benches --bench hedge`
//!
//! What hedging costs a call that answers before the hedge delay, the path
//! almost every hedged call takes: `#[retry(hedge = "50ms")]` and
//! `hedge = "p95"` next to the plain attribute, a hand-written hedge with
//! `tokio::select!` and tower's `hedge` middleware. First the size of each
//! call's future and its heap allocations (a counting allocator, 1,000
//! calls after 1,000 to warm up), then criterion's time per call.

mod common;

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{is_transient, Dependency, Failure};
use criterion::Criterion;
use retry_runtime::retry;
use tower::{Service, ServiceExt};

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

const DELAY: Duration = Duration::from_millis(50);

static HEALTHY: Dependency = Dependency::healthy();

/// The plain attribute: no hedge, the reference.
#[retry(max = 3, base = "1ms", on = is_transient)]
async fn plain(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

#[retry(max = 3, base = "1ms", on = is_transient, hedge = "50ms")]
async fn hedged(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

#[retry(max = 3, base = "50ms", on = is_transient, hedge = "p95")]
async fn hedged_p95(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    dependency.call(x).await
}

/// A hedge written by hand: a second copy if the first has not answered
/// after the delay, the first answer wins. (No retry of failures, no
/// budget, no third copy: the least a hedge can be.)
async fn by_hand(dependency: &Dependency, x: u64) -> Result<u64, Failure> {
    let first = dependency.call(x);
    tokio::pin!(first);
    tokio::select! {
        biased;
        outcome = &mut first => return outcome,
        () = tokio::time::sleep(DELAY) => {}
    }
    let second = dependency.call(x);
    tokio::pin!(second);
    tokio::select! {
        outcome = &mut first => outcome,
        outcome = &mut second => outcome,
    }
}

#[derive(Clone)]
struct Clones;

impl tower::hedge::Policy<u64> for Clones {
    fn clone_request(&self, request: &u64) -> Option<u64> {
        Some(*request)
    }

    fn can_retry(&self, _: &u64) -> bool {
        true
    }
}

/// tower's `hedge` middleware: a copy after the 95th percentile of the
/// latencies it has seen (once it has seen 10, in 10 s windows).
fn tower_hedge() -> impl Service<u64, Response = u64, Error = tower::BoxError> {
    let service = tower::service_fn(|x: u64| async move {
        HEALTHY
            .call(x)
            .await
            .map_err(|_| std::io::Error::other("failed"))
    });
    tower::hedge::Hedge::new(service, Clones, 10, 0.95, Duration::from_secs(10))
}

async fn with_tower<S>(service: &mut S, x: u64) -> Result<u64, Failure>
where
    S: Service<u64, Response = u64, Error = tower::BoxError>,
{
    let ready = service.ready().await.map_err(|_| Failure(false))?;
    ready.call(x).await.map_err(|_| Failure(false))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

const CALLS: u64 = 1_000;

fn footprint(runtime: &tokio::runtime::Runtime) {
    println!("| contender | size of the future | allocations per call |");
    println!("|---|---|---|");
    macro_rules! row {
        ($name:expr, $call:expr) => {{
            let per_call = runtime.block_on(async {
                for x in 0..CALLS {
                    black_box($call(x).await).ok();
                }
                let before = common::ALLOCATIONS.load(Ordering::Relaxed);
                for x in 0..CALLS {
                    black_box($call(x).await).ok();
                }
                #[allow(clippy::cast_precision_loss)]
                let per_call =
                    (common::ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / CALLS as f64;
                per_call
            });
            println!(
                "| {} | {} B | {per_call} |",
                $name,
                std::mem::size_of_val(&$call(7))
            );
        }};
    }
    row!("#[retry] (no hedge)", |x| plain(&HEALTHY, x));
    row!("#[retry(hedge = \"50ms\")]", |x| hedged(&HEALTHY, x));
    row!("#[retry(hedge = \"p95\")]", |x| hedged_p95(&HEALTHY, x));
    row!("hand-written hedge (tokio::select!)", |x| by_hand(
        &HEALTHY, x
    ));
    let mut tower = tower_hedge();
    let tower = &mut tower;
    runtime.block_on(async {
        for x in 0..CALLS {
            black_box(with_tower(tower, x).await).ok();
        }
        let before = common::ALLOCATIONS.load(Ordering::Relaxed);
        for x in 0..CALLS {
            black_box(with_tower(tower, x).await).ok();
        }
        #[allow(clippy::cast_precision_loss)]
        let per_call = (common::ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / CALLS as f64;
        println!(
            "| tower::hedge (ready + call) | {} B | {per_call} |",
            std::mem::size_of_val(&with_tower(tower, 7))
        );
    });
}

fn benches(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("answer before the hedge delay");
    group.bench_function("#[retry] (no hedge)", |b| {
        b.to_async(runtime).iter(|| plain(black_box(&HEALTHY), 7));
    });
    group.bench_function("#[retry(hedge = \"50ms\")]", |b| {
        b.to_async(runtime).iter(|| hedged(black_box(&HEALTHY), 7));
    });
    group.bench_function("#[retry(hedge = \"p95\")]", |b| {
        b.to_async(runtime)
            .iter(|| hedged_p95(black_box(&HEALTHY), 7));
    });
    group.bench_function("hand-written hedge (tokio::select!)", |b| {
        b.to_async(runtime).iter(|| by_hand(black_box(&HEALTHY), 7));
    });
    let tower = std::cell::RefCell::new(tower_hedge());
    group.bench_function("tower::hedge", |b| {
        // Criterion runs one iteration after the other on this thread, so
        // the borrow held across the call's awaits is never contended.
        #[allow(clippy::await_holding_refcell_ref)]
        b.to_async(runtime).iter(|| async {
            let mut service = tower.borrow_mut();
            with_tower(&mut *service, black_box(7)).await
        });
    });
    group.finish();
}

/// Interleaved rounds, as `--bench ratios` runs them: each round times a
/// batch of calls of every contender, in an order that rotates from round
/// to round; the ratio to the plain attribute is taken within the round,
/// and the table shows the medians over the rounds.
fn ratios(runtime: &tokio::runtime::Runtime, rounds: usize, calls: u64) {
    type Timer<'a> = Box<dyn Fn(u64) -> Duration + 'a>;
    let tower = std::cell::RefCell::new(tower_hedge());
    macro_rules! timer {
        ($call:expr) => {
            Box::new(|calls| {
                runtime.block_on(async {
                    let started = std::time::Instant::now();
                    for x in 0..calls {
                        black_box($call(black_box(x)).await).ok();
                    }
                    started.elapsed()
                })
            }) as Timer<'_>
        };
    }
    let timers: Vec<(&str, Timer<'_>)> = vec![
        ("#[retry] (no hedge)", timer!(|x| plain(&HEALTHY, x))),
        (
            "#[retry(hedge = \"50ms\")]",
            timer!(|x| hedged(&HEALTHY, x)),
        ),
        (
            "#[retry(hedge = \"p95\")]",
            timer!(|x| hedged_p95(&HEALTHY, x)),
        ),
        (
            "hand-written hedge (tokio::select!)",
            timer!(|x| by_hand(&HEALTHY, x)),
        ),
        (
            "tower::hedge",
            Box::new(|calls| {
                let mut service = tower.borrow_mut();
                runtime.block_on(async {
                    let started = std::time::Instant::now();
                    for x in 0..calls {
                        black_box(with_tower(&mut *service, black_box(x)).await).ok();
                    }
                    started.elapsed()
                })
            }),
        ),
        (
            "#[retry] (no hedge) again (noise gauge)",
            timer!(|x| plain(&HEALTHY, x)),
        ),
    ];
    for (_, timer) in &timers {
        timer(calls / 10);
    }
    let mut nanos = vec![Vec::new(); timers.len()];
    let mut ratios = vec![Vec::new(); timers.len()];
    for round in 0..rounds {
        let mut this_round = vec![0.0; timers.len()];
        for offset in 0..timers.len() {
            let index = (round + offset) % timers.len();
            #[allow(clippy::cast_precision_loss)]
            let per_call = (timers[index].1)(calls).as_secs_f64() * 1e9 / calls as f64;
            this_round[index] = per_call;
        }
        for (index, per_call) in this_round.iter().enumerate() {
            nanos[index].push(*per_call);
            ratios[index].push(per_call / this_round[0]);
        }
    }
    println!("\n{rounds} interleaved rounds of {calls} calls; median of the per-round ratios to the plain attribute, and median ns per call\n");
    println!("| contender | ratio | ns per call |");
    println!("|---|---|---|");
    for (index, (name, _)) in timers.iter().enumerate() {
        let median = |values: &mut Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        println!(
            "| {name} | {:.2}x | {:.1} |",
            median(&mut ratios[index]),
            median(&mut nanos[index])
        );
    }
    println!();
}

fn main() {
    let runtime = runtime();
    footprint(&runtime);
    ratios(&runtime, 21, 20_000);
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion, &runtime);
    criterion.final_summary();
}
