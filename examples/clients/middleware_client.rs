//! `cargo run -p retry-clients --example middleware_client`
//!
//! `RetryMiddleware` on a reqwest-middleware client, in front of a real HTTP
//! server on 127.0.0.1 whose `/orders` answers 503 twice, then 200. A GET
//! is retried; a POST is not safe to repeat and is sent once; a POST with
//! an idempotency key (the same on every attempt) is retried. The server
//! prints each request it gets.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::any;
use axum::Router;
use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::{Policy, RetryBudget};
use tokio::time::Instant;

/// Shared by every request through the middleware.
static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

/// 503 twice, then 200; the count starts again for each case.
async fn orders(
    State(calls): State<Arc<AtomicU32>>,
    method: Method,
    headers: HeaderMap,
) -> (StatusCode, &'static str) {
    let key = headers
        .get("idempotency-key")
        .and_then(|key| key.to_str().ok())
        .map(|key| format!(", Idempotency-Key: {key}"))
        .unwrap_or_default();
    let (status, body) = if calls.fetch_add(1, Ordering::SeqCst) < 2 {
        (StatusCode::SERVICE_UNAVAILABLE, "busy")
    } else {
        (StatusCode::OK, "order 7")
    };
    println!("    server: {method} /orders{key} -> {}", status.as_u16());
    (status, body)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route("/orders", any(orders))
        .with_state(Arc::clone(&calls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("server listening on http://{address}\n");

    // Built at run time: no `static` needed for the policy.
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(50))
        .with_deadline(Duration::from_secs(10));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            RetryMiddleware::new(policy)
                .with_budget(&BUDGET)
                .named("orders"),
        )
        .build();
    let url = format!("http://{address}/orders");

    let cases = [
        ("GET: safe to repeat, retried", client.get(&url)),
        ("POST: not safe to repeat, sent once", client.post(&url)),
        (
            "POST with an idempotency key: retried, the key unchanged",
            client.post(&url).idempotency_key(),
        ),
    ];
    for (what, request) in cases {
        println!("{what}");
        calls.store(0, Ordering::SeqCst);
        let start = Instant::now();
        let response = request.send().await?;
        let status = response.status();
        let body = response.text().await?;
        println!("  => {status} {body:?} after {:.0?}\n", start.elapsed());
    }
    Ok(())
}
