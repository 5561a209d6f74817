//! A bounded registry of per-host breakers under many hosts: the entry
//! forgotten to make room is the least recently used, as
//! docs/integrations.md says, so a host that is down and still being called
//! keeps its open circuit while other hosts come and go. Through the tower
//! layer's `per_authority`, against real axum servers on 127.0.0.1.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{CircuitBreaker, Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(2)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

#[tokio::test(start_paused = true)]
async fn a_host_still_called_keeps_its_open_circuit_while_other_hosts_come_and_go() {
    // Room for four hosts.
    let upstreams = Arc::new(Registry::new(4, |_host: &str| {
        Upstream::new().with_breaker(
            CircuitBreaker::new()
                .with_consecutive_failures(2)
                .with_open_for(Duration::from_secs(600))
                .with_jitter(0.0),
        )
    }));
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).per_authority(Arc::clone(&upstreams)))
        .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let get = |server: &servers::Server| {
        http::Request::get(server.url("/"))
            .body(Full::new(Bytes::new()))
            .unwrap()
    };

    let (down, down_hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let response = client.ready().await.unwrap().call(get(&down)).await;
    assert_eq!(response.unwrap().status(), 503);
    assert_eq!(down_hits.load(Ordering::SeqCst), 2); // the circuit opened

    // Eight other hosts, one after another; between two of them, another
    // call to the host that is down, refused by its circuit.
    for _ in 0..8 {
        let refused = client.ready().await.unwrap().call(get(&down)).await;
        assert!(matches!(refused, Err(BreakerError::Open(_))));
        let (up, _) = servers::answering(StatusCode::OK).await;
        let response = client.ready().await.unwrap().call(get(&up)).await;
        assert_eq!(response.unwrap().status(), 200);
        assert!(upstreams.len() <= 4);
    }
    // The host that is down was never sent another request.
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);
}
