//! Above the replay limit: a request whose body cannot be copied for
//! another attempt is sent once and not retried, and both HTTP layers say
//! so the same way. Its retryable failure (a 503 to a PUT) is returned as
//! it came, the call stops with `not_retryable` after one attempt, and the
//! failure takes a budget token, as a POST without an idempotency key does
//! (gRFC A6: the budget sees the same traffic whatever is retried). The
//! tower layer cannot copy a streaming body longer than `with_max_body`; the
//! middleware cannot copy a streaming body at all (reqwest gives no clone of
//! it). The hedge layer, whose body limit is the retry layer's, sends such
//! a request once and starts no hedge. Each test also runs the copyable
//! request, which is retried (or hedged) to `exhausted`, so that the limit
//! is what stops the retries.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Policy, RetryBudget, Stop};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10));

/// A server that reads each request's body and answers 503, counting.
async fn unavailable() -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            any(
                |State(hits): State<Arc<AtomicU32>>, _body: Bytes| async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    StatusCode::SERVICE_UNAVAILABLE
                },
            ),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, 0).await, hits)
}

/// The last call's stop reason and attempts.
fn last() -> (Stop, u32) {
    let last = retry_runtime::last_call().expect("a call ended");
    (last.reason(), last.attempts())
}

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

fn put(url: &str) -> http::Request<Body> {
    let body = Full::new(Bytes::from_static(b"hello world"))
        .map_err(|never| match never {})
        .boxed_unsync();
    http::Request::put(url).body(body).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_retry_layer_sends_a_body_over_its_limit_once_as_not_retryable() {
    let (server, hits) = unavailable().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Body>();
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let layer = RetryLayer::new(&POLICY).with_budget(Arc::clone(&budget));
    let mut within = ServiceBuilder::new()
        .layer(layer.clone())
        .service(client.clone());
    let mut over = ServiceBuilder::new()
        .layer(layer.with_max_body(4))
        .service(client);

    let response = within.ready().await.unwrap();
    let response = response.call(put(&server.url("/"))).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(last(), (Stop::Exhausted, 3), "11 bytes within 64 KiB");
    assert_eq!(hits.swap(0, Ordering::SeqCst), 3);
    let tokens = budget.tokens();

    let response = over.ready().await.unwrap();
    let response = response.call(put(&server.url("/"))).await.unwrap();
    assert_eq!(response.status(), 503, "the failure, as it came");
    assert_eq!(last(), (Stop::NotRetryable, 1), "11 bytes over 4");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "sent once");
    assert!(
        (tokens - budget.tokens() - 1.0).abs() < 1e-9,
        "the failure takes a token: {tokens} then {}",
        budget.tokens()
    );
}

/// A server that reads each request's body and answers 503 after 100 ms,
/// counting: slow enough for the hedge layer's copies to be due.
async fn slowly_unavailable() -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            any(
                |State(hits): State<Arc<AtomicU32>>, _body: Bytes| async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    StatusCode::SERVICE_UNAVAILABLE
                },
            ),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, 0).await, hits)
}

#[tokio::test(start_paused = true)]
async fn the_hedge_layer_sends_a_body_over_its_limit_once_and_hedges_nothing() {
    let (server, hits) = slowly_unavailable().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Body>();
    let layer = HedgeLayer::new(&POLICY, Hedge::after(Duration::from_millis(20)));
    let mut within = ServiceBuilder::new()
        .layer(layer.clone())
        .service(client.clone());
    let mut over = ServiceBuilder::new()
        .layer(layer.with_max_body(4))
        .service(client);

    let response = within.ready().await.unwrap();
    let response = response.call(put(&server.url("/"))).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(last(), (Stop::Exhausted, 3), "11 bytes within 64 KiB");
    assert_eq!(hits.swap(0, Ordering::SeqCst), 3, "two hedges");

    let response = over.ready().await.unwrap();
    let response = response.call(put(&server.url("/"))).await.unwrap();
    assert_eq!(response.status(), 503, "the failure, as it came");
    assert_eq!(last(), (Stop::NotRetryable, 1), "11 bytes over 4");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "sent once, no hedge");
}

#[tokio::test(start_paused = true)]
async fn the_middleware_sends_a_streaming_body_once_as_not_retryable() {
    let (server, hits) = unavailable().await;
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(POLICY).with_budget(Arc::clone(&budget)))
        .build();

    let response = client.put(server.url("/")).body("hello world").send();
    assert_eq!(response.await.unwrap().status(), 503);
    assert_eq!(last(), (Stop::Exhausted, 3), "a buffered body is copied");
    assert_eq!(hits.swap(0, Ordering::SeqCst), 3);
    let tokens = budget.tokens();

    let stream =
        futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"hello world"))]);
    let response = client
        .put(server.url("/"))
        .body(reqwest::Body::wrap_stream(stream))
        .send();
    assert_eq!(
        response.await.unwrap().status(),
        503,
        "the failure, as it came"
    );
    assert_eq!(last(), (Stop::NotRetryable, 1), "a stream is not copied");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "sent once");
    assert!(
        (tokens - budget.tokens() - 1.0).abs() < 1e-9,
        "the failure takes a token: {tokens} then {}",
        budget.tokens()
    );
}
