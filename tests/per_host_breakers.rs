//! One breaker and one budget per upstream host, from a `Registry`, in the
//! tower layer and the reqwest middleware, against two real axum servers on
//! 127.0.0.1: one down, one up. Only requests to the host that is down are
//! refused; the other host's circuit stays closed. And per key of one's
//! own (a tenant header), on one server.

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
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{CircuitBreaker, CircuitOpen, CircuitState, Jitter, Policy, RetryBudget};
use tower::{Service, ServiceBuilder, ServiceExt};

type Hits = Arc<AtomicU32>;

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// A breaker that opens after two failures in a row and stays open for a
/// minute, and a budget, per host.
fn upstreams() -> Arc<Registry> {
    Arc::new(Registry::new(64, |_host: &str| {
        Upstream::new()
            .with_breaker(
                CircuitBreaker::new()
                    .with_consecutive_failures(2)
                    .with_min_calls(1000)
                    .with_open_for(Duration::from_secs(60))
                    .with_jitter(0.0),
            )
            .with_budget(RetryBudget::new(100, 0.1))
    }))
}

fn authority(server: &servers::Server) -> String {
    server.addr.to_string()
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_refuses_only_the_host_that_is_down() {
    let (down, down_hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let (up, up_hits) = servers::answering(StatusCode::OK).await;
    let registry = upstreams();
    // No idle connections, whose timers would move the paused clock.
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).per_authority(Arc::clone(&registry)))
        .service(client);
    let get = |url: String| http::Request::get(url).body(Full::default()).unwrap();

    // Two failed attempts open the down host's circuit; the third is not sent.
    let response = service
        .ready()
        .await
        .unwrap()
        .call(get(down.url("/")))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);

    for _ in 0..5 {
        let refused = service
            .ready()
            .await
            .unwrap()
            .call(get(down.url("/")))
            .await;
        assert!(matches!(refused, Err(BreakerError::Open(_))), "{refused:?}");
        let response = service
            .ready()
            .await
            .unwrap()
            .call(get(up.url("/")))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);
    assert_eq!(up_hits.load(Ordering::SeqCst), 5);

    let state = |server| registry.get(&authority(server)).breaker().unwrap().state();
    assert_eq!(state(&down), CircuitState::Open);
    assert_eq!(state(&up), CircuitState::Closed);
    assert_eq!(registry.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_middleware_refuses_only_the_host_that_is_down() {
    let (down, down_hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let (up, up_hits) = servers::answering(StatusCode::OK).await;
    let registry = upstreams();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(POLICY).per_authority(Arc::clone(&registry)))
        .build();

    let response = client.get(down.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);

    for _ in 0..5 {
        let refused = client.get(down.url("/")).send().await.unwrap_err();
        assert!(
            matches!(&refused, reqwest_middleware::Error::Middleware(error) if error.is::<CircuitOpen>()),
            "{refused:?}"
        );
        let response = client.get(up.url("/")).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);
    assert_eq!(up_hits.load(Ordering::SeqCst), 5);

    let state = |server| registry.get(&authority(server)).breaker().unwrap().state();
    assert_eq!(state(&down), CircuitState::Open);
    assert_eq!(state(&up), CircuitState::Closed);
}

/// A key of the caller's own: one breaker per tenant, from the `x-tenant`
/// header, on one server that is down for tenant `a` only.
#[tokio::test(start_paused = true)]
async fn a_key_of_ones_own_gives_each_tenant_its_breaker() {
    let hits = Hits::default();
    let router = Router::new()
        .route(
            "/",
            any(
                |State(hits): State<Hits>, headers: http::HeaderMap| async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    if headers["x-tenant"] == "a" {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                },
            ),
        )
        .with_state(Arc::clone(&hits));
    let server = servers::serve(router, 0).await;
    let registry = upstreams();

    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let tenant =
        |head: &http::request::Parts| Some(head.headers.get("x-tenant")?.to_str().ok()?.to_owned());
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).per_key(Arc::clone(&registry), tenant))
        .service(client);
    let get = |tenant: &str| {
        http::Request::get(server.url("/"))
            .header("x-tenant", tenant)
            .body(Full::default())
            .unwrap()
    };
    let first = service.ready().await.unwrap().call(get("a")).await;
    assert_eq!(first.unwrap().status(), 503);
    let refused = service.ready().await.unwrap().call(get("a")).await;
    assert!(matches!(refused, Err(BreakerError::Open(_))), "{refused:?}");
    let other = service.ready().await.unwrap().call(get("b")).await;
    assert_eq!(other.unwrap().status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    // The middleware, with the same registry: tenant `a` is already open.
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(POLICY).per_key(Arc::clone(&registry), |request| {
                let tenant = request.headers().get("x-tenant")?.to_str().ok()?;
                Some(tenant.to_owned())
            }),
        )
        .build();
    let refused = client
        .get(server.url("/"))
        .header("x-tenant", "a")
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, reqwest_middleware::Error::Middleware(error) if error.is::<CircuitOpen>()),
        "{refused:?}"
    );
    let response = client
        .get(server.url("/"))
        .header("x-tenant", "b")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert_eq!(
        registry.get("a").breaker().unwrap().state(),
        CircuitState::Open
    );
    assert_eq!(
        registry.get("b").breaker().unwrap().state(),
        CircuitState::Closed
    );
}

/// A layer keyed by a function of one's own prints with `Debug` as every
/// other layer does, whatever the function (a closure is not `Debug`): the
/// function shows as `..`.
#[test]
fn a_per_key_layer_prints_with_debug_whatever_its_key_function() {
    let tenant =
        |head: &http::request::Parts| Some(head.headers.get("x-tenant")?.to_str().ok()?.to_owned());
    let layer = RetryLayer::new(&POLICY).per_key(upstreams(), tenant);
    let printed = format!("{layer:?}");
    assert!(printed.contains("PerKey("), "{printed}");
}
