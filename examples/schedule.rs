//! `cargo run --example schedule -- --max 6 --base 200ms --cap 10s [--multiplier 2]`
//!
//! Prints each retry's ceiling, the expected wait under each jitter, and the
//! worst-case and expected total wait, computed by the runtime itself: the
//! ceilings and worst cases by its formulas, the expected decorrelated waits
//! by drawing 100,000 schedules.

use std::process::ExitCode;
use std::time::Duration;

use retry_runtime::{parse_duration, Jitter, Policy};

const SAMPLES: u32 = 100_000;

fn parse_args() -> Result<Policy, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut policy = Policy::new();
    let mut pairs = args.chunks(2);
    for pair in &mut pairs {
        let [flag, value] = pair else {
            return Err(format!("`{}` needs a value", pair[0]));
        };
        let duration =
            |value: &str| parse_duration(value).map_err(|e| format!("{flag} {value:?}: {e}"));
        policy = match flag.as_str() {
            "--max" => policy
                .with_max_attempts(value.parse().map_err(|e| format!("--max {value:?}: {e}"))?),
            "--base" => policy.with_base(duration(value)?),
            "--cap" => policy.with_cap(duration(value)?),
            "--multiplier" => policy.with_multiplier(
                value
                    .parse()
                    .map_err(|e| format!("--multiplier {value:?}: {e}"))?,
            ),
            _ => {
                return Err(format!(
                    "unknown option `{flag}`; the options are --max, --base, --cap, --multiplier"
                ))
            }
        };
    }
    policy.validate().map_err(|e| e.to_string())?;
    Ok(policy)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Mean wait before each retry under decorrelated jitter, drawn with the
/// runtime's own `wait`.
fn decorrelated_means(policy: &Policy) -> Vec<f64> {
    let retries = policy.max_attempts() - 1;
    let mut totals = vec![0.0; usize::try_from(retries).unwrap_or(0)];
    retry_runtime::seed_thread_rng(1);
    for _ in 0..SAMPLES {
        let mut previous = policy.base();
        for (n, total) in (0..retries).zip(totals.iter_mut()) {
            let wait = policy.wait(n, previous);
            *total += ms(wait);
            previous = wait;
        }
    }
    totals.into_iter().map(|t| t / f64::from(SAMPLES)).collect()
}

fn main() -> ExitCode {
    let policy = match parse_args() {
        Ok(policy) => policy,
        Err(error) => {
            eprintln!("error: {error}");
            eprintln!("usage: cargo run --example schedule -- --max 6 --base 200ms --cap 10s [--multiplier 2]");
            return ExitCode::from(2);
        }
    };
    let retries = policy.max_attempts() - 1;
    println!(
        "max = {}, base = {:?}, cap = {:?}, multiplier = {}: the call and {retries} retries\n",
        policy.max_attempts(),
        policy.base(),
        policy.cap(),
        policy.multiplier()
    );
    let decorrelated = policy.with_jitter(Jitter::Decorrelated);
    let decorrelated_mean = decorrelated_means(&decorrelated);
    println!("                    |           expected wait (ms)");
    println!("retry  ceiling (ms) |     none      full     equal  decorrelated");
    let mut totals = [0.0f64; 4];
    for n in 0..retries {
        let ceiling = ms(policy.ceiling(n));
        let expected = [
            ceiling,
            ceiling / 2.0,
            ceiling * 0.75,
            decorrelated_mean[n as usize],
        ];
        for (total, wait) in totals.iter_mut().zip(expected) {
            *total += wait;
        }
        println!(
            "{:>5}  {ceiling:>12.1} | {:>8.1}  {:>8.1}  {:>8.1}  {:>12.1}",
            n + 1,
            expected[0],
            expected[1],
            expected[2],
            expected[3]
        );
    }
    let worst = Jitter::ALL.map(|jitter| ms(policy.with_jitter(jitter).worst_case_wait()));
    // `Jitter::ALL` is full, equal, decorrelated, none; the table is none,
    // full, equal, decorrelated.
    let worst = [worst[3], worst[0], worst[1], worst[2]];
    println!("-------------------------------------------------------------------");
    println!(
        "expected total      | {:>8.1}  {:>8.1}  {:>8.1}  {:>12.1}",
        totals[0], totals[1], totals[2], totals[3]
    );
    println!(
        "worst-case total    | {:>8.1}  {:>8.1}  {:>8.1}  {:>12.1}",
        worst[0], worst[1], worst[2], worst[3]
    );
    ExitCode::SUCCESS
}
