//! Axum handlers that are themselves `#[retry]` functions, with the
//! extractors a service writes: `State`, `Path`, `Json` (also destructured
//! `mut`), a by-value generic payload that is `Send` but not `Sync`, a
//! channel receiver, and `#[axum::debug_handler]` and
//! `#[tracing::instrument]` stacked on the attribute. Each is routed (so axum
//! checks it is a `Send` handler) and called over HTTP.

#[path = "support/servers.rs"]
mod servers;

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use retry_runtime::retry;
use serde_json::{json, Value};

fn assert_send<T: Send>(_: &T) {}

#[derive(Clone, Default)]
struct App {
    calls: Arc<AtomicU32>,
}

impl App {
    /// Fails the first two calls of every three.
    fn call(&self) -> Result<u32, StatusCode> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n.is_multiple_of(3) {
            Ok(n)
        } else {
            Err(StatusCode::SERVICE_UNAVAILABLE)
        }
    }
}

fn transient(status: &StatusCode) -> bool {
    status.is_server_error()
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn create(
    State(app): State<App>,
    Path(tenant): Path<String>,
    Json(mut order): Json<Value>,
) -> Result<Json<Value>, StatusCode> {
    // Each attempt starts from the body as the client sent it.
    let lines = order["lines"]
        .as_array_mut()
        .ok_or(StatusCode::BAD_REQUEST)?;
    lines.push(json!("fee"));
    tokio::task::yield_now().await;
    let n = app.call()?;
    Ok(Json(json!({ "tenant": tenant, "order": order, "call": n })))
}

#[axum::debug_handler]
#[retry(max = 3, base = "10ms", on = transient)]
async fn debugged(State(app): State<App>, Path(id): Path<u32>) -> Result<String, StatusCode> {
    tokio::task::yield_now().await;
    Ok(format!("{id}:{}", app.call()?))
}

#[tracing::instrument(skip(app))]
#[retry(max = 3, base = "10ms", on = transient)]
async fn traced(State(app): State<App>, Json(body): Json<Value>) -> Result<String, StatusCode> {
    tokio::task::yield_now().await;
    Ok(format!("{}:{}", body["name"], app.call()?))
}

/// A payload that is `Send` but not `Sync`.
struct Event {
    seen: Cell<u32>,
    name: String,
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn publish<T: AsRef<str> + Send>(
    app: App,
    event: Event,
    tag: T,
) -> Result<String, StatusCode> {
    event.seen.set(event.seen.get() + 1);
    tokio::task::yield_now().await;
    let n = app.call()?;
    Ok(format!(
        "{}/{}:{n}:{}",
        event.name,
        tag.as_ref(),
        event.seen.get()
    ))
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn drain(
    app: App,
    mut jobs: tokio::sync::mpsc::Receiver<u32>,
) -> Result<Vec<u32>, StatusCode> {
    let mut got = Vec::new();
    while let Ok(job) = jobs.try_recv() {
        got.push(job);
    }
    tokio::task::yield_now().await;
    app.call()?;
    Ok(got)
}

#[tokio::test(start_paused = true)]
async fn retried_handlers_with_extractors_serve_over_http() {
    let app = App::default();
    let router = Router::new()
        .route("/{tenant}/orders", post(create))
        .route("/debugged/{id}", get(debugged))
        .route("/traced", post(traced))
        .with_state(app.clone());
    let server = servers::serve(router, 0).await;
    let client = reqwest::Client::new();

    let response = client
        .post(server.url("/acme/orders"))
        .header("content-type", "application/json")
        .body(r#"{"lines":["book"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({ "tenant": "acme", "order": { "lines": ["book", "fee"] }, "call": 3 })
    );

    let response = client.get(server.url("/debugged/4")).send().await.unwrap();
    assert_eq!(response.text().await.unwrap(), "4:6");

    let response = client
        .post(server.url("/traced"))
        .header("content-type", "application/json")
        .body(r#"{"name":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "\"x\":9");
    assert_eq!(app.calls.load(Ordering::SeqCst), 9);
}

#[tokio::test(start_paused = true)]
async fn by_value_payloads_that_are_send_but_not_sync_spawn() {
    let app = App::default();
    let event = Event {
        seen: Cell::new(0),
        name: "signup".into(),
    };
    let future = publish(app.clone(), event, String::from("eu"));
    assert_send(&future);
    // Not `Clone`: kept across attempts.
    assert_eq!(
        tokio::spawn(future).await.unwrap().unwrap(),
        "signup/eu:3:3"
    );

    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(1).await.unwrap();
    tx.send(2).await.unwrap();
    let future = drain(app.clone(), rx);
    assert_send(&future);
    // The receiver is kept: attempt 1 drained it, later ones find it empty.
    assert_eq!(tokio::spawn(future).await.unwrap(), Ok(vec![]));
    assert_eq!(app.calls.load(Ordering::SeqCst), 6);
}
