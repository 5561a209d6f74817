//! A refusal the body handled is not the attempt's failure.
//!
//! A service often asks a side dependency behind a breaker of its own and
//! falls back when that breaker refuses (`unwrap_or_default`, a cached
//! answer), then calls the dependency it is about. When that second call
//! fails, the attempt failed for a real reason: it is judged by the
//! function's own rules (DESIGN §4.11: "a handled give-up does not switch
//! off the outer's retries"; §4.15: a retryable failure starts the next
//! hedged attempt at once, an error `on` rejects is returned at once), and
//! the function's own breaker counts the failure (docs/breaker.md: only a
//! call refused inside an attempt is not counted against it). The refusal
//! used to stick to the attempt: a hedged call started no more attempts
//! (reason `open`) or waited for the others instead of returning, and the
//! breaker of a retried function never heard of the failures. Paused clock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{last_call, retry, CircuitBreaker, CircuitOpen, CircuitState, Stop};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq)]
enum Error {
    Busy,
    Invalid,
    Open,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

fn transient(error: &Error) -> bool {
    matches!(error, Error::Busy)
}

/// A side dependency's breaker, held open by each test.
const fn side(name: &'static str) -> CircuitBreaker {
    CircuitBreaker::new().with_name(name)
}

static PROMO: CircuitBreaker = side("handled_refusals_promo");

/// A breaker-only guard around the side dependency.
#[retry(max = 1, breaker = &PROMO)]
async fn discount() -> Result<u32, Error> {
    Ok(5)
}

/// The dependency: 10 ms, then what `answer` says for this call.
async fn charge(calls: &AtomicU32, answer: fn(u32) -> Result<u32, Error>) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    sleep(Duration::from_millis(10)).await;
    answer(call)
}

#[retry(max = 3, hedge = "50ms", on = transient)]
async fn hedged_quote(calls: &AtomicU32) -> Result<u32, Error> {
    let off = discount().await.unwrap_or_default();
    let price = charge(
        calls,
        |call| if call == 1 { Err(Error::Busy) } else { Ok(100) },
    )
    .await?;
    Ok(price - off)
}

/// A retryable failure after a handled refusal starts the next hedged
/// attempt at once, as it does without the refusal.
#[tokio::test(start_paused = true)]
async fn a_hedged_attempt_failing_after_a_handled_refusal_is_retried() {
    PROMO.force_open();
    let calls = AtomicU32::new(0);
    let started = Instant::now();
    assert_eq!(hedged_quote(&calls).await, Ok(100));
    let stopped = last_call().unwrap();
    assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Done, 2));
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

static PROMO_2: CircuitBreaker = side("handled_refusals_promo_2");

#[retry(max = 1, breaker = &PROMO_2)]
async fn discount_2() -> Result<u32, Error> {
    Ok(5)
}

/// Attempt 1 is refused its discount, runs 30 ms and fails with an error
/// `on` rejects; the hedge started at 20 ms would answer at 120 ms.
#[retry(max = 3, hedge = "20ms", on = transient)]
async fn hedged_order(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    let off = discount_2().await.unwrap_or_default();
    if call == 1 {
        sleep(Duration::from_millis(30)).await;
        return Err(Error::Invalid);
    }
    sleep(Duration::from_millis(100)).await;
    Ok(100 - off)
}

/// An error `on` rejects after a handled refusal is returned at once, the
/// hedge dropped, as it is without the refusal.
#[tokio::test(start_paused = true)]
async fn a_rejected_error_after_a_handled_refusal_ends_the_hedged_call() {
    PROMO_2.force_open();
    let calls = AtomicU32::new(0);
    let started = Instant::now();
    assert_eq!(hedged_order(&calls).await, Err(Error::Invalid));
    let stopped = last_call().unwrap();
    assert_eq!(stopped.reason(), Stop::NotRetryable);
    assert_eq!(started.elapsed(), Duration::from_millis(30));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

static PROMO_3: CircuitBreaker = side("handled_refusals_promo_3");
static PAYMENTS: CircuitBreaker = CircuitBreaker::new()
    .with_name("handled_refusals_payments")
    .with_consecutive_failures(3);

#[retry(max = 1, breaker = &PROMO_3)]
async fn discount_3() -> Result<u32, Error> {
    Ok(5)
}

/// Guarded by `PAYMENTS`; the payments service is down.
#[retry(max = 2, base = "10ms", jitter = "none", breaker = &PAYMENTS, on = transient)]
async fn pay(calls: &AtomicU32) -> Result<u32, Error> {
    let off = discount_3().await.unwrap_or_default();
    let price = charge(calls, |_| Err(Error::Busy)).await?;
    Ok(price - off)
}

/// The payments failures that follow a handled refusal of the discount are
/// the payments service's: its breaker counts them and opens.
#[tokio::test(start_paused = true)]
async fn a_failure_after_a_handled_refusal_counts_against_the_breaker() {
    PROMO_3.force_open();
    let calls = AtomicU32::new(0);
    assert_eq!(pay(&calls).await, Err(Error::Busy));
    assert_eq!(pay(&calls).await, Err(Error::Busy));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "opened at the third failure"
    );
    assert_eq!(PAYMENTS.state(), CircuitState::Open);
    assert_eq!(last_call().unwrap().reason(), Stop::Open);
}

static PROMO_4: CircuitBreaker = side("handled_refusals_promo_4");
static ORDERS: CircuitBreaker = CircuitBreaker::new()
    .with_name("handled_refusals_orders")
    .with_consecutive_failures(1);

#[retry(max = 1, breaker = &PROMO_4)]
async fn discount_4() -> Result<u32, Error> {
    Ok(5)
}

/// Propagates the refusal with `?`: the attempt failed on it.
#[retry(max = 2, base = "10ms", jitter = "none", breaker = &ORDERS)]
async fn order(calls: &AtomicU32) -> Result<u32, Error> {
    let off = discount_4().await?;
    charge(calls, |_| Ok(100)).await.map(|price| price - off)
}

/// A refusal that fails the attempt is still no failure of the outer
/// breaker's dependency.
#[tokio::test(start_paused = true)]
async fn a_propagated_refusal_does_not_count_against_the_breaker() {
    PROMO_4.force_open();
    let calls = AtomicU32::new(0);
    assert_eq!(order(&calls).await, Err(Error::Open));
    assert_eq!(ORDERS.state(), CircuitState::Closed);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

static PROMO_5: CircuitBreaker = side("handled_refusals_promo_5");

#[retry(max = 1, breaker = &PROMO_5)]
async fn discount_5() -> Result<u32, Error> {
    Ok(5)
}

static HEDGED_STOPS: std::sync::Mutex<Vec<Stop>> = std::sync::Mutex::new(Vec::new());

/// Propagates the refusal, which its `on` does not retry.
#[retry(
    max = 2,
    hedge = "20ms",
    on = transient,
    on_give_up = |_: &Result<u32, Error>, stopped: &retry_runtime::Stopped| {
        HEDGED_STOPS.lock().unwrap().push(stopped.reason());
    }
)]
async fn hedged_discount() -> Result<u32, Error> {
    discount_5().await
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn checkout(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    hedged_discount().await
}

/// A hedged function whose `on` rejects the refusal it fails on returns it
/// as not retryable, as the retry loop does, and gives nothing up: the
/// function around judges it by its own rules (DESIGN §4.11), and retries.
#[tokio::test(start_paused = true)]
async fn a_refusal_on_rejects_is_not_a_give_up_of_a_hedged_function() {
    PROMO_5.force_open();
    let calls = AtomicU32::new(0);
    assert_eq!(checkout(&calls).await, Err(Error::Open));
    assert_eq!(last_call().unwrap().reason(), Stop::Exhausted);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(*HEDGED_STOPS.lock().unwrap(), [Stop::NotRetryable; 3]);
}
