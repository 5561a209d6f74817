//! The attribute and the closure API run the same scenario and must agree
//! on everything a caller can see: the attempts made and when, the error
//! returned, the hooks called and with what, why the call stopped
//! (`on_give_up`, `last_call()`), on tokio's paused clock. Also the two
//! nested inside each other, where the nesting rule must hold across them.
//! The decision's edge cases through every entry point (layers, middleware,
//! hedged and blocking calls included) are the table in `agreement.rs`;
//! this file holds what only these two front ends have: hooks, jitter
//! draws, timeouts, keys and nesting between them.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::time::Duration;

use retry_runtime::hedge::Hedge;
use retry_runtime::{
    current_attempt, last_call, retry, seed_thread_rng, CircuitBreaker, CircuitOpen,
    IdempotencyKey, Jitter, Nested, Policy, RetryBudget, Stop, Stopped, TimedOut,
};
use tokio::time::Instant;

// ---------------------------------------------------------------------------
// A scripted dependency, and what a run shows.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum E {
    /// Retryable, with the call number.
    Transient(u32),
    /// Not retryable, with the call number.
    Permanent(u32),
    /// Retryable, with the call number and the server's hint.
    Hinted(u32, Duration),
    TimedOut,
    /// What `timed_out = ...` / `.timed_out(..)` builds.
    CutOff,
    Open,
}

impl From<TimedOut> for E {
    fn from(_: TimedOut) -> Self {
        E::TimedOut
    }
}

impl From<CircuitOpen> for E {
    fn from(_: CircuitOpen) -> Self {
        E::Open
    }
}

fn transient(e: &E) -> bool {
    !matches!(e, E::Permanent(_) | E::Open)
}

fn hint(e: &E) -> Option<Duration> {
    match e {
        E::Hinted(_, hint) => Some(*hint),
        _ => None,
    }
}

/// How call `n` (from 1) ends.
type Script = fn(u32) -> Result<u32, E>;

/// Records when each call starts (on tokio's clock, from its creation) and
/// answers as its script says, after `took` for that call.
struct Dep {
    script: Script,
    took: fn(u32) -> Duration,
    origin: Instant,
    starts: RefCell<Vec<Duration>>,
}

impl Dep {
    fn new(script: Script) -> Self {
        Dep::slow(script, |_| Duration::ZERO)
    }

    fn slow(script: Script, took: fn(u32) -> Duration) -> Self {
        Dep {
            script,
            took,
            origin: Instant::now(),
            starts: RefCell::new(Vec::new()),
        }
    }

    fn start(&self) -> u32 {
        let mut starts = self.starts.borrow_mut();
        starts.push(self.origin.elapsed());
        u32::try_from(starts.len()).unwrap()
    }

    fn call_now(&self) -> Result<u32, E> {
        let n = self.start();
        (self.script)(n)
    }

    async fn call(&self) -> Result<u32, E> {
        let n = self.start();
        let took = (self.took)(n);
        if !took.is_zero() {
            tokio::time::sleep(took).await;
        }
        (self.script)(n)
    }

    fn starts(&self) -> Vec<Duration> {
        self.starts.borrow().clone()
    }

    fn calls(&self) -> usize {
        self.starts.borrow().len()
    }
}

fn always_transient(n: u32) -> Result<u32, E> {
    Err(E::Transient(n))
}

fn always_permanent(n: u32) -> Result<u32, E> {
    Err(E::Permanent(n))
}

fn third_time_lucky(n: u32) -> Result<u32, E> {
    if n < 3 {
        Err(E::Transient(n))
    } else {
        Ok(n)
    }
}

thread_local! {
    /// `on_retry` calls: (error, attempt, wait).
    static RETRIES: RefCell<Vec<(E, u32, Duration)>> = const { RefCell::new(Vec::new()) };
    /// `on_give_up` calls: (outcome, how it stopped).
    static GAVE_UP: RefCell<Vec<(Result<u32, E>, Stopped)>> = const { RefCell::new(Vec::new()) };
}

fn log_retry(e: &E, attempt: u32, wait: Duration) {
    RETRIES.with(|log| log.borrow_mut().push((e.clone(), attempt, wait)));
}

fn log_give_up(outcome: &Result<u32, E>, stopped: &Stopped) {
    GAVE_UP.with(|log| log.borrow_mut().push((outcome.clone(), *stopped)));
}

/// Everything a caller can see of one call.
#[derive(Debug, PartialEq)]
struct Seen {
    result: Result<u32, E>,
    starts: Vec<Duration>,
    retries: Vec<(E, u32, Duration)>,
    gave_up: Vec<(Result<u32, E>, Stopped)>,
    last: Option<(Stop, u32)>,
    /// Time on tokio's clock from the call to its return.
    took: Duration,
}

/// Runs one call from a fresh log and a seeded jitter, and gathers what it
/// shows.
async fn observe<F: Future<Output = Result<u32, E>>>(dep: &Dep, call: F) -> Seen {
    RETRIES.with(|log| log.borrow_mut().clear());
    GAVE_UP.with(|log| log.borrow_mut().clear());
    seed_thread_rng(0x5eed);
    let before = Instant::now();
    let result = call.await;
    let last = last_call().map(|stopped| (stopped.reason(), stopped.attempts()));
    Seen {
        result,
        starts: dep.starts(),
        retries: RETRIES.with(|log| log.take()),
        gave_up: GAVE_UP.with(|log| log.take()),
        last,
        took: before.elapsed(),
    }
}

fn policy(max: u32, base_ms: u64, cap_ms: u64, jitter: Jitter) -> Policy {
    Policy::new()
        .with_max_attempts(max)
        .with_base(Duration::from_millis(base_ms))
        .with_cap(Duration::from_millis(cap_ms))
        .with_jitter(jitter)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

// ---------------------------------------------------------------------------
// 1. Backoff and jitter: the same waits, drawn from the same seed, for each
//    jitter; `on_retry` once per retry, `on_give_up` once, `last_call()`.
// ---------------------------------------------------------------------------

#[rustfmt::skip]
macro_rules! jitter_pair {
    ($name:ident, $attribute:literal, $jitter:expr) => {
        #[tokio::test(start_paused = true)]
        async fn $name() {
            #[retry(max = 6, base = "100ms", cap = "1s", multiplier = 3, jitter = $attribute,
                    on = transient, on_retry = log_retry, on_give_up = log_give_up)]
            async fn attribute(dep: &Dep) -> Result<u32, E> {
                dep.call().await
            }

            let dep = Dep::new(always_transient);
            let by_attribute = observe(&dep, attribute(&dep)).await;

            let dep = Dep::new(always_transient);
            let policy = policy(6, 100, 1000, $jitter).with_multiplier(3.0);
            let by_closure = observe(
                &dep,
                policy
                    .on(transient)
                    .on_retry(log_retry)
                    .on_give_up(log_give_up)
                    .run(|| dep.call()),
            )
            .await;

            assert_eq!(by_attribute, by_closure);
            assert_eq!(by_attribute.result, Err(E::Transient(6)));
            assert_eq!(by_attribute.retries.len(), 5);
            assert_eq!(
                by_attribute.retries.iter().map(|r| r.1).collect::<Vec<_>>(),
                [1, 2, 3, 4, 5]
            );
            assert_eq!(by_attribute.gave_up.len(), 1);
            let stopped = by_attribute.gave_up[0].1;
            assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Exhausted, 6));
            assert_eq!(stopped.elapsed(), Some(by_attribute.took));
            assert_eq!(by_attribute.last, Some((Stop::Exhausted, 6)));
        }
    };
}

jitter_pair!(full_jitter_agrees, "full", Jitter::Full);
jitter_pair!(equal_jitter_agrees, "equal", Jitter::Equal);
jitter_pair!(
    decorrelated_jitter_agrees,
    "decorrelated",
    Jitter::Decorrelated
);
jitter_pair!(no_jitter_agrees, "none", Jitter::None);

#[tokio::test(start_paused = true)]
async fn a_success_after_retries_agrees() {
    #[retry(
        max = 4,
        base = "100ms",
        jitter = "none",
        on_retry = log_retry,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::new(third_time_lucky);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(third_time_lucky);
    let by_closure = observe(
        &dep,
        policy(4, 100, 10_000, Jitter::None)
            .retrying()
            .on_retry(log_retry)
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Ok(3));
    assert_eq!(by_attribute.starts, [ms(0), ms(100), ms(300)]);
    assert_eq!(by_attribute.gave_up, []);
    assert_eq!(by_attribute.last, Some((Stop::Done, 3)));
}

#[tokio::test(start_paused = true)]
async fn an_error_on_rejects_agrees() {
    #[retry(max = 4, base = "100ms", on = transient, on_retry = log_retry, on_give_up = log_give_up)]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::new(always_permanent);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(always_permanent);
    let by_closure = observe(
        &dep,
        policy(4, 100, 10_000, Jitter::Full)
            .on(transient)
            .on_retry(log_retry)
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::Permanent(1)));
    assert_eq!(by_attribute.retries, []);
    assert_eq!(by_attribute.gave_up.len(), 1);
    assert_eq!(by_attribute.gave_up[0].1.reason(), Stop::NotRetryable);
    assert_eq!(by_attribute.last, Some((Stop::NotRetryable, 1)));
}

// ---------------------------------------------------------------------------
// 2. Deadline: the call's own, and the enclosing attempt's.
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_deadline_agrees() {
    #[retry(
        max = 10,
        base = "100ms",
        jitter = "none",
        deadline = "700ms",
        on_retry = log_retry,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::new(always_transient);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(always_transient);
    let by_closure = observe(
        &dep,
        policy(10, 100, 10_000, Jitter::None)
            .with_deadline(ms(700))
            .retrying()
            .on_retry(log_retry)
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    // The wait after 300ms (400ms) ends at the deadline, not past it; the
    // next (800ms) would pass it.
    assert_eq!(by_attribute.starts, [ms(0), ms(100), ms(300), ms(700)]);
    assert_eq!(by_attribute.last, Some((Stop::Deadline, 4)));
}

#[retry(max = 10, base = "100ms", jitter = "none")]
async fn inner_attribute(dep: &Dep) -> Result<u32, E> {
    dep.call().await
}

async fn inner_closure(dep: &Dep) -> Result<u32, E> {
    policy(10, 100, 10_000, Jitter::None)
        .retrying()
        .run(|| dep.call())
        .await
}

/// An outer attribute with a deadline of 500ms around either inner loop.
#[retry(max = 2, base = "1ms", deadline = "500ms")]
async fn outer_deadline_attribute(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    if closure_inside {
        inner_closure(dep).await
    } else {
        inner_attribute(dep).await
    }
}

async fn outer_deadline_closure(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    policy(2, 1, 10_000, Jitter::Full)
        .with_deadline(ms(500))
        .retrying()
        .run(|| async {
            if closure_inside {
                inner_closure(dep).await
            } else {
                inner_attribute(dep).await
            }
        })
        .await
}

#[tokio::test(start_paused = true)]
async fn the_enclosing_deadline_bounds_either_inner_loop_under_either_outer() {
    let mut seen = Vec::new();
    for outer_is_closure in [false, true] {
        for closure_inside in [false, true] {
            let dep = Dep::new(always_transient);
            let shown = if outer_is_closure {
                observe(&dep, outer_deadline_closure(&dep, closure_inside)).await
            } else {
                observe(&dep, outer_deadline_attribute(&dep, closure_inside)).await
            };
            seen.push(((outer_is_closure, closure_inside), shown));
        }
    }
    let first = &seen[0].1;
    // The inner loop stops before a wait that would pass the outer's 500ms
    // (0, 100, 300, then 700 would pass), and the outer does not retry it.
    assert_eq!(first.starts, [ms(0), ms(100), ms(300)], "{seen:#?}");
    assert_eq!(first.result, Err(E::Transient(3)));
    assert_eq!(first.last, Some((Stop::Nested, 1)));
    for (which, shown) in &seen {
        assert_eq!(
            shown, first,
            "outer is closure, inner is closure: {which:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 3. Timeout: `E::from(TimedOut)`, `timed_out`, and with a deadline.
// ---------------------------------------------------------------------------

fn hangs(_: u32) -> Duration {
    Duration::from_secs(3600)
}

#[tokio::test(start_paused = true)]
async fn a_timeout_agrees() {
    #[retry(max = 3, base = "10ms", jitter = "none", timeout = "50ms", on_give_up = log_give_up)]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::slow(always_transient, hangs);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::slow(always_transient, hangs);
    let by_closure = observe(
        &dep,
        policy(3, 10, 10_000, Jitter::None)
            .with_timeout(ms(50))
            .retrying()
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::TimedOut));
    assert_eq!(by_attribute.starts, [ms(0), ms(60), ms(130)]);
    assert_eq!(by_attribute.last, Some((Stop::Exhausted, 3)));
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_conversion_agrees() {
    #[retry(
        max = 3,
        base = "10ms",
        jitter = "none",
        timeout = "50ms",
        timed_out = |_| E::CutOff,
        on = transient
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::slow(always_transient, hangs);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::slow(always_transient, hangs);
    let by_closure = observe(
        &dep,
        policy(3, 10, 10_000, Jitter::None)
            .with_timeout(ms(50))
            .timed_out(|_| E::CutOff)
            .on(transient)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::CutOff));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_under_a_deadline_agrees() {
    #[retry(
        max = 5,
        base = "10ms",
        jitter = "none",
        timeout = "200ms",
        deadline = "300ms"
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::slow(always_transient, hangs);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::slow(always_transient, hangs);
    let by_closure = observe(
        &dep,
        policy(5, 10, 10_000, Jitter::None)
            .with_timeout(ms(200))
            .with_deadline(ms(300))
            .retry(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::TimedOut));
}

// ---------------------------------------------------------------------------
// 4. Retry-After: within `cap`, and above it.
// ---------------------------------------------------------------------------

fn hinted(ms: u64) -> Script {
    match ms {
        300 => |n| Err(E::Hinted(n, Duration::from_millis(300))),
        _ => |n| Err(E::Hinted(n, Duration::from_secs(5))),
    }
}

#[tokio::test(start_paused = true)]
async fn a_hint_within_cap_agrees() {
    #[retry(
        max = 3,
        base = "100ms",
        cap = "1s",
        retry_after = hint,
        on_retry = log_retry,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::new(hinted(300));
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(hinted(300));
    let by_closure = observe(
        &dep,
        policy(3, 100, 1000, Jitter::Full)
            .retrying()
            .retry_after(hint)
            .on_retry(log_retry)
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    for (_, _, wait) in &by_attribute.retries {
        assert!(*wait >= ms(300) && *wait <= ms(330), "{wait:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_hint_above_cap_agrees() {
    #[retry(
        max = 3,
        base = "100ms",
        cap = "1s",
        retry_after = hint,
        on_retry = log_retry,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let dep = Dep::new(hinted(5000));
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(hinted(5000));
    let by_closure = observe(
        &dep,
        policy(3, 100, 1000, Jitter::Full)
            .retrying()
            .retry_after(hint)
            .on_retry(log_retry)
            .on_give_up(log_give_up)
            .run(|| dep.call()),
    )
    .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(
        by_attribute.result,
        Err(E::Hinted(1, Duration::from_secs(5)))
    );
    assert_eq!(by_attribute.retries, []);
    assert_eq!(by_attribute.took, Duration::ZERO);
    assert_eq!(by_attribute.last, Some((Stop::HintTooLong, 1)));
    assert_eq!(by_attribute.gave_up[0].1.reason(), Stop::HintTooLong);
}

// ---------------------------------------------------------------------------
// 5. Budget: one static per front end, the same calls against each.
// ---------------------------------------------------------------------------

static ATTRIBUTE_BUDGET: RetryBudget = RetryBudget::new(6, 0.5);
static CLOSURE_BUDGET: RetryBudget = RetryBudget::new(6, 0.5);

#[tokio::test(start_paused = true)]
async fn a_budget_agrees() {
    #[retry(
        max = 4,
        base = "10ms",
        jitter = "none",
        budget = &ATTRIBUTE_BUDGET,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    let mut by_attribute = Vec::new();
    let mut by_closure = Vec::new();
    for script in [
        always_transient,
        always_transient,
        third_time_lucky,
        always_transient,
    ] {
        let dep = Dep::new(script);
        by_attribute.push(observe(&dep, attribute(&dep)).await);
        let dep = Dep::new(script);
        by_closure.push(
            observe(
                &dep,
                policy(4, 10, 10_000, Jitter::None)
                    .retrying()
                    .budget(&CLOSURE_BUDGET)
                    .on_give_up(log_give_up)
                    .run(|| dep.call()),
            )
            .await,
        );
        assert_eq!(ATTRIBUTE_BUDGET.tokens(), CLOSURE_BUDGET.tokens());
    }
    assert_eq!(by_attribute, by_closure);
    assert!(
        by_attribute
            .iter()
            .any(|seen| seen.last.map(|last| last.0) == Some(Stop::Budget)),
        "{by_attribute:#?}"
    );
}

// ---------------------------------------------------------------------------
// 6. Breaker: a refused call, and a refused retry that returns the caller's
//    own last error.
// ---------------------------------------------------------------------------

static ATTRIBUTE_BREAKER: CircuitBreaker = CircuitBreaker::new();
static CLOSURE_BREAKER: CircuitBreaker = CircuitBreaker::new();

fn open_attribute_breaker(_: &E, _: u32, _: Duration) {
    ATTRIBUTE_BREAKER.force_open();
}

fn open_closure_breaker(_: &E, _: u32, _: Duration) {
    CLOSURE_BREAKER.force_open();
}

#[tokio::test(start_paused = true)]
async fn a_breaker_agrees() {
    #[retry(
        max = 3,
        base = "10ms",
        jitter = "none",
        breaker = &ATTRIBUTE_BREAKER,
        on_retry = open_attribute_breaker,
        on_give_up = log_give_up
    )]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    async fn closure(dep: &Dep) -> Result<u32, E> {
        policy(3, 10, 10_000, Jitter::None)
            .retrying()
            .breaker(&CLOSURE_BREAKER)
            .on_retry(open_closure_breaker)
            .on_give_up(log_give_up)
            .run(|| dep.call())
            .await
    }

    // The first attempt fails; the hook opens the circuit during the wait;
    // the retry is refused, and the caller gets its own error back.
    ATTRIBUTE_BREAKER.reset();
    CLOSURE_BREAKER.reset();
    let dep = Dep::new(always_transient);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(always_transient);
    let by_closure = observe(&dep, closure(&dep)).await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::Transient(1)));
    assert_eq!(by_attribute.gave_up[0].1.reason(), Stop::Open);

    // The circuit is open from the start: the body never runs.
    let dep = Dep::new(always_transient);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::new(always_transient);
    let by_closure = observe(&dep, closure(&dep)).await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Err(E::Open));
    assert_eq!(by_attribute.starts, []);
}

static ATTRIBUTE_STATUS_BREAKER: CircuitBreaker = CircuitBreaker::new();
static CLOSURE_STATUS_BREAKER: CircuitBreaker = CircuitBreaker::new();

#[tokio::test(start_paused = true)]
async fn a_breaker_with_a_conversion_agrees() {
    #[derive(Debug, PartialEq)]
    struct Status(&'static str);

    #[retry(max = 3, base = "10ms", breaker = &ATTRIBUTE_STATUS_BREAKER, circuit_open = |_| Status("open"))]
    async fn attribute() -> Result<(), Status> {
        Err(Status("down"))
    }

    ATTRIBUTE_STATUS_BREAKER.force_open();
    CLOSURE_STATUS_BREAKER.force_open();
    let by_attribute = attribute().await;
    let attribute_last = last_call();
    let by_closure: Result<(), Status> = Policy::new()
        .with_base(ms(10))
        .retrying()
        .breaker_with(&CLOSURE_STATUS_BREAKER, |_| Status("open"))
        .run(|| async { Err(Status("down")) })
        .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute, Err(Status("open")));
    assert_eq!(attribute_last, last_call());
}

// ---------------------------------------------------------------------------
// 7. Hedging.
// ---------------------------------------------------------------------------

/// Call 1 hangs for a second, call 2 answers after 10ms.
fn first_is_slow(n: u32) -> Duration {
    if n == 1 {
        Duration::from_secs(1)
    } else {
        ms(10)
    }
}

fn succeeds(n: u32) -> Result<u32, E> {
    Ok(n)
}

fn after_100ms(_: u32) -> Duration {
    ms(100)
}

#[tokio::test(start_paused = true)]
async fn a_hedge_agrees() {
    #[retry(max = 3, hedge = "50ms", on_give_up = log_give_up)]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    async fn closure(dep: &Dep) -> Result<u32, E> {
        Policy::new()
            .with_max_attempts(3)
            .retrying()
            .hedge(Hedge::after(ms(50)))
            .on_give_up(log_give_up)
            .run(|| dep.call())
            .await
    }

    let dep = Dep::slow(succeeds, first_is_slow);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::slow(succeeds, first_is_slow);
    let by_closure = observe(&dep, closure(&dep)).await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.result, Ok(2));
    assert_eq!(by_attribute.starts, [ms(0), ms(50)]);
    assert_eq!(by_attribute.took, ms(60));

    // Every attempt fails after 100ms: hedges start at 50 and 100, and
    // the last failure to arrive is returned.
    let dep = Dep::slow(always_transient, after_100ms);
    let by_attribute = observe(&dep, attribute(&dep)).await;
    let dep = Dep::slow(always_transient, after_100ms);
    let by_closure = observe(&dep, closure(&dep)).await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute.gave_up.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn hedged_attempts_share_one_key_through_either_front_end() {
    #[retry(max = 3, hedge = "10ms")]
    async fn attribute(keys: &RefCell<Vec<IdempotencyKey>>) -> Result<(), E> {
        keys.borrow_mut()
            .push(current_attempt().unwrap().idempotency_key());
        tokio::time::sleep(ms(100)).await;
        Err(E::Transient(0))
    }

    let attribute_keys = RefCell::new(Vec::new());
    attribute(&attribute_keys).await.unwrap_err();
    let closure_keys = RefCell::new(Vec::new());
    Policy::new()
        .with_max_attempts(3)
        .retrying()
        .hedge(Hedge::after(ms(10)))
        .run(|| async {
            closure_keys
                .borrow_mut()
                .push(current_attempt().unwrap().idempotency_key());
            tokio::time::sleep(ms(100)).await;
            Err::<(), _>(E::Transient(0))
        })
        .await
        .unwrap_err();
    for keys in [attribute_keys.take(), closure_keys.take()] {
        assert_eq!(keys.len(), 3);
        assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
        assert_ne!(keys[0].as_u128(), 0);
    }
}

// ---------------------------------------------------------------------------
// 8. Nesting across the two front ends: `once` and `retry`.
// ---------------------------------------------------------------------------

#[retry(max = 3, base = "1ms")]
async fn inner3_attribute(dep: &Dep) -> Result<u32, E> {
    dep.call().await
}

async fn inner3_closure(dep: &Dep) -> Result<u32, E> {
    policy(3, 1, 10_000, Jitter::Full)
        .retry(|| dep.call())
        .await
}

async fn inner3(dep: &Dep, closure: bool) -> Result<u32, E> {
    if closure {
        inner3_closure(dep).await
    } else {
        inner3_attribute(dep).await
    }
}

#[retry(max = 3, base = "1ms")]
async fn outer_once(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    inner3(dep, closure_inside).await
}

#[retry(max = 3, base = "1ms", nested = "retry")]
async fn outer_retry(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    inner3(dep, closure_inside).await
}

async fn outer_closure(dep: &Dep, closure_inside: bool, nested: Nested) -> Result<u32, E> {
    policy(3, 1, 10_000, Jitter::Full)
        .with_nested(nested)
        .retry(|| inner3(dep, closure_inside))
        .await
}

#[tokio::test(start_paused = true)]
async fn nesting_holds_across_the_front_ends() {
    for closure_inside in [false, true] {
        // Once: three calls at the bottom, whichever front end is outside.
        let dep = Dep::new(always_transient);
        let by_attribute = observe(&dep, outer_once(&dep, closure_inside)).await;
        let dep = Dep::new(always_transient);
        let by_closure = observe(&dep, outer_closure(&dep, closure_inside, Nested::Once)).await;
        assert_eq!(
            by_attribute.starts.len(),
            3,
            "inner closure: {closure_inside}"
        );
        assert_eq!(by_attribute.last, Some((Stop::Nested, 1)));
        assert_eq!(by_attribute, by_closure, "inner closure: {closure_inside}");

        // Retry: nine.
        let dep = Dep::new(always_transient);
        let by_attribute = observe(&dep, outer_retry(&dep, closure_inside)).await;
        let dep = Dep::new(always_transient);
        let by_closure = observe(&dep, outer_closure(&dep, closure_inside, Nested::Retry)).await;
        assert_eq!(
            by_attribute.starts.len(),
            9,
            "inner closure: {closure_inside}"
        );
        assert_eq!(by_attribute.last, Some((Stop::Exhausted, 3)));
        assert_eq!(by_attribute, by_closure, "inner closure: {closure_inside}");
    }
}

/// An inner give-up the body handles leaves the body's own failure to the
/// outer's rules, whichever front end is inside or outside. The body's own
/// call pends, so the give-up is seen as handled (docs/nesting.md: a failure
/// with nothing pending after the give-up is taken for propagated).
#[tokio::test(start_paused = true)]
async fn a_handled_inner_give_up_is_retried_across_the_front_ends() {
    #[retry(max = 3, base = "1ms")]
    async fn outer(inner: &Dep, own: &Dep, closure_inside: bool) -> Result<u32, E> {
        let _fallback = inner3(inner, closure_inside).await.unwrap_or_default();
        own.call().await
    }

    fn pends(_: u32) -> Duration {
        ms(1)
    }

    for closure_inside in [false, true] {
        let (inner, own) = (
            Dep::new(always_transient),
            Dep::slow(always_transient, pends),
        );
        let by_attribute = outer(&inner, &own, closure_inside).await;
        let by_attribute = (by_attribute, inner.calls(), own.calls(), last_call());

        let (inner, own) = (
            Dep::new(always_transient),
            Dep::slow(always_transient, pends),
        );
        let by_closure = policy(3, 1, 10_000, Jitter::Full)
            .retry(|| async {
                let _fallback = inner3(&inner, closure_inside).await.unwrap_or_default();
                own.call().await
            })
            .await;
        let by_closure = (by_closure, inner.calls(), own.calls(), last_call());
        assert_eq!(by_attribute, by_closure, "inner closure: {closure_inside}");
        assert_eq!((by_attribute.1, by_attribute.2), (9, 3));
    }
}

// Plain functions and `run_blocking`, nested both ways, inside a tokio
// runtime (a blocking retry made from async code).

#[retry(max = 3, base = "1ms")]
fn blocking_inner_attribute(dep: &Dep) -> Result<u32, E> {
    dep.call_now()
}

fn blocking_inner_closure(dep: &Dep) -> Result<u32, E> {
    policy(3, 1, 10_000, Jitter::Full)
        .retrying()
        .run_blocking(|| dep.call_now())
}

fn blocking_inner(dep: &Dep, closure: bool) -> Result<u32, E> {
    if closure {
        blocking_inner_closure(dep)
    } else {
        blocking_inner_attribute(dep)
    }
}

#[retry(max = 3, base = "1ms")]
fn blocking_outer_attribute(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    blocking_inner(dep, closure_inside)
}

fn blocking_outer_closure(dep: &Dep, closure_inside: bool) -> Result<u32, E> {
    policy(3, 1, 10_000, Jitter::Full)
        .retrying()
        .run_blocking(|| blocking_inner(dep, closure_inside))
}

#[tokio::test]
async fn blocking_loops_nest_across_the_front_ends_inside_a_runtime() {
    for closure_inside in [false, true] {
        let dep = Dep::new(always_transient);
        let by_attribute = blocking_outer_attribute(&dep, closure_inside);
        let by_attribute = (by_attribute, dep.calls(), last_call());
        let dep = Dep::new(always_transient);
        let by_closure = blocking_outer_closure(&dep, closure_inside);
        let by_closure = (by_closure, dep.calls(), last_call());
        assert_eq!(by_attribute, by_closure, "inner closure: {closure_inside}");
        assert_eq!(by_attribute.1, 3);
        assert_eq!(
            by_attribute.2.map(|stopped| stopped.reason()),
            Some(Stop::Nested)
        );
    }
}

#[tokio::test]
async fn a_blocking_timeout_and_give_up_agree_inside_a_runtime() {
    fn sleeps(dep: &Dep) -> Result<u32, E> {
        std::thread::sleep(ms(20));
        dep.call_now()
    }

    #[retry(max = 2, base = "1ms", timeout = "5ms", on_give_up = log_give_up)]
    fn attribute(dep: &Dep) -> Result<u32, E> {
        sleeps(dep)
    }

    GAVE_UP.with(|log| log.borrow_mut().clear());
    let dep = Dep::new(succeeds);
    let by_attribute = attribute(&dep);
    let attribute_gave_up = GAVE_UP.with(|log| log.take());
    let dep = Dep::new(succeeds);
    let by_closure = policy(2, 1, 10_000, Jitter::Full)
        .with_timeout(ms(5))
        .retrying()
        .on_give_up(log_give_up)
        .run_blocking(|| sleeps(&dep));
    let closure_gave_up = GAVE_UP.with(|log| log.take());
    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute, Err(E::TimedOut));
    let reasons = |log: &[(Result<u32, E>, Stopped)]| {
        log.iter()
            .map(|(outcome, stopped)| (outcome.clone(), stopped.reason(), stopped.attempts()))
            .collect::<Vec<_>>()
    };
    assert_eq!(reasons(&attribute_gave_up), reasons(&closure_gave_up));
    assert_eq!(
        reasons(&attribute_gave_up),
        [(Err(E::TimedOut), Stop::Exhausted, 2)]
    );
}

// ---------------------------------------------------------------------------
// 9. Idempotency keys: one per call, the same across its attempts, whether
//    read in the closure's synchronous part or in its future.
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn keys_agree_across_attempts() {
    #[retry(max = 3, base = "1ms")]
    async fn attribute(keys: &RefCell<Vec<IdempotencyKey>>) -> Result<(), E> {
        keys.borrow_mut()
            .push(current_attempt().unwrap().idempotency_key());
        tokio::task::yield_now().await;
        Err(E::Transient(0))
    }

    let by_attribute = RefCell::new(Vec::new());
    attribute(&by_attribute).await.unwrap_err();
    attribute(&by_attribute).await.unwrap_err();

    // The closure reads the key where a request is built: in its
    // synchronous part on some attempts, in its future on others.
    let by_closure = RefCell::new(Vec::new());
    for _ in 0..2 {
        let attempt = Cell::new(0);
        policy(3, 1, 10_000, Jitter::Full)
            .retry(|| {
                attempt.set(attempt.get() + 1);
                if attempt.get() % 2 == 1 {
                    by_closure
                        .borrow_mut()
                        .push(current_attempt().unwrap().idempotency_key());
                }
                let by_closure = &by_closure;
                let attempt = attempt.get();
                async move {
                    if attempt % 2 == 0 {
                        by_closure
                            .borrow_mut()
                            .push(current_attempt().unwrap().idempotency_key());
                    }
                    tokio::task::yield_now().await;
                    Err::<(), _>(E::Transient(0))
                }
            })
            .await
            .unwrap_err();
    }

    for keys in [by_attribute.take(), by_closure.take()] {
        assert_eq!(keys.len(), 6);
        assert!(keys[..3].iter().all(|key| *key == keys[0]), "{keys:?}");
        assert!(keys[3..].iter().all(|key| *key == keys[3]), "{keys:?}");
        assert_ne!(keys[0], keys[3]);
    }
}

// ---------------------------------------------------------------------------
// 10. Closures capturing `&mut` state, `Send` with a `!Sync` error, and
//     dropping the future mid-wait.
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn an_fn_mut_closure_and_a_mut_argument_agree() {
    #[retry(max = 4, base = "1ms")]
    async fn attribute(calls: &mut u32) -> Result<u32, E> {
        *calls += 1;
        third_time_lucky(*calls)
    }

    let mut attribute_calls = 0;
    let by_attribute = attribute(&mut attribute_calls).await;
    let mut closure_calls = 0;
    let by_closure = policy(4, 1, 10_000, Jitter::Full)
        .retry(|| {
            closure_calls += 1;
            let outcome = third_time_lucky(closure_calls);
            async move { outcome }
        })
        .await;
    assert_eq!(by_attribute, by_closure);
    assert_eq!((attribute_calls, closure_calls), (3, 3));
}

/// `Send`, not `Sync`.
#[derive(Debug)]
struct NotSync(#[allow(dead_code)] Cell<u32>);

impl From<TimedOut> for NotSync {
    fn from(_: TimedOut) -> Self {
        NotSync(Cell::new(0))
    }
}

impl From<CircuitOpen> for NotSync {
    fn from(_: CircuitOpen) -> Self {
        NotSync(Cell::new(1))
    }
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

static SEND_BREAKER: CircuitBreaker = CircuitBreaker::new();
static SEND_BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

#[retry(max = 2, base = "1ms", timeout = "1s", budget = &SEND_BUDGET, breaker = &SEND_BREAKER,
        on_retry = |_, _, _| {}, on_give_up = |_, _| {})]
async fn not_sync_attribute() -> Result<(), NotSync> {
    Err(NotSync(Cell::new(2)))
}

#[tokio::test(start_paused = true)]
async fn both_futures_are_send_with_a_not_sync_error() {
    let by_attribute = assert_send(not_sync_attribute()).await;
    let policy = policy(2, 1, 10_000, Jitter::Full).with_timeout(ms(1000));
    let by_closure = assert_send(
        policy
            .retrying()
            .budget(&SEND_BUDGET)
            .breaker(&SEND_BREAKER)
            .on_retry(|_: &NotSync, _, _| {})
            .on_give_up(|_: &Result<(), NotSync>, _: &Stopped| {})
            .run(|| async { Err::<(), _>(NotSync(Cell::new(2))) }),
    )
    .await;
    assert!(by_attribute.is_err() && by_closure.is_err());
    let plain = assert_send(
        policy
            .retrying()
            .run(|| async { Err::<(), _>(NotSync(Cell::new(2))) }),
    );
    assert!(plain.await.is_err());
    let hedged = assert_send(
        policy
            .retrying()
            .hedge(Hedge::after(ms(5)))
            .run(|| async { Err::<(), _>(NotSync(Cell::new(2))) }),
    );
    assert!(hedged.await.is_err());
}

#[tokio::test(start_paused = true)]
async fn dropping_either_future_mid_wait_stops_it() {
    #[retry(max = 5, base = "100ms", jitter = "none")]
    async fn attribute(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    // A call that ended before, whose record a dropped call leaves alone.
    let _ = policy(1, 1, 10_000, Jitter::Full)
        .retry(|| async { Err::<(), _>(E::Permanent(0)) })
        .await;
    let before = last_call();

    let dep = Dep::new(always_transient);
    let by_attribute = tokio::time::timeout(ms(150), attribute(&dep)).await;
    tokio::time::sleep(ms(10_000)).await;
    let by_attribute = (by_attribute.is_err(), dep.starts(), last_call());

    let dep = Dep::new(always_transient);
    let by_closure = tokio::time::timeout(
        ms(150),
        policy(5, 100, 10_000, Jitter::None).retry(|| dep.call()),
    )
    .await;
    tokio::time::sleep(ms(10_000)).await;
    let by_closure = (by_closure.is_err(), dep.starts(), last_call());

    assert_eq!(by_attribute, by_closure);
    assert_eq!(by_attribute, (true, vec![ms(0), ms(100)], before));
}

/// An inner loop dropped mid-wait by the outer body (a `select!` with a
/// timer) is not a give-up: the outer's own failure is retried, whichever
/// front end the inner loop is.
#[tokio::test(start_paused = true)]
async fn an_inner_loop_dropped_mid_wait_agrees() {
    async fn body(inner: &Dep, own: &Dep, closure_inside: bool) -> Result<u32, E> {
        let _ = tokio::time::timeout(ms(50), async {
            if closure_inside {
                policy(5, 100, 10_000, Jitter::None)
                    .retry(|| inner.call())
                    .await
            } else {
                inner_five(inner).await
            }
        })
        .await;
        own.call().await
    }

    #[retry(max = 5, base = "100ms", jitter = "none")]
    async fn inner_five(dep: &Dep) -> Result<u32, E> {
        dep.call().await
    }

    #[retry(max = 3, base = "1ms")]
    async fn outer(inner: &Dep, own: &Dep, closure_inside: bool) -> Result<u32, E> {
        body(inner, own, closure_inside).await
    }

    let mut seen = Vec::new();
    for closure_inside in [false, true] {
        let (inner, own) = (Dep::new(always_transient), Dep::new(always_transient));
        let result = outer(&inner, &own, closure_inside).await;
        seen.push((
            result,
            inner.calls(),
            own.calls(),
            last_call().map(|s| (s.reason(), s.attempts())),
        ));
        let (inner, own) = (Dep::new(always_transient), Dep::new(always_transient));
        let result = policy(3, 1, 10_000, Jitter::Full)
            .retry(|| body(&inner, &own, closure_inside))
            .await;
        seen.push((
            result,
            inner.calls(),
            own.calls(),
            last_call().map(|s| (s.reason(), s.attempts())),
        ));
    }
    for shown in &seen {
        assert_eq!(shown, &seen[0], "{seen:#?}");
    }
    // The inner loop is cut off after its first call in each outer attempt;
    // the body's own failure is retried.
    assert_eq!(
        seen[0],
        (Err(E::Transient(3)), 3, 3, Some((Stop::Exhausted, 3)))
    );
}

// ---------------------------------------------------------------------------
// 11. An error type that is not `Send` (`Box<dyn Error>`): the attribute's
//     future is `Send` when its body's is (the error is dropped before the
//     wait); so is the closure API's, without a breaker.
// ---------------------------------------------------------------------------

type BoxError = Box<dyn std::error::Error>;

#[retry(max = 3, base = "1ms")]
async fn not_send_error_attribute(calls: &std::sync::atomic::AtomicU32) -> Result<u32, BoxError> {
    tokio::task::yield_now().await;
    calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Err("down".into())
}

#[tokio::test(start_paused = true)]
async fn both_futures_are_send_with_an_error_that_is_not_send() {
    use std::sync::atomic::{AtomicU32, Ordering};

    let attribute_calls = AtomicU32::new(0);
    let by_attribute = assert_send(not_send_error_attribute(&attribute_calls)).await;
    let closure_calls = AtomicU32::new(0);
    let policy = policy(3, 1, 10_000, Jitter::Full);
    let by_closure = assert_send(policy.retry(|| async {
        tokio::task::yield_now().await;
        closure_calls.fetch_add(1, Ordering::Relaxed);
        Err::<u32, BoxError>("down".into())
    }))
    .await;
    assert_eq!(
        by_attribute.unwrap_err().to_string(),
        by_closure.unwrap_err().to_string()
    );
    assert_eq!(
        attribute_calls.load(Ordering::Relaxed),
        closure_calls.load(Ordering::Relaxed)
    );
    // The same through `on(..)`, `on_give_up` and `timed_out`.
    let closure_calls = AtomicU32::new(0);
    let by_closure = assert_send(
        policy
            .on(|_: &BoxError| true)
            .on_give_up(|_: &Result<u32, BoxError>, _: &Stopped| {})
            .run(|| async {
                tokio::task::yield_now().await;
                closure_calls.fetch_add(1, Ordering::Relaxed);
                Err::<u32, BoxError>("down".into())
            }),
    )
    .await;
    assert!(by_closure.is_err());
    assert_eq!(closure_calls.load(Ordering::Relaxed), 3);
}
