//! Waits under random and extreme policies: 1 ns bases, caps near
//! `Duration::MAX`, `u32::MAX` attempts, multipliers of 1 and beyond 2^64,
//! and out-of-range values a policy can still hold. Every wait lies within
//! its jitter's documented bounds, ceilings never decrease, nothing panics,
//! no wait that would pass the deadline is started, and the schedule
//! calculator (`Policy::ceiling`, `wait`, `worst_case_wait`) agrees with the
//! loop, run on a virtual clock (feature `testing`), whose record gives
//! each wait and when it was decided.

use std::cell::Cell;
use std::time::Duration;

use proptest::prelude::*;
use retry_runtime::testing::VirtualClock;
use retry_runtime::{seed_thread_rng, Jitter, Policy, TimedOut};

const MAX_NANOS: Duration = Duration::from_nanos(u64::MAX);

fn nanos(d: Duration) -> u128 {
    d.as_nanos().min(u128::from(u64::MAX))
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::from_nanos(1)),
        (1u64..1_000).prop_map(Duration::from_nanos),
        (1u64..100_000_000_000).prop_map(Duration::from_nanos),
        any::<u64>().prop_map(Duration::from_nanos),
        (u64::MAX - 1000..=u64::MAX).prop_map(Duration::from_nanos),
        Just(MAX_NANOS),
        Just(Duration::MAX),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

fn multiplier() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(1.0),
        Just(2.0),
        1.0f64..1.000_001,
        1.0f64..4.0,
        (2u64..64).prop_map(|m| m as f64),
        (4_294_967_296u64..=u64::MAX).prop_map(|m| m as f64),
        Just(1e300),
        Just(f64::MAX),
        Just(f64::INFINITY),
        // Out of range: a policy can hold them, and they act as 1.
        Just(f64::NAN),
        Just(0.5),
        Just(-3.0),
        Just(0.0),
    ]
}

fn jitter() -> impl Strategy<Value = Jitter> {
    prop::sample::select(Jitter::ALL.to_vec())
}

/// Any policy a caller can build, valid or not.
fn any_policy() -> impl Strategy<Value = Policy> {
    (
        prop_oneof![
            Just(u32::MAX),
            Just(0u32),
            Just(1u32),
            any::<u32>(),
            1u32..50
        ],
        duration(),
        duration(),
        multiplier(),
        jitter(),
    )
        .prop_map(|(max, base, cap, multiplier, jitter)| {
            Policy::new()
                .with_max_attempts(max)
                .with_base(base)
                .with_cap(cap)
                .with_multiplier(multiplier)
                .with_jitter(jitter)
        })
}

fn retry_number() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..80, Just(u32::MAX - 1), any::<u32>()]
}

/// `min(cap, base * multiplier^n)` for whole multipliers, in `u128` with
/// no shortcut: the oracle for `Policy::ceiling`.
fn whole_ceiling(base: u128, cap: u128, multiplier: u128, n: u32) -> u128 {
    if base >= cap {
        return cap;
    }
    let mut ceiling = base;
    for _ in 0..n {
        ceiling = ceiling.saturating_mul(multiplier);
        if ceiling >= cap {
            return cap;
        }
    }
    ceiling
}

#[path = "support/cases.rs"]
mod cases;
use cases::cases;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(20_000)))]

    #[test]
    fn ceilings_never_decrease_and_never_pass_the_cap(policy in any_policy(), n in retry_number()) {
        let cap = MAX_NANOS.min(policy.cap());
        let here = policy.ceiling(n);
        let next = policy.ceiling(n.saturating_add(1));
        prop_assert!(here <= next, "{policy:?}: ceiling({n}) = {here:?} > {next:?}");
        prop_assert!(next <= cap);
        prop_assert!(policy.ceiling(0) == policy.base().min(cap));
    }

    #[test]
    fn whole_multipliers_are_exact(
        base in 1u64..=u64::MAX,
        cap in 1u64..=u64::MAX,
        multiplier in prop_oneof![(2u64..100).prop_map(|m| m as f64), (4_294_967_296u64..=u64::MAX).prop_map(|m| m as f64), Just(18_446_744_073_709_551_616.0), Just(1e300)],
        n in 0u32..70,
    ) {
        let policy = Policy::new()
            .with_base(Duration::from_nanos(base))
            .with_cap(Duration::from_nanos(cap))
            .with_multiplier(multiplier);
        // Every whole f64 below 2^64 is an integer the u128 oracle holds
        // exactly; the larger ones pass any cap at the first step anyway.
        let exact = if multiplier < 3.4e38 { multiplier as u128 } else { u128::MAX };
        let expected = whole_ceiling(u128::from(base), u128::from(cap), exact, n);
        prop_assert_eq!(policy.ceiling(n).as_nanos(), expected);
    }

    #[test]
    fn every_wait_lies_within_its_jitters_bounds(
        policy in any_policy(),
        n in retry_number(),
        previous in duration(),
        sample in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
    ) {
        let wait = nanos(policy.wait_with(n, previous, sample));
        let ceiling = nanos(policy.ceiling(n));
        let base = nanos(policy.base());
        let cap = nanos(policy.cap());
        match policy.jitter() {
            Jitter::None => prop_assert_eq!(wait, ceiling),
            Jitter::Full => prop_assert!(wait <= ceiling),
            Jitter::Equal => {
                let half = ceiling / 2;
                prop_assert!(half <= wait && wait <= 2 * half, "{wait} vs ceiling {ceiling}");
            }
            Jitter::Decorrelated => {
                let high = (nanos(previous) * 3).max(base).min(u128::from(u64::MAX));
                prop_assert!(wait >= base.min(cap) && wait <= high.min(cap), "{wait}");
            }
            // `Jitter` is `#[non_exhaustive]`: a new jitter needs its rule here.
            other => prop_assert!(false, "no property for jitter {other}"),
        }
        prop_assert!(wait <= cap);
        // The ends of the range are reached at the ends of the sample.
        if sample == 0 {
            let low = match policy.jitter() {
                Jitter::None => ceiling,
                Jitter::Full => 0,
                Jitter::Equal => ceiling / 2,
                Jitter::Decorrelated => base.min(cap),
                other => unreachable!("no lowest wait for jitter {other}"),
            };
            prop_assert_eq!(wait, low);
        }
    }

    #[test]
    fn hinted_waits_are_at_least_the_hint_and_at_most_a_tenth_more(
        policy in any_policy(),
        backoff in duration(),
        hint in duration(),
        sample in any::<u64>(),
    ) {
        let backoff = backoff.min(policy.cap()).min(MAX_NANOS);
        match policy.hinted_wait(backoff, hint, sample) {
            None => prop_assert!(hint > policy.cap() || hint > MAX_NANOS),
            Some(wait) => {
                prop_assert!(hint <= policy.cap());
                prop_assert!(wait >= hint && wait >= backoff);
                let most = (nanos(hint).max(nanos(backoff)) + nanos(hint) / 10).min(u128::from(u64::MAX));
                prop_assert!(nanos(wait) <= most);
                // 1.1 x cap at most, as documented.
                prop_assert!(nanos(wait) <= nanos(policy.cap()) + nanos(policy.cap()) / 10);
            }
        }
    }

    #[test]
    fn the_worst_case_bounds_every_schedule(policy in any_policy(), seed in any::<u64>()) {
        let policy = policy.with_max_attempts(policy.max_attempts() % 40);
        let worst = policy.worst_case_wait();
        let retries = policy.max_attempts().saturating_sub(1);
        let mut sum: u128 = 0;
        let mut ceilings: u128 = 0;
        let mut previous = policy.base();
        seed_thread_rng(seed);
        for n in 0..retries {
            let wait = policy.wait(n, previous);
            sum += wait.as_nanos();
            ceilings += policy.ceiling(n).as_nanos();
            previous = wait;
        }
        let cap = u128::from(u64::MAX);
        prop_assert!(sum.min(cap) <= worst.as_nanos(), "{policy:?}");
        if policy.jitter() != Jitter::Decorrelated {
            prop_assert_eq!(worst.as_nanos(), ceilings.min(cap));
        }
    }
}

#[derive(Debug)]
struct Down;

impl From<TimedOut> for Down {
    fn from(_: TimedOut) -> Self {
        Down
    }
}

/// One call through the closure API on a test's virtual clock: the waits
/// it took and when each was decided (time since the first attempt), as
/// the clock's record of decisions gives them, the calls made and the time
/// it took in all.
struct Run {
    waits: Vec<(Duration, Duration)>,
    calls: u32,
    elapsed: Duration,
}

fn run(policy: Policy, failures: u32, seed: u64) -> Run {
    let clock = VirtualClock::install();
    seed_thread_rng(seed);
    let calls = Cell::new(0u32);
    let _: Result<u32, Down> = futures::executor::block_on(policy.retrying().run(|| {
        calls.set(calls.get() + 1);
        let call = calls.get();
        async move {
            if call <= failures {
                Err(Down)
            } else {
                Ok(call)
            }
        }
    }));
    let waits = clock
        .take_decisions()
        .iter()
        .filter_map(|decision| Some((decision.at, decision.wait?)))
        .collect();
    Run {
        waits,
        calls: calls.get(),
        elapsed: clock.elapsed(),
    }
}

fn deadline() -> impl Strategy<Value = Option<Duration>> {
    prop_oneof![
        Just(None),
        (1u64..10_000_000_000).prop_map(|n| Some(Duration::from_nanos(n))),
        (1u64..=u64::MAX).prop_map(|n| Some(Duration::from_nanos(n))),
        Just(Some(Duration::MAX)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2_000)))]

    #[test]
    fn the_loop_follows_the_schedule_calculator_on_a_virtual_clock(
        policy in any_policy(),
        deadline in deadline(),
        failures in 0u32..40,
        seed in any::<u64>(),
    ) {
        let policy = match deadline {
            Some(deadline) => policy.with_deadline(deadline),
            None => policy,
        };
        let outcome = run(policy, failures, seed);

        // The same draws, replayed through the calculator.
        seed_thread_rng(seed);
        let mut previous = policy.base();
        let mut slept = Duration::ZERO;
        for (n, &(decided_at, wait)) in outcome.waits.iter().enumerate() {
            let n = u32::try_from(n).unwrap();
            let expected = policy.wait(n, previous);
            prop_assert_eq!(wait, expected, "retry {}", n);
            // No wait is started that would end past the deadline.
            if let Some(deadline) = policy.deadline() {
                prop_assert!(decided_at.saturating_add(wait) <= deadline);
            }
            // Each wait is slept in full, and no longer.
            prop_assert_eq!(decided_at, slept);
            slept = decided_at.saturating_add(wait);
            previous = wait;
        }
        prop_assert_eq!(outcome.elapsed, slept);
        let retries = u32::try_from(outcome.waits.len()).unwrap();
        prop_assert_eq!(outcome.calls, retries + 1);
        let max = policy.max_attempts().max(1);
        prop_assert!(outcome.calls <= max);
        if outcome.calls <= failures && outcome.calls < max {
            // Stopped early with attempts left: only the deadline does
            // that here, and the next wait drawn would have passed it.
            let deadline = policy.deadline().expect("only a deadline stops early");
            let next = policy.wait(retries, previous);
            prop_assert!(outcome.elapsed.saturating_add(next) > deadline);
        } else {
            prop_assert_eq!(outcome.calls, (failures + 1).min(max));
        }
        // The worst case saturates at `u64::MAX` ns, as documented.
        let total: Duration = outcome.waits.iter().map(|&(_, wait)| wait).sum();
        prop_assert!(total.min(MAX_NANOS) <= policy.worst_case_wait());
    }
}
