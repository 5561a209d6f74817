//! `cargo run -p retry-clients --example hyper_client`
//!
//! `RetryLayer` in a tower stack around a hyper client, in front of a real
//! HTTP server on 127.0.0.1. tower's `TimeoutLayer` below the retry layer
//! cuts off each attempt after a second; its error is tower's `BoxError`, so
//! the layer is given `HttpClassifier::default().boxed_errors()` (without it,
//! `service.ready()` does not compile: see docs/integrations.md). The server
//! prints each request it gets; the client, each call's outcome. It takes
//! about two seconds.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::{HttpClassifier, RetryLayer};
use retry_runtime::{Policy, RetryBudget};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

/// Up to 4 attempts, the whole call within 10 s.
static POLICY: Policy = Policy::new()
    .with_max_attempts(4)
    .with_deadline(Duration::from_secs(10));
/// Shared by every request through the layer.
static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[derive(Default)]
struct Calls {
    flaky: AtomicU32,
    slow: AtomicU32,
}

/// 503 with `Retry-After: 1` the first time, then 200.
async fn flaky(State(calls): State<Arc<Calls>>) -> Response {
    if calls.flaky.fetch_add(1, Ordering::SeqCst) == 0 {
        println!("    server: GET /flaky -> 503, Retry-After: 1");
        let retry_after = [(header::RETRY_AFTER, "1")];
        return (StatusCode::SERVICE_UNAVAILABLE, retry_after, "busy").into_response();
    }
    println!("    server: GET /flaky -> 200");
    (StatusCode::OK, "here you are").into_response()
}

/// Hangs the first time (the client's timeout cuts the attempt off), then 200.
async fn slow(State(calls): State<Arc<Calls>>) -> Response {
    if calls.slow.fetch_add(1, Ordering::SeqCst) == 0 {
        println!("    server: GET /slow -> (no answer for a minute)");
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    println!("    server: GET /slow -> 200");
    (StatusCode::OK, "done").into_response()
}

/// 400 every time: repeating the request cannot help.
async fn bad_request() -> Response {
    println!("    server: GET /bad-request -> 400");
    (StatusCode::BAD_REQUEST, "missing field `id`").into_response()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let app = Router::new()
        .route("/flaky", get(flaky))
        .route("/slow", get(slow))
        .route("/bad-request", get(bad_request))
        .with_state(Arc::new(Calls::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("server listening on http://{address}\n");

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(
            RetryLayer::new(&POLICY)
                .with_budget(&BUDGET)
                .with_classifier(HttpClassifier::default().boxed_errors())
                .named("example"),
        )
        .timeout(Duration::from_secs(1)) // each attempt
        .service(client);

    for path in ["/flaky", "/slow", "/bad-request"] {
        println!("GET {path}");
        let request =
            http::Request::get(format!("http://{address}{path}")).body(Full::new(Bytes::new()))?;
        let start = Instant::now();
        let response = service.ready().await?.call(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let body = String::from_utf8_lossy(&body);
        println!("  => {status} {body:?} after {:.1?}\n", start.elapsed());
    }
    Ok(())
}
