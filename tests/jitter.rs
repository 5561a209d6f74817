//! Each jitter stays inside its formula's bounds and has the expected mean,
//! both as a plain function of the policy and through the attribute.

mod support;

use std::time::Duration;

use retry_runtime::{retry, seed_thread_rng, Jitter, Policy};
use support::{Failure, Flaky};

/// Draws per statistical check. Each test seeds the generator of its
/// thread, so the bounds and means below are checked on a fixed sample and
/// cannot fail by chance.
const RUNS: u32 = 2000;

fn policy(jitter: Jitter) -> Policy {
    Policy::new()
        .with_max_attempts(6)
        .with_base(Duration::from_millis(100))
        .with_cap(Duration::from_secs(1))
        .with_jitter(jitter)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Mean of `RUNS` draws of the wait before retry `n`, checking each against
/// `[low, high]`.
fn mean_wait(policy: &Policy, n: u32, low: Duration, high: Duration) -> f64 {
    let mut total = 0.0;
    for _ in 0..RUNS {
        let wait = policy.wait(n, policy.base());
        assert!(
            wait >= low && wait <= high,
            "{:?} retry {n}: {wait:?} outside [{low:?}, {high:?}]",
            policy.jitter()
        );
        total += ms(wait);
    }
    total / f64::from(RUNS)
}

#[test]
fn full_is_uniform_up_to_the_ceiling() {
    seed_thread_rng(0x5eed);
    let p = policy(Jitter::Full);
    for n in 0..6 {
        let ceiling = p.ceiling(n);
        let mean = mean_wait(&p, n, Duration::ZERO, ceiling);
        let expected = ms(ceiling) / 2.0;
        assert!(
            (mean - expected).abs() < expected * 0.05,
            "retry {n}: mean {mean}, expected {expected}"
        );
    }
}

#[test]
fn equal_keeps_at_least_half_the_ceiling() {
    seed_thread_rng(0x5eed);
    let p = policy(Jitter::Equal);
    for n in 0..6 {
        let ceiling = p.ceiling(n);
        let mean = mean_wait(&p, n, ceiling / 2, ceiling);
        let expected = ms(ceiling) * 0.75;
        assert!(
            (mean - expected).abs() < expected * 0.05,
            "retry {n}: mean {mean}, expected {expected}"
        );
    }
}

#[test]
fn none_is_exactly_the_ceiling() {
    seed_thread_rng(0x5eed);
    let p = policy(Jitter::None);
    for n in 0..6 {
        assert_eq!(p.wait(n, p.base()), p.ceiling(n));
    }
}

#[test]
fn decorrelated_draws_between_base_and_three_times_the_previous_wait() {
    seed_thread_rng(0x5eed);
    let p = policy(Jitter::Decorrelated);
    let mut total = 0.0;
    for _ in 0..RUNS {
        let mut previous = p.base();
        for n in 0..5 {
            let wait = p.wait(n, previous);
            assert!(wait >= p.base(), "{wait:?} below base");
            assert!(
                wait <= (previous * 3).min(p.cap()),
                "{wait:?} above min(cap, 3 * {previous:?})"
            );
            previous = wait;
        }
        // The first wait is uniform in [base, 3 * base]: mean 2 * base.
        total += ms(p.wait(0, p.base()));
    }
    let mean = total / f64::from(RUNS);
    assert!(
        (mean - 200.0).abs() < 10.0,
        "mean first wait {mean}ms, expected 200ms"
    );
}

#[test]
fn no_jitter_ever_waits_past_the_cap() {
    seed_thread_rng(0x5eed);
    let cap = Duration::from_millis(300);
    for jitter in Jitter::ALL {
        let p = policy(jitter).with_cap(cap);
        for n in [0, 1, 5, 64, 1000, u32::MAX] {
            for previous in [p.base(), cap, Duration::MAX] {
                assert!(
                    p.wait_with(n, previous, u64::MAX) <= cap,
                    "{jitter:?} retry {n}"
                );
            }
        }
    }
}

#[test]
fn extreme_samples_reach_both_ends_of_each_range() {
    seed_thread_rng(0x5eed);
    let previous = Duration::from_millis(150);
    let cases = [
        (Jitter::Full, 0, 800),
        (Jitter::Equal, 400, 800),
        (Jitter::None, 800, 800),
        (Jitter::Decorrelated, 100, 450),
    ];
    for (jitter, low, high) in cases {
        let p = policy(jitter);
        assert_eq!(
            p.wait_with(3, previous, 0),
            Duration::from_millis(low),
            "{jitter:?}"
        );
        assert_eq!(
            p.wait_with(3, previous, u64::MAX),
            Duration::from_millis(high),
            "{jitter:?}"
        );
    }
}

#[test]
fn seeding_makes_the_waits_repeatable() {
    let p = policy(Jitter::Full);
    seed_thread_rng(42);
    let first: Vec<Duration> = (0..5).map(|n| p.wait(n, p.base())).collect();
    seed_thread_rng(42);
    let second: Vec<Duration> = (0..5).map(|n| p.wait(n, p.base())).collect();
    assert_eq!(first, second);
    assert!(
        first.windows(2).any(|w| w[0] != w[1]),
        "waits should vary: {first:?}"
    );
}

#[retry(max = 4, base = "100ms", cap = "1s", jitter = "full")]
async fn full(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 4, base = "100ms", cap = "1s", jitter = "equal")]
async fn equal(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 4, base = "100ms", cap = "250ms", jitter = "decorrelated")]
async fn decorrelated(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

/// Runs `f` against always-failing dependencies `RUNS / 4` times and returns
/// the mean of each gap between attempts, checking each against its bounds.
async fn attribute_gaps<F, Fut>(f: F, bounds: [(u64, u64); 3]) -> [f64; 3]
where
    F: Fn(Flaky) -> Fut,
    Fut: std::future::Future<Output = (Flaky, Result<u32, Failure>)>,
{
    let runs = RUNS / 4;
    let mut totals = [0.0; 3];
    for _ in 0..runs {
        let (dep, result) = f(Flaky::failing(10)).await;
        assert_eq!(result.unwrap_err().call, 4);
        for (i, gap) in dep.gaps().into_iter().enumerate() {
            let (low, high) = bounds[i];
            assert!(
                gap >= Duration::from_millis(low) && gap <= Duration::from_millis(high),
                "gap {i}: {gap:?} outside [{low}ms, {high}ms]"
            );
            totals[i] += ms(gap);
        }
    }
    totals.map(|t| t / f64::from(runs))
}

#[tokio::test(start_paused = true)]
async fn the_attribute_draws_full_jitter() {
    seed_thread_rng(0x5eed);
    let means = attribute_gaps(
        |dep| async move {
            let r = full(&dep).await;
            (dep, r)
        },
        [(0, 100), (0, 200), (0, 400)],
    )
    .await;
    for (mean, expected) in means.into_iter().zip([50.0, 100.0, 200.0]) {
        assert!(
            (mean - expected).abs() < expected * 0.1,
            "mean {mean}, expected {expected}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_attribute_draws_equal_jitter() {
    seed_thread_rng(0x5eed);
    let means = attribute_gaps(
        |dep| async move {
            let r = equal(&dep).await;
            (dep, r)
        },
        [(50, 100), (100, 200), (200, 400)],
    )
    .await;
    for (mean, expected) in means.into_iter().zip([75.0, 150.0, 300.0]) {
        assert!(
            (mean - expected).abs() < expected * 0.1,
            "mean {mean}, expected {expected}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_attribute_draws_decorrelated_jitter_under_the_cap() {
    seed_thread_rng(0x5eed);
    let means = attribute_gaps(
        |dep| async move {
            let r = decorrelated(&dep).await;
            (dep, r)
        },
        [(100, 250), (100, 250), (100, 250)],
    )
    .await;
    // Later waits draw from three times the one before, carried across
    // retries: without the carry they would all be `base`.
    assert!(means[1] > 120.0 && means[2] > 120.0, "means {means:?}");
}
