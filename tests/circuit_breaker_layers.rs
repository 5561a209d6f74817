//! One breaker named on two layers: a service function and the client
//! function it calls both say `breaker = &PAYMENTS` (docs/breaker.md, "One
//! breaker on two layers"). The inner call runs under the outer attempt's permit, so
//! after the dependency recovers the circuit closes; before, the outer call
//! took the half-open circuit's probe, the inner call was refused, the
//! refusal counted as the probe failing, and the circuit never closed
//! (issue 17: 0 of 20 calls succeeded over 40 s of a healthy dependency).
//!
//! On a paused clock, with the rng seeded, so every figure is exact.

use std::cell::Cell;
use std::time::Duration;

use retry_runtime::{retry, seed_thread_rng, CircuitBreaker, CircuitOpen, CircuitState};
use tokio::time::{advance, sleep};

#[derive(Debug, PartialEq)]
enum PayError {
    Unavailable,
    Open,
}

impl From<CircuitOpen> for PayError {
    fn from(_: CircuitOpen) -> Self {
        PayError::Open
    }
}

fn is_transient(error: &PayError) -> bool {
    *error == PayError::Unavailable
}

/// The payments dependency as the client sees it, and the breaker both
/// layers name.
struct Payments {
    breaker: &'static CircuitBreaker,
    up: Cell<bool>,
    calls: Cell<u32>,
}

impl Payments {
    fn new(breaker: &'static CircuitBreaker) -> Self {
        Payments {
            breaker,
            up: Cell::new(false),
            calls: Cell::new(0),
        }
    }
}

/// The client function: one request to the payments service, 50 ms each.
#[retry(max = 3, base = "100ms", on = is_transient, breaker = payments.breaker)]
async fn charge(payments: &Payments) -> Result<(), PayError> {
    payments.calls.set(payments.calls.get() + 1);
    sleep(Duration::from_millis(50)).await;
    if payments.up.get() {
        Ok(())
    } else {
        Err(PayError::Unavailable)
    }
}

/// The service function (a handler), retried too, with the same breaker.
#[retry(max = 2, base = "100ms", on = is_transient, breaker = payments.breaker)]
async fn checkout(payments: &Payments) -> Result<(), PayError> {
    charge(payments).await
}

/// Sends `concurrent` checkouts at once every 2 s, `rounds` times; the
/// successes.
async fn traffic(payments: &Payments, concurrent: usize, rounds: usize) -> usize {
    let mut successes = 0;
    for _ in 0..rounds {
        let outcomes = futures_join((0..concurrent).map(|_| checkout(payments))).await;
        successes += outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        advance(Duration::from_secs(2)).await;
    }
    successes
}

/// Polls every future to completion on this task.
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(&mut outputs) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// Takes the dependency down and sends `concurrent` checkouts every 2 s
/// until the circuit opens; the rounds it took.
async fn take_down(payments: &Payments, concurrent: usize) -> usize {
    payments.up.set(false);
    let mut rounds = 0;
    while payments.breaker.state() != CircuitState::Open {
        assert_eq!(traffic(payments, concurrent, 1).await, 0);
        rounds += 1;
        assert!(rounds < 100, "the circuit never opened");
    }
    rounds
}

static SEQUENTIAL: CircuitBreaker = CircuitBreaker::new().with_name("payments");

#[tokio::test(start_paused = true)]
async fn one_request_every_two_seconds_closes_the_circuit_after_recovery() {
    seed_thread_rng(17);
    let payments = Payments::new(&SEQUENTIAL);
    // Down: each checkout is one outcome for the breaker (the inner call's
    // three attempts run under the outer attempt's permit), so the default
    // ten failures in a row open it after ten checkouts, each making three
    // calls (the outer call does not retry what the inner gave up on).
    assert_eq!(take_down(&payments, 1).await, 10);
    assert_eq!(payments.calls.get(), 30);

    payments.up.set(true);
    let successes = traffic(&payments, 1, 20).await;
    assert_eq!(SEQUENTIAL.state(), CircuitState::Closed);
    // The first is refused while the open period (2.5 to 5 s with the
    // default jitter) runs; then three probes succeed one after another and
    // close it.
    assert_eq!(successes, 19, "successes out of 20 over 40 s");
}

static CONCURRENT: CircuitBreaker = CircuitBreaker::new().with_name("payments");

#[tokio::test(start_paused = true)]
async fn ten_concurrent_requests_every_two_seconds_close_the_circuit_after_recovery() {
    seed_thread_rng(17);
    let payments = Payments::new(&CONCURRENT);
    take_down(&payments, 10).await;

    payments.up.set(true);
    let successes = traffic(&payments, 10, 30).await;
    assert_eq!(CONCURRENT.state(), CircuitState::Closed);
    // One or two rounds refused while open, then a half-open round lets the
    // three probes through (the other seven are refused), which close it.
    assert_eq!(successes, 283, "successes out of 300 over 60 s");
}

static HALF_OPEN: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

#[tokio::test(start_paused = true)]
async fn the_outer_attempt_is_the_probe_and_the_inner_call_runs_under_it() {
    let payments = Payments::new(&HALF_OPEN);
    assert_eq!(checkout(&payments).await, Err(PayError::Unavailable));
    assert_eq!(HALF_OPEN.state(), CircuitState::Open);
    let calls = payments.calls.get();

    payments.up.set(true);
    advance(Duration::from_secs(1)).await;
    // The one probe place goes to the outer attempt; the inner call is not
    // refused, and one success (recorded once) closes the circuit.
    assert_eq!(checkout(&payments).await, Ok(()));
    assert_eq!(payments.calls.get(), calls + 1);
    assert_eq!(HALF_OPEN.state(), CircuitState::Closed);
}

static GATEWAY: CircuitBreaker = CircuitBreaker::new().with_name("gateway");
static LEDGER: CircuitBreaker = CircuitBreaker::new().with_name("ledger");

/// Calls the ledger, whose own breaker is open.
#[retry(max = 2, on = is_transient, breaker = &LEDGER)]
async fn post_entry(calls: &Cell<u32>) -> Result<(), PayError> {
    calls.set(calls.get() + 1);
    Ok(())
}

/// Retries every error, under the gateway's breaker.
#[retry(max = 2, breaker = &GATEWAY)]
async fn settle(calls: &Cell<u32>) -> Result<(), PayError> {
    post_entry(calls).await
}

#[tokio::test(start_paused = true)]
async fn refusals_by_an_inner_breaker_are_not_failures_of_the_outer_dependency() {
    LEDGER.force_open();
    let calls = Cell::new(0);
    for _ in 0..30 {
        assert_eq!(settle(&calls).await, Err(PayError::Open));
    }
    assert_eq!(calls.get(), 0);
    // Thirty failed attempts, each caused by the ledger's refusal: none of
    // them says anything of the gateway's dependency.
    assert_eq!(GATEWAY.state(), CircuitState::Closed);
    LEDGER.reset();
    assert_eq!(settle(&calls).await, Ok(()));
}
