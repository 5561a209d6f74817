//! Policies, budgets and breakers built at run time and held in an `Arc`
//! (a configuration reloaded, or one per client): the tower layer, the
//! reqwest middleware, the closure API and `#[retry(policy = ..)]` take them
//! as they take `&'static` ones, with nothing leaked.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{retry, CircuitBreaker, CircuitState, Jitter, Policy, RetryBudget};
use tower::{Service, ServiceBuilder, ServiceExt};

type Hits = Arc<AtomicU32>;

/// 503 for the first two requests, then 200.
async fn server() -> (servers::Server, Hits) {
    let hits = Hits::default();
    let router = Router::new()
        .route(
            "/",
            any(|State(hits): State<Hits>| async move {
                if hits.fetch_add(1, Ordering::SeqCst) < 2 {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::OK
                }
            }),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, 0).await, hits)
}

/// What a service would read from its configuration at start-up.
fn loaded() -> (Arc<Policy>, Arc<RetryBudget>, Arc<CircuitBreaker>) {
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(10))
        .with_jitter(Jitter::None);
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(10)
        .with_min_calls(1000);
    (
        Arc::new(policy),
        Arc::new(RetryBudget::new(10, 0.5)),
        Arc::new(breaker),
    )
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_takes_its_configuration_in_arcs() {
    let (policy, budget, breaker) = loaded();
    let (server, hits) = server().await;
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(
            RetryLayer::new(Arc::clone(&policy))
                .with_budget(Arc::clone(&budget))
                .with_breaker(Arc::clone(&breaker)),
        )
        .service(client);

    let request = http::Request::get(server.url("/"))
        .body(Full::default())
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    // Two failures took a token each; the success gave half of one back.
    assert_eq!(budget.tokens(), 8.5);
    assert_eq!(breaker.state(), CircuitState::Closed);
    drop(service);
    assert_eq!(
        Arc::strong_count(&policy),
        1,
        "nothing kept, nothing leaked"
    );
}

#[tokio::test(start_paused = true)]
async fn the_middleware_takes_its_configuration_in_arcs() {
    let (policy, budget, breaker) = loaded();
    let (server, hits) = server().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(*policy)
                .with_budget(Arc::clone(&budget))
                .with_breaker(Arc::clone(&breaker)),
        )
        .build();

    let response = client.get(server.url("/")).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert_eq!(budget.tokens(), 8.5);
    drop(client);
    assert_eq!(Arc::strong_count(&budget), 1);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_takes_its_configuration_in_arcs() {
    let (policy, budget, breaker) = loaded();
    let mut calls = 0;
    let result: std::io::Result<u32> = policy
        .on(|error: &std::io::Error| error.kind() == std::io::ErrorKind::ConnectionReset)
        .budget(&budget)
        .breaker(&breaker)
        .run(|| {
            calls += 1;
            let outcome = if calls < 3 {
                Err(std::io::ErrorKind::ConnectionReset.into())
            } else {
                Ok(calls)
            };
            async move { outcome }
        })
        .await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(budget.tokens(), 8.5);
}

#[retry(policy = config, budget = budget, on = |e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionReset)]
async fn load(
    config: &Arc<Policy>,
    budget: &Arc<RetryBudget>,
    calls: &mut u32,
) -> std::io::Result<u32> {
    *calls += 1;
    if *calls < 3 {
        return Err(std::io::ErrorKind::ConnectionReset.into());
    }
    Ok(*calls)
}

#[tokio::test(start_paused = true)]
async fn the_attribute_takes_a_policy_and_a_budget_in_arcs() {
    let (policy, budget, _) = loaded();
    let mut calls = 0;
    assert_eq!(load(&policy, &budget, &mut calls).await.unwrap(), 3);
    assert_eq!(budget.tokens(), 8.5);
}
