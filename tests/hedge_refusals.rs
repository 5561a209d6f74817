//! A hedged attempt refused by a breaker is no answer from the dependency
//! while another attempt runs.
//!
//! A `HedgeLayer` over a `CircuitBreakerLayer` whose circuit is half-open
//! with one probe allowed: the first copy of the request is the probe, and
//! the hedge, sent while it runs, is refused. The refusal is no answer from
//! the dependency (docs/hedging.md: each attempt follows the breaker rules
//! of the retry loop's, where a refused attempt starts no more and a call
//! whose attempts failed gets the last real error, not `CircuitOpen`), so
//! the call waits for the probe. It used to end the call at the hedge with
//! `BreakerError::Open`, dropping the probe: with the server healthy, no
//! call slower than the hedge delay could ever close the circuit. A real
//! server on 127.0.0.1; the clock is paused.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::tower::{BreakerError, CircuitBreakerLayer};
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new().with_max_attempts(3);

/// Opens on one failure for a second; one probe at a time, which closes it.
const fn breaker(name: &'static str) -> CircuitBreaker {
    CircuitBreaker::new()
        .with_name(name)
        .with_consecutive_failures(1)
        .with_open_for(Duration::from_secs(1))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1)
}

/// A healthy server that takes 100 ms to answer; counts its hits.
async fn slow_server() -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            get(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                "fresh"
            }),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, 0).await, hits)
}

/// Trips `breaker` and lets its open period pass: the next call is its one
/// probe.
async fn half_open(breaker: &CircuitBreaker) {
    breaker.acquire().unwrap().record(false);
    assert_eq!(breaker.state(), CircuitState::Open);
    tokio::time::sleep(Duration::from_millis(1001)).await;
}

#[tokio::test(start_paused = true)]
async fn a_refused_hedge_leaves_the_probe_running() {
    static GUARD: CircuitBreaker = breaker("hedge_half_open_probe");
    let (server, hits) = slow_server().await;
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(
            &POLICY,
            Hedge::after(Duration::from_millis(20)),
        ))
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(
            Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(0)
                .build_http::<Full<Bytes>>(),
        );
    half_open(&GUARD).await;
    let request = http::Request::get(server.url("/")).body(Full::default());
    let answer = client.ready().await.unwrap().call(request.unwrap()).await;
    let response = answer.expect("the probe's answer, not the hedge's refusal");
    assert_eq!(response.status(), 200);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the refused hedge sent nothing"
    );
    assert_eq!(GUARD.state(), CircuitState::Closed, "the probe closed it");
}

/// A refusal with nothing else running is still the call's answer: the
/// first copy refused by an open circuit ends the call at once.
#[tokio::test(start_paused = true)]
async fn a_refused_first_copy_ends_the_call() {
    static GUARD: CircuitBreaker = breaker("hedge_half_open_refused_first");
    let (server, hits) = slow_server().await;
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(
            &POLICY,
            Hedge::after(Duration::from_millis(20)),
        ))
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(
            Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(0)
                .build_http::<Full<Bytes>>(),
        );
    GUARD.force_open();
    let request = http::Request::get(server.url("/")).body(Full::default());
    let started = tokio::time::Instant::now();
    let answer = client.ready().await.unwrap().call(request.unwrap()).await;
    assert!(matches!(answer, Err(BreakerError::Open(_))), "{answer:?}");
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[derive(Debug, PartialEq)]
enum Error {
    Open,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

/// A refusal is not retried.
fn transient(error: &Error) -> bool {
    !matches!(error, Error::Open)
}

static SIDE: CircuitBreaker = breaker("hedge_refusals_side");

/// A call guarded by a breaker of its own (a breaker-only guard).
#[retry(max = 1, breaker = &SIDE)]
async fn side_call() -> Result<(), Error> {
    Ok(())
}

/// The hedge's body calls `side_call` first, which its breaker refuses.
#[retry(max = 2, hedge = "20ms", on = transient)]
async fn hedged(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    if call == 2 {
        side_call().await?;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(call)
}

/// Under the attribute: a hedged attempt that fails because a breaker
/// inside it refused a call leaves the first attempt running, and the call
/// gets its answer. It used to return the refusal at the hedge, as an error
/// `on` rejects.
#[tokio::test(start_paused = true)]
async fn a_hedge_refused_inside_leaves_the_first_attempt_running() {
    SIDE.force_open();
    let calls = AtomicU32::new(0);
    let started = tokio::time::Instant::now();
    assert_eq!(hedged(&calls).await, Ok(1));
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
