//! The closure API and the attribute, under any policy a caller can build at
//! run time (zero or `u32::MAX` attempts, 1 ns to `Duration::MAX` waits,
//! NaN and infinite multipliers, any jitter, deadline and timeout) and any
//! script of failures, hints and slow attempts: on a paused clock with the
//! same seed, `#[retry(policy = ..)]` and `policy.on(..).run(..)` start the
//! same attempts at the same instants, call `on_retry` with the same waits,
//! return the same outcome and report the same `last_call()`.

#[path = "support/cases.rs"]
mod cases;
use cases::cases;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use proptest::prelude::*;
use retry_runtime::{last_call, retry, seed_thread_rng, Jitter, Policy, Stopped, TimedOut};
use tokio::time::Instant;

#[derive(Clone, Debug, PartialEq)]
enum E {
    Transient(u32),
    Permanent(u32),
    Hinted(u32, Duration),
    TimedOut,
}
impl From<TimedOut> for E {
    fn from(_: TimedOut) -> Self {
        E::TimedOut
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Ok,
    Transient,
    Permanent,
    Hinted(Duration),
}

thread_local! {
    /// The policy both front ends run, read at each call.
    static POLICY: Cell<Policy<TimedOut>> = Cell::new(Policy::new().into());
    /// How attempt n (from 1) ends, and how long it takes.
    static SCRIPT: RefCell<Vec<(Step, Duration)>> = RefCell::default();
    /// When each attempt started, from the run's origin.
    static LOG: RefCell<Vec<Duration>> = RefCell::default();
    /// `on_retry`'s attempt numbers and waits.
    static HOOKS: RefCell<Vec<(u32, Duration)>> = RefCell::default();
    static ORIGIN: Cell<Option<Instant>> = const { Cell::new(None) };
}

fn current() -> Policy<TimedOut> {
    POLICY.with(Cell::get)
}
fn transient(e: &E) -> bool {
    !matches!(e, E::Permanent(_))
}
fn hint(e: &E) -> Option<Duration> {
    match e {
        E::Hinted(_, h) => Some(*h),
        _ => None,
    }
}
fn hook(_: &E, attempt: u32, wait: Duration) {
    HOOKS.with(|h| h.borrow_mut().push((attempt, wait)));
}

/// The dependency both front ends call: the next step of the script.
async fn call() -> Result<u32, E> {
    let n = LOG.with(|l| {
        let mut l = l.borrow_mut();
        let at = Instant::now() - ORIGIN.with(Cell::get).unwrap();
        l.push(at);
        u32::try_from(l.len()).unwrap()
    });
    let (step, took) = SCRIPT.with(|s| {
        s.borrow()
            .get(n as usize - 1)
            .copied()
            .unwrap_or((Step::Transient, Duration::ZERO))
    });
    tokio::time::sleep(took).await;
    match step {
        Step::Ok => Ok(n),
        Step::Transient => Err(E::Transient(n)),
        Step::Permanent => Err(E::Permanent(n)),
        Step::Hinted(h) => Err(E::Hinted(n, h)),
    }
}

#[retry(policy = &current(), on = transient, retry_after = hint, on_retry = hook)]
async fn attribute() -> Result<u32, E> {
    call().await
}

async fn closure() -> Result<u32, E> {
    let policy = current();
    policy
        .on(transient)
        .retry_after(hint)
        .on_retry(hook)
        .run(call)
        .await
}

/// What a caller can see of a run: the outcome, the attempts' starts, the
/// hook's calls, `last_call()`, and the time the call took.
type Seen = (
    Result<u32, E>,
    Vec<Duration>,
    Vec<(u32, Duration)>,
    Option<Stopped>,
    Duration,
);

/// One run on a fresh paused runtime, with the jitter seeded.
fn observe(closure_api: bool, seed: u64) -> Seen {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        LOG.with(|l| l.borrow_mut().clear());
        HOOKS.with(|l| l.borrow_mut().clear());
        let origin = Instant::now();
        ORIGIN.with(|o| o.set(Some(origin)));
        seed_thread_rng(seed);
        let result = if closure_api {
            closure().await
        } else {
            attribute().await
        };
        (
            result,
            LOG.with(|l| l.borrow().clone()),
            HOOKS.with(|l| l.borrow().clone()),
            last_call(),
            Instant::now() - origin,
        )
    })
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::from_nanos(1)),
        (1u64..2_000).prop_map(Duration::from_millis),
        Just(Duration::from_secs(3600 * 24 * 365 * 100)),
        Just(Duration::from_nanos(u64::MAX)),
        Just(Duration::MAX),
    ]
}

fn step() -> impl Strategy<Value = (Step, Duration)> {
    (
        prop_oneof![
            3 => Just(Step::Transient),
            1 => Just(Step::Ok),
            1 => Just(Step::Permanent),
            1 => duration().prop_map(Step::Hinted),
        ],
        prop_oneof![3 => Just(Duration::ZERO), 1 => (1u64..500).prop_map(Duration::from_millis)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(3000)))]
    #[test]
    fn the_closure_api_and_the_attribute_agree_on_any_runtime_policy(
        max in prop_oneof![0u32..6, Just(u32::MAX)],
        base in duration(), cap in duration(),
        multiplier in prop_oneof![Just(2.0), Just(1.0), Just(f64::NAN), Just(f64::INFINITY), 0.0f64..5.0],
        jitter in prop::sample::select(Jitter::ALL.to_vec()),
        deadline in proptest::option::of(duration()),
        timeout in proptest::option::of(duration()),
        script in prop::collection::vec(step(), 0..8),
        seed in any::<u64>(),
    ) {
        let mut policy: Policy<TimedOut> = Policy::new().with_max_attempts(max).with_base(base).with_cap(cap).with_multiplier(multiplier).with_jitter(jitter).into();
        if let Some(d) = deadline { policy = policy.with_deadline(d); }
        if let Some(t) = timeout { policy = policy.with_timeout(t); }
        // Always end: at most 8 attempts run (past the script, the 9th succeeds).
        let mut script = script;
        while script.len() < 8 { script.push((Step::Transient, Duration::ZERO)); }
        script.push((Step::Ok, Duration::ZERO));
        POLICY.with(|p| p.set(policy));
        SCRIPT.with(|s| *s.borrow_mut() = script);
        let a = observe(false, seed);
        let c = observe(true, seed);
        prop_assert_eq!(&a, &c, "{:?}", policy);
    }
}
