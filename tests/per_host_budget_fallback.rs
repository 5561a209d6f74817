//! Per-host breakers from a `Registry` whose upstreams have no budget of
//! their own (the docs' `Upstream::new().with_breaker(..)`), on a layer or
//! middleware given a budget: the front end's budget still bounds the
//! retries, in the tower layer and in the reqwest middleware alike. Against
//! a real axum server on 127.0.0.1 that is down.

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
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{CircuitBreaker, Jitter, Policy, RetryBudget, Stop};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// A budget already spent: no retry is allowed.
fn spent() -> RetryBudget {
    let budget = RetryBudget::new(10, 0.1);
    for _ in 0..10 {
        budget.record_failure();
    }
    assert!(!budget.allows_retry());
    budget
}

/// Breakers per host, no budgets: the front end's budget applies.
fn breakers_only() -> Arc<Registry> {
    Arc::new(Registry::new(64, |_host: &str| {
        Upstream::new().with_breaker(CircuitBreaker::new())
    }))
}

#[tokio::test(start_paused = true)]
async fn the_tower_layers_budget_bounds_retries_to_hosts_without_one() {
    let (down, hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(
            RetryLayer::new(&POLICY)
                .with_budget(Arc::new(spent()))
                .per_authority(breakers_only()),
        )
        .service(client);
    let request = http::Request::get(down.url("/"))
        .body(Full::default())
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), 503);
    let last = retry_runtime::last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Budget, 1));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_middlewares_budget_bounds_retries_to_hosts_without_one() {
    let (down, hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(POLICY)
                .with_budget(Arc::new(spent()))
                .per_authority(breakers_only()),
        )
        .build();
    let response = client.get(down.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let last = retry_runtime::last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Budget, 1));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
