//! `cargo bench -p retry-benches --bench overhead`
//!
//! Criterion's view of what `#[retry]` costs over a hand-written loop, next
//! to the closure API, backon and tokio-retry2 (see `common/mod.rs`):
//!
//! - `success`: the first attempt succeeds, the path almost every call takes;
//! - `permanent`: the first attempt fails with an error that is not retried;
//! - `three failures`: three transient failures then a success, with 1 ms
//!   base waits on a paused clock, so the timer is exercised but no real time
//!   passes.
//!
//! Criterion runs one contender after the other; on a shared machine the
//! ratios in BENCHMARKS.md come from `--bench ratios`, which interleaves them.

mod common;

use std::hint::black_box;

use common::Dependency;
use criterion::{criterion_group, criterion_main, Criterion};

fn benches(c: &mut Criterion) {
    let live = common::runtime(false);
    let paused = common::runtime(true);
    let paths = [
        ("success", Dependency::healthy(), &live),
        ("permanent", Dependency::broken(), &live),
        ("three failures", Dependency::flaky(), &paused),
    ];
    for (path, dependency, runtime) in &paths {
        let mut group = c.benchmark_group(*path);
        macro_rules! bench {
            ($name:expr, $function:path) => {
                group.bench_function($name, |b| {
                    b.to_async(*runtime)
                        .iter(|| $function(black_box(dependency), 7))
                });
            };
        }
        for_each_contender!(bench);
        group.finish();
    }
}

criterion_group!(overhead, benches);
criterion_main!(overhead);
