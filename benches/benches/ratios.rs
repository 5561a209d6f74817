//! `cargo bench -p retry-benches --bench ratios [-- ROUNDS]`
//!
//! The ratios BENCHMARKS.md reports, measured on a shared machine: every
//! round times a batch of calls of each contender, one after the other in an
//! order that rotates from round to round, so that whatever else the machine
//! does falls on all of them alike; each contender's ratio to the
//! hand-written loop is taken within the round, and the table shows the
//! median over rounds.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::Dependency;
use tokio::runtime::Runtime;

type Timer = fn(&Runtime, &Dependency, u64) -> Duration;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(31);
    let mut timers: Vec<(&str, Timer)> = Vec::new();
    macro_rules! timer {
        ($name:expr, $function:path) => {
            timers.push(($name, |runtime, dependency, calls| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for call in 0..calls {
                        black_box($function(black_box(dependency), call).await).ok();
                    }
                    started.elapsed()
                })
            }));
        };
    }
    for_each_contender!(timer);

    let live = common::runtime(false);
    let paused = common::runtime(true);
    let paths = [
        (
            "first attempt succeeds",
            Dependency::healthy(),
            &live,
            100_000,
        ),
        ("error not retried", Dependency::broken(), &live, 100_000),
        (
            "three transient failures, then success",
            Dependency::flaky(),
            &paused,
            2_000,
        ),
    ];
    let mut footnotes = Vec::new();
    println!("{rounds} interleaved rounds; median ns per call, and median of the per-round ratios to the hand-written loop\n");
    print!("| path |");
    for (name, _) in &timers {
        print!(" {name} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(timers.len()));
    for (path, dependency, runtime, calls) in &paths {
        // One untimed round to warm caches and the timer wheel.
        for (_, timer) in &timers {
            timer(runtime, dependency, calls / 10);
        }
        let mut nanos = vec![Vec::new(); timers.len()];
        let mut ratios = vec![Vec::new(); timers.len()];
        let position = |name: &str| timers.iter().position(|(n, _)| *n == name);
        let deadline_pair =
            position("#[retry] with deadline").zip(position("hand-written loop with deadline"));
        let mut deadline_ratios = Vec::new();
        for round in 0..rounds {
            let mut this_round = vec![0.0; timers.len()];
            for offset in 0..timers.len() {
                let index = (round + offset) % timers.len();
                let elapsed = (timers[index].1)(runtime, dependency, *calls);
                this_round[index] = elapsed.as_secs_f64() * 1e9 / *calls as f64;
            }
            if let Some((attribute, hand)) = deadline_pair {
                deadline_ratios.push(this_round[attribute] / this_round[hand]);
            }
            for (index, per_call) in this_round.iter().enumerate() {
                nanos[index].push(*per_call);
                ratios[index].push(per_call / this_round[0]);
            }
        }
        print!("| {path} |");
        for index in 0..timers.len() {
            let per_call = median(&mut nanos[index]);
            let ratio = median(&mut ratios[index]);
            print!(" {ratio:.2}x ({per_call:.1} ns) |");
        }
        println!();
        if !deadline_ratios.is_empty() {
            footnotes.push(format!(
                "{path}: `#[retry]` with deadline / hand-written loop with deadline = {:.2}x",
                median(&mut deadline_ratios)
            ));
        }
    }
    println!();
    for footnote in footnotes {
        println!("{footnote}");
    }
}
