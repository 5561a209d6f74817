//! `CircuitBreakerLayer` alone in front of a hyper client, against a real
//! axum server on 127.0.0.1 that answers 503: what the breaker hears of
//! each call. A transient failure counts against the dependency whatever
//! the method (docs/breaker.md, the tower module's docs: a POST that got a
//! 503 "counts against the budget and the breaker all the same"), so a
//! dependency that answers every POST with 503 opens the circuit as one
//! that answers every GET so does.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::{BreakerError, CircuitBreakerLayer};
use retry_runtime::{CircuitBreaker, CircuitState};
use tower::{Service, ServiceBuilder, ServiceExt};

fn hyper_client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>()
}

/// Two POSTs answered 503 are two failures in a row: the circuit opens and
/// the third POST is refused without reaching the server.
#[tokio::test]
async fn posts_answered_503_open_the_breaker_layers_circuit() {
    static GUARD: CircuitBreaker = CircuitBreaker::new()
        .with_name("breaker_layer_posts")
        .with_consecutive_failures(2);
    let (server, hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let mut service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(hyper_client());
    let post = || {
        http::Request::post(server.url("/"))
            .body(Full::new(Bytes::from_static(b"charge")))
            .unwrap()
    };
    for _ in 0..2 {
        let response = service.ready().await.unwrap().call(post()).await.unwrap();
        assert_eq!(response.status(), 503);
    }
    assert_eq!(GUARD.state(), CircuitState::Open, "two 503s in a row");
    let third = service.ready().await.unwrap().call(post()).await;
    assert!(matches!(third, Err(BreakerError::Open(_))), "{third:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

/// The same with GETs, for comparison: it opens as well.
#[tokio::test]
async fn gets_answered_503_open_the_breaker_layers_circuit() {
    static GUARD: CircuitBreaker = CircuitBreaker::new()
        .with_name("breaker_layer_gets")
        .with_consecutive_failures(2);
    let (server, hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let mut service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(&GUARD))
        .service(hyper_client());
    let get = || {
        http::Request::get(server.url("/"))
            .body(Full::default())
            .unwrap()
    };
    for _ in 0..2 {
        let response = service.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 503);
    }
    assert_eq!(GUARD.state(), CircuitState::Open);
    let third = service.ready().await.unwrap().call(get()).await;
    assert!(matches!(third, Err(BreakerError::Open(_))), "{third:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}
