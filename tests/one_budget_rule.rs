//! One budget, one rule, on every path (gRFC A6): under the same traffic,
//! the tower layer, the reqwest middleware and `#[retry]` leave a
//! `RetryBudget` with the same tokens. Every attempt that fails with a
//! retryable status takes a token, whether or not the request may be
//! repeated, and every success gives back `token_ratio`.

#[path = "support/servers.rs"]
mod servers;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::classify::reqwest as transient;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{retry, Jitter, Policy, RetryBudget};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// The answers each path gets, in order; 200 once they run out.
const SCRIPT: [u16; 10] = [503, 200, 200, 503, 503, 503, 200, 503, 200, 200];
/// Requests each path makes, and what the budget holds after them:
/// 503 200 | 200 | 503 503 503 (exhausted) | 200 | 503 200 | 200, from 10
/// tokens at 0.5 a success: 10, 10, 9, 8, 7, 7.5, 6.5, 7, 7.5.
const CALLS: usize = 6;
const TOKENS_AFTER: f64 = 7.5;

type Script = Arc<Mutex<VecDeque<u16>>>;

async fn server() -> (servers::Server, Arc<AtomicU32>) {
    let script: Script = Arc::new(Mutex::new(SCRIPT.into_iter().collect()));
    let hits = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&hits);
    let router = Router::new()
        .route(
            "/",
            any(move |State(script): State<Script>| async move {
                counted.fetch_add(1, Ordering::SeqCst);
                let status = script.lock().unwrap().pop_front().unwrap_or(200);
                StatusCode::from_u16(status).unwrap()
            }),
        )
        .route("/down", any(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/up", any(|| async { StatusCode::OK }))
        .with_state(script);
    (servers::serve(router, 0).await, hits)
}

static ATTRIBUTE_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);

#[retry(
    max = 3,
    base = "10ms",
    jitter = "none",
    budget = &ATTRIBUTE_BUDGET,
    on = transient::is_transient,
    on_ok = transient::is_transient_response,
    retry_after_ok = transient::retry_after,
)]
async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
    client.get(url).send().await
}

#[tokio::test(start_paused = true)]
async fn the_three_paths_leave_the_budget_alike() {
    // The tower layer.
    let budget = Arc::new(RetryBudget::new(10, 0.5));
    let (server_a, hits_a) = server().await;
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_budget(Arc::clone(&budget)))
        .service(client);
    for _ in 0..CALLS {
        let request = http::Request::get(server_a.url("/"))
            .body(Full::default())
            .unwrap();
        service.ready().await.unwrap().call(request).await.unwrap();
    }
    let tower_tokens = budget.tokens();

    // The middleware.
    let budget = Arc::new(RetryBudget::new(10, 0.5));
    let (server_b, hits_b) = server().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(POLICY).with_budget(Arc::clone(&budget)))
        .build();
    for _ in 0..CALLS {
        client.get(server_b.url("/")).send().await.unwrap();
    }
    let middleware_tokens = budget.tokens();

    // The attribute.
    let (server_c, hits_c) = server().await;
    let client = reqwest::Client::new();
    for _ in 0..CALLS {
        fetch(&client, &server_c.url("/")).await.unwrap();
    }
    let attribute_tokens = ATTRIBUTE_BUDGET.tokens();

    assert_eq!(tower_tokens, TOKENS_AFTER);
    assert_eq!(middleware_tokens, TOKENS_AFTER);
    assert_eq!(attribute_tokens, TOKENS_AFTER);
    for hits in [hits_a, hits_b, hits_c] {
        assert_eq!(hits.load(Ordering::SeqCst), 10);
    }
}

/// A POST without an idempotency key is sent once by both integrations, yet
/// its 503 takes a token and its 200 gives `token_ratio` back.
#[tokio::test(start_paused = true)]
async fn a_post_that_is_not_repeated_still_feeds_the_budget() {
    let (server, _) = server().await;

    let budget = Arc::new(RetryBudget::new(10, 0.5));
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_budget(Arc::clone(&budget)))
        .service(client);
    for path in ["/down", "/down", "/up"] {
        let request = http::Request::post(server.url(path))
            .body(Full::default())
            .unwrap();
        service.ready().await.unwrap().call(request).await.unwrap();
    }
    assert_eq!(budget.tokens(), 8.5);

    let budget = Arc::new(RetryBudget::new(10, 0.5));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(POLICY).with_budget(Arc::clone(&budget)))
        .build();
    for path in ["/down", "/down", "/up"] {
        client.post(server.url(path)).send().await.unwrap();
    }
    assert_eq!(budget.tokens(), 8.5);
}
