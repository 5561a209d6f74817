//! `CircuitBreakerLayer` around a tonic channel, whose request bodies are
//! not `Clone`, against a real tonic server on 127.0.0.1: alone, and inside
//! a `HedgeLayer` as docs/hedging.md puts it ("a `CircuitBreakerLayer`
//! inside it guards each copy"). The layer kept a clone of every request
//! for its classifier, so neither stack compiled; it now keeps the
//! request's head alone.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use grpc_server::{serve, status};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::tower::{CircuitBreakerLayer, HttpClassifier};
use retry_runtime::{CircuitBreaker, CircuitState, Policy};
use tonic::Code;
use tower::ServiceBuilder;

const fn two_in_a_row() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0)
}

fn hello() -> tonic::Request<Bytes> {
    tonic::Request::new(Bytes::from_static(b"hello"))
}

/// Two UNAVAILABLE answers open the circuit; the third call is refused
/// without reaching the server.
#[tokio::test(start_paused = true)]
async fn a_breaker_layer_guards_a_tonic_channel() {
    static GUARD: CircuitBreaker = two_in_a_row();
    let (channel, calls) = serve([
        status(Code::Unavailable, None),
        status(Code::Unavailable, None),
    ])
    .await;
    let channel = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(channel);

    for _ in 0..2 {
        let failed = grpc_server::say(channel.clone(), hello())
            .await
            .unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable);
    }
    assert_eq!(GUARD.state(), CircuitState::Open);
    assert!(grpc_server::say(channel, hello()).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// The documented hedge stack: the hedge layer over a breaker layer over
/// the channel. UNAVAILABLE once, then the next copy carries the message.
#[tokio::test(start_paused = true)]
async fn a_breaker_layer_inside_the_hedge_layer_guards_each_copy() {
    static GUARD: CircuitBreaker = two_in_a_row();
    static POLICY: Policy = Policy::new().with_max_attempts(3);
    let (channel, calls) = serve([status(Code::Unavailable, None)]).await;
    let channel = ServiceBuilder::new()
        .layer(
            HedgeLayer::new(&POLICY, Hedge::after(Duration::from_secs(60)))
                .with_classifier(HttpClassifier::default()),
        )
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(channel);

    let reply = grpc_server::say(channel, hello()).await.unwrap();
    assert_eq!(reply, "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // One failure, then a success: closed.
    assert_eq!(GUARD.state(), CircuitState::Closed);
}
