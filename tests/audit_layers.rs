//! Layers as services write them, on a paused clock: a hedged inner call
//! refused by its breaker, three layers with the closure API or a hedged
//! function between, deadlines into the closure API and hedged calls, a
//! budget and a breaker named on two layers, fan-outs, a call dropped
//! mid-attempt, a plain `fn` in `spawn_blocking`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::{join_all, try_join_all};
use retry_runtime::{
    current_attempt, last_call, retry, CircuitBreaker, CircuitOpen, CircuitState, Policy,
    RetryBudget, Stop, TimedOut,
};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq, Clone)]
enum Error {
    Busy(u32),
    Invalid,
    Open,
    TimedOut,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

fn transient(e: &Error) -> bool {
    matches!(e, Error::Busy(_) | Error::TimedOut)
}

// ---- A. a hedged inner function refused by its own open breaker --------

static HEDGED_GUARD: CircuitBreaker = CircuitBreaker::new().with_name("audit_hedged_guard");

#[retry(max = 3, hedge = "20ms", breaker = &HEDGED_GUARD)]
async fn hedged_inner(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Ok(1)
}

#[retry(max = 3, base = "100ms", jitter = "none")]
async fn outer_of_hedged(calls: &AtomicU32, outer: &AtomicU32) -> Result<u32, Error> {
    outer.fetch_add(1, Ordering::SeqCst);
    hedged_inner(calls).await
}

static PLAIN_GUARD: CircuitBreaker = CircuitBreaker::new().with_name("audit_plain_guard");

#[retry(max = 3, breaker = &PLAIN_GUARD)]
async fn plain_inner(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Ok(1)
}

#[retry(max = 3, base = "100ms", jitter = "none")]
async fn outer_of_plain(calls: &AtomicU32, outer: &AtomicU32) -> Result<u32, Error> {
    outer.fetch_add(1, Ordering::SeqCst);
    plain_inner(calls).await
}

/// DESIGN §4.11: an inner call that gives up on an open breaker fails the
/// outer attempt, which is not retried. Hedged or not.
#[tokio::test(start_paused = true)]
async fn an_inner_call_refused_by_its_breaker_is_a_give_up_hedged_or_not() {
    PLAIN_GUARD.force_open();
    let (calls, outer) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(outer_of_plain(&calls, &outer).await, Err(Error::Open));
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
    assert_eq!(outer.load(Ordering::SeqCst), 1);

    HEDGED_GUARD.force_open();
    let (calls, outer) = (AtomicU32::new(0), AtomicU32::new(0));
    let started = Instant::now();
    assert_eq!(outer_of_hedged(&calls, &outer).await, Err(Error::Open));
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
    assert_eq!(outer.load(Ordering::SeqCst), 1);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

// ---- B. three layers of three attempts ---------------------------------

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn bottom(calls: &AtomicU32) -> Result<u32, Error> {
    Err(Error::Busy(calls.fetch_add(1, Ordering::SeqCst) + 1))
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn middle(calls: &AtomicU32) -> Result<u32, Error> {
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(10));
    policy.retrying().run(|| bottom(calls)).await
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn top(calls: &AtomicU32) -> Result<u32, Error> {
    Ok(middle(calls).await? + 1)
}

#[tokio::test(start_paused = true)]
async fn three_layers_with_the_closure_api_between_cost_three_calls() {
    let calls = AtomicU32::new(0);
    assert_eq!(top(&calls).await, Err(Error::Busy(3)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
}

#[retry(max = 3, hedge = "50ms", on = transient)]
async fn hedged_middle(calls: &AtomicU32) -> Result<u32, Error> {
    bottom(calls).await
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn top_of_hedged(calls: &AtomicU32) -> Result<u32, Error> {
    hedged_middle(calls).await
}

#[tokio::test(start_paused = true)]
async fn three_layers_with_a_hedged_middle_cost_three_calls() {
    let calls = AtomicU32::new(0);
    assert_eq!(top_of_hedged(&calls).await, Err(Error::Busy(3)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

// ---- C. deadlines into inner calls -------------------------------------

#[retry(max = 10, base = "40ms", jitter = "none", deadline = "100ms")]
async fn with_deadline(calls: &AtomicU32) -> Result<u32, Error> {
    let policy = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(30))
        .with_multiplier(1.0)
        .with_jitter(retry_runtime::Jitter::None);
    policy
        .retrying()
        .run(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            sleep(Duration::from_millis(10)).await;
            Err::<u32, _>(Error::Busy(0))
        })
        .await
}

/// The closure loop inside stops before the outer deadline: 10 ms attempts
/// and 30 ms waits fit three attempts (0, 40, 80) before 100 ms.
#[tokio::test(start_paused = true)]
async fn the_closure_api_inside_stops_at_the_outer_deadline() {
    let calls = AtomicU32::new(0);
    let started = Instant::now();
    assert_eq!(with_deadline(&calls).await, Err(Error::Busy(0)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(started.elapsed(), Duration::from_millis(90));
}

#[retry(max = 10, hedge = "30ms", on = transient)]
async fn hedged_inner_slow(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    sleep(Duration::from_secs(10)).await;
    Ok(1)
}

#[retry(max = 2, deadline = "100ms", timeout = "100ms")]
async fn outer_deadline_hedged(calls: &AtomicU32) -> Result<u32, Error> {
    hedged_inner_slow(calls).await
}

/// A hedged call inside starts no attempt past the outer deadline.
#[tokio::test(start_paused = true)]
async fn hedges_inside_start_before_the_outer_deadline_only() {
    let calls = AtomicU32::new(0);
    assert_eq!(outer_deadline_hedged(&calls).await, Err(Error::TimedOut));
    // 0, 30, 60, 90 ms.
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

// ---- D. a budget shared by layers --------------------------------------

static SHARED: RetryBudget = RetryBudget::new(10, 0.1);

#[retry(max = 3, base = "10ms", budget = &SHARED)]
async fn budget_inner(calls: &AtomicU32) -> Result<u32, Error> {
    Err(Error::Busy(calls.fetch_add(1, Ordering::SeqCst) + 1))
}

#[retry(max = 3, base = "10ms", budget = &SHARED)]
async fn budget_outer(calls: &AtomicU32) -> Result<u32, Error> {
    budget_inner(calls).await
}

/// 10 tokens: each failure takes one, retries while above 5.
#[tokio::test(start_paused = true)]
async fn a_shared_budget_is_drawn_by_the_inner_layer() {
    let calls = AtomicU32::new(0);
    assert_eq!(budget_outer(&calls).await, Err(Error::Busy(3)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The outer attempt's failure took a token too (10 - 3 - 1 = 6): the
    // next call's first failure leaves 5, and it is not retried.
    assert_eq!(budget_outer(&calls).await, Err(Error::Busy(4)));
    assert_eq!(last_call().unwrap().reason(), Stop::Budget);
}

// ---- E. one breaker on two layers, fallback, recovery ------------------

static PAY: CircuitBreaker = CircuitBreaker::new()
    .with_name("audit_pay")
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

static DOWN: AtomicU32 = AtomicU32::new(1);

#[retry(max = 2, base = "10ms", breaker = &PAY, on = transient)]
async fn pay_client() -> Result<u32, Error> {
    sleep(Duration::from_millis(5)).await;
    if DOWN.load(Ordering::SeqCst) == 1 {
        Err(Error::Busy(0))
    } else {
        Ok(7)
    }
}

#[retry(max = 2, base = "10ms", breaker = &PAY, on = transient)]
async fn pay_handler(fallback: bool) -> Result<u32, Error> {
    if fallback {
        Ok(pay_client().await.unwrap_or_default())
    } else {
        pay_client().await
    }
}

#[tokio::test(start_paused = true)]
async fn one_breaker_on_two_layers_closes_after_recovery() {
    for fallback in [true, false, true] {
        PAY.reset();
        DOWN.store(1, Ordering::SeqCst);
        for _ in 0..4 {
            let _ = pay_handler(fallback).await;
        }
        assert_eq!(PAY.state(), CircuitState::Open, "fallback {fallback}");
        DOWN.store(0, Ordering::SeqCst);
        sleep(Duration::from_millis(1001)).await;
        assert_eq!(pay_handler(fallback).await, Ok(7), "fallback {fallback}");
        assert_eq!(PAY.state(), CircuitState::Closed, "fallback {fallback}");
    }
}

// ---- F. fan-outs -------------------------------------------------------

#[retry(max = 3, base = "10ms", jitter = "none", on = transient)]
async fn item(id: u32, calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    sleep(Duration::from_millis(1)).await;
    if id == 2 {
        Err(Error::Busy(id))
    } else {
        Ok(id)
    }
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn batch_try(calls: &AtomicU32) -> Result<Vec<u32>, Error> {
    try_join_all((1..=3).map(|id| item(id, calls))).await
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn batch_join(calls: &AtomicU32) -> Result<Vec<u32>, Error> {
    join_all((1..=3).map(|id| item(id, calls)))
        .await
        .into_iter()
        .collect()
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn batch_select(calls: &AtomicU32) -> Result<u32, Error> {
    tokio::select! {
        a = item(2, calls) => a,
        _ = sleep(Duration::from_secs(5)) => Err(Error::Invalid),
    }
}

#[tokio::test(start_paused = true)]
async fn fan_outs_are_not_resent() {
    let calls = AtomicU32::new(0);
    assert_eq!(batch_try(&calls).await, Err(Error::Busy(2)));
    assert!(calls.load(Ordering::SeqCst) <= 5, "{calls:?}");
    let calls = AtomicU32::new(0);
    assert_eq!(batch_join(&calls).await, Err(Error::Busy(2)));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let calls = AtomicU32::new(0);
    assert_eq!(batch_select(&calls).await, Err(Error::Busy(2)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

// ---- G. cancellation mid-wait, then reuse ------------------------------

static PROBE: CircuitBreaker = CircuitBreaker::new()
    .with_name("audit_probe")
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

#[retry(max = 3, base = "100ms", jitter = "none", breaker = &PROBE, on = transient)]
async fn probed(fail: bool) -> Result<u32, Error> {
    sleep(Duration::from_millis(10)).await;
    if fail {
        Err(Error::Busy(0))
    } else {
        Ok(1)
    }
}

#[retry(max = 3, base = "100ms", jitter = "none")]
async fn around_probe(fail: bool) -> Result<u32, Error> {
    probed(fail).await
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_attempt_frees_the_probe() {
    PROBE.acquire().unwrap().record(false);
    sleep(Duration::from_millis(1001)).await;
    // Dropped while the probe runs.
    let dropped = tokio::time::timeout(Duration::from_millis(5), around_probe(false)).await;
    assert!(dropped.is_err());
    assert!(current_attempt().is_none());
    assert_eq!(around_probe(false).await, Ok(1));
    assert_eq!(PROBE.state(), CircuitState::Closed);
    assert!(current_attempt().is_none());
}

// ---- H. a plain fn in spawn_blocking, and the last call's hooks --------

#[retry(max = 3, base = "1ms", jitter = "none", on = transient)]
fn blocking_item(calls: &AtomicU32) -> Result<u32, Error> {
    Err(Error::Busy(calls.fetch_add(1, Ordering::SeqCst) + 1))
}

#[retry(max = 2, base = "10ms", jitter = "none")]
async fn around_blocking(calls: std::sync::Arc<AtomicU32>) -> Result<u32, Error> {
    let calls2 = calls.clone();
    tokio::task::spawn_blocking(move || blocking_item(&calls2))
        .await
        .map_err(|_| Error::Invalid)?
}

/// Work on another thread is not part of the attempt: both retry.
#[tokio::test(start_paused = true)]
async fn spawn_blocking_is_not_part_of_the_attempt() {
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    assert_eq!(around_blocking(calls.clone()).await, Err(Error::Busy(6)));
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    assert_eq!(last_call().unwrap().reason(), Stop::Exhausted);
}

// ---- I. one breaker on a hedged layer and the layer below --------------

static HEDGED_PAY: CircuitBreaker = CircuitBreaker::new()
    .with_name("audit_hedged_pay")
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

static HEDGED_DOWN: AtomicU32 = AtomicU32::new(1);

#[retry(max = 2, base = "10ms", breaker = &HEDGED_PAY, on = transient)]
async fn hedged_pay_client(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    sleep(Duration::from_millis(5)).await;
    if HEDGED_DOWN.load(Ordering::SeqCst) == 1 {
        Err(Error::Busy(0))
    } else {
        Ok(7)
    }
}

/// Falls back to a cached price when the payments client gives up.
#[retry(max = 2, hedge = "100ms", breaker = &HEDGED_PAY, on = transient)]
async fn hedged_pay_handler(calls: &AtomicU32) -> Result<u32, Error> {
    Ok(hedged_pay_client(calls).await.unwrap_or(1))
}

/// docs/breaker.md: an outer attempt whose last inner call under its
/// permit failed is recorded as a failure even when its body recovers, for
/// hedged attempts too: the circuit opens while the dependency is down, and
/// closes once it is back.
#[tokio::test(start_paused = true)]
async fn a_hedged_layer_with_a_fallback_records_the_inner_failure() {
    let calls = AtomicU32::new(0);
    for _ in 0..2 {
        assert_eq!(hedged_pay_handler(&calls).await, Ok(1));
    }
    assert_eq!(HEDGED_PAY.state(), CircuitState::Open, "{calls:?}");
    assert_eq!(hedged_pay_handler(&calls).await, Err(Error::Open));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    HEDGED_DOWN.store(0, Ordering::SeqCst);
    sleep(Duration::from_millis(1001)).await;
    assert_eq!(hedged_pay_handler(&calls).await, Ok(7));
    assert_eq!(HEDGED_PAY.state(), CircuitState::Closed);
}
