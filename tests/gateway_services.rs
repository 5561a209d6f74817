//! A gateway service as one is written: axum handlers (`State`, `Path`,
//! `Json`) calling `#[retry]` functions that call real downstream axum
//! servers on 127.0.0.1 through reqwest (bare and behind `RetryMiddleware`)
//! and through a hyper client behind `RetryLayer`. Errors are thiserror
//! enums wrapping `reqwest::Error`, or `anyhow::Error`. POSTs carry an
//! idempotency key; calls are spawned, fanned out with a `JoinSet`, wrapped
//! in `#[tracing::instrument]`, guarded per host, share one budget, and are
//! dropped mid-wait by a shutdown. Only counts, keys and outcomes are
//! asserted.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use reqwest_middleware::ClientWithMiddleware;
use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{
    current_attempt, retry, CircuitBreaker, CircuitOpen, CircuitState, Jitter, Policy, RetryBudget,
};
use serde_json::{json, Value};
use tokio::task::JoinSet;
use tower::{ServiceBuilder, ServiceExt};

fn assert_send<T: Send>(_: &T) {}

// ---------------------------------------------------------------------
// The downstream service.

/// A downstream service: `GET /users/{id}` fails its first `fail_first`
/// requests with 503; `POST /orders` records each request's idempotency key
/// and answers 503 to the first `fail_first` requests of each key; `/down`
/// always answers 503.
#[derive(Default)]
struct Downstream {
    hits: AtomicU32,
    fail_first: u32,
    keys: Mutex<Vec<String>>,
}

impl Downstream {
    fn hits(&self) -> u32 {
        self.hits.load(Ordering::SeqCst)
    }

    fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

async fn user(
    State(downstream): State<Arc<Downstream>>,
    Path(id): Path<u32>,
) -> Result<Json<Value>, StatusCode> {
    let hit = downstream.hits.fetch_add(1, Ordering::SeqCst) + 1;
    if hit <= downstream.fail_first {
        return Err(StatusCode::SERVICE_UNAVAILABLE);
    }
    Ok(Json(json!({ "id": id, "hit": hit })))
}

async fn order(
    State(downstream): State<Arc<Downstream>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    downstream.hits.fetch_add(1, Ordering::SeqCst);
    let key = headers
        .get("idempotency-key")
        .map_or_else(String::new, |key| key.to_str().unwrap().to_owned());
    let mut keys = downstream.keys.lock().unwrap();
    keys.push(key.clone());
    let seen = keys.iter().filter(|seen| **seen == key).count();
    if seen <= downstream.fail_first as usize {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": "busy" })),
        )
    } else {
        (
            StatusCode::CREATED,
            Json(json!({ "key": key, "item": body["item"] })),
        )
    }
}

/// Hangs on its first `fail_first` requests, then answers.
async fn hangs(State(downstream): State<Arc<Downstream>>) -> Json<Value> {
    let hit = downstream.hits.fetch_add(1, Ordering::SeqCst) + 1;
    if hit <= downstream.fail_first {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    Json(json!({ "hit": hit }))
}

async fn down(State(downstream): State<Arc<Downstream>>) -> StatusCode {
    downstream.hits.fetch_add(1, Ordering::SeqCst);
    StatusCode::SERVICE_UNAVAILABLE
}

async fn downstream(fail_first: u32) -> (servers::Server, Arc<Downstream>) {
    let state = Arc::new(Downstream {
        fail_first,
        ..Downstream::default()
    });
    let router = Router::new()
        .route("/users/{id}", get(user))
        .route("/orders", post(order))
        .route("/down", any(down))
        .route("/hangs", get(hangs))
        .with_state(Arc::clone(&state));
    (servers::serve(router, 0).await, state)
}

// ---------------------------------------------------------------------
// The client side: errors and retried calls.

#[derive(Debug, thiserror::Error)]
enum DownstreamError {
    #[error("request failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("middleware: {0}")]
    Middleware(#[from] reqwest_middleware::Error),
    #[error("hyper: {0}")]
    Hyper(#[from] hyper_util::client::legacy::Error),
    #[error("bad body: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("downstream answered {0}")]
    Status(u16),
}

impl DownstreamError {
    fn is_transient(&self) -> bool {
        match self {
            DownstreamError::Http(error) => retry_runtime::classify::reqwest::is_transient(error),
            DownstreamError::Status(status) => matches!(status, 429 | 502 | 503 | 504),
            _ => false,
        }
    }

    fn status(&self) -> Option<u16> {
        match self {
            DownstreamError::Status(status) => Some(*status),
            _ => None,
        }
    }
}

async fn json_of(response: reqwest::Response) -> Result<Value, DownstreamError> {
    if !response.status().is_success() {
        return Err(DownstreamError::Status(response.status().as_u16()));
    }
    Ok(serde_json::from_slice(&response.bytes().await?)?)
}

#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
async fn fetch_user(
    client: &reqwest::Client,
    base: &str,
    id: u32,
) -> Result<Value, DownstreamError> {
    let response = client.get(format!("{base}/users/{id}")).send().await?;
    json_of(response).await
}

/// Owned arguments, for `tokio::spawn`.
#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
async fn fetch_user_owned(
    client: reqwest::Client,
    base: String,
    id: u32,
) -> Result<Value, DownstreamError> {
    let response = client.get(format!("{base}/users/{id}")).send().await?;
    json_of(response).await
}

#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
async fn create_order(
    client: &reqwest::Client,
    base: &str,
    order: &Value,
) -> Result<Value, DownstreamError> {
    let response = client
        .post(format!("{base}/orders"))
        .idempotency_key()
        .header("content-type", "application/json")
        .body(serde_json::to_vec(order)?)
        .send()
        .await?;
    json_of(response).await
}

/// The key read by hand, as the docs show.
#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
async fn create_order_by_hand(
    client: &reqwest::Client,
    base: &str,
    order: &Value,
) -> Result<Value, DownstreamError> {
    let key = current_attempt()
        .map(|attempt| attempt.idempotency_key().to_string())
        .unwrap_or_default();
    let response = client
        .post(format!("{base}/orders"))
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(order)?)
        .send()
        .await?;
    json_of(response).await
}

#[derive(Debug)]
struct AppError(DownstreamError);

impl From<DownstreamError> for AppError {
    fn from(error: DownstreamError) -> Self {
        AppError(error)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        (StatusCode::BAD_GATEWAY, self.0.to_string()).into_response()
    }
}

#[derive(Clone)]
struct Gateway {
    client: reqwest::Client,
    middleware: ClientWithMiddleware,
    base: String,
}

async fn profile(
    State(gateway): State<Gateway>,
    Path(id): Path<u32>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(fetch_user(&gateway.client, &gateway.base, id).await?))
}

async fn place_order(
    State(gateway): State<Gateway>,
    Json(order): Json<Value>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let created = create_order(&gateway.client, &gateway.base, &order).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

async fn place_order_by_hand(
    State(gateway): State<Gateway>,
    Json(order): Json<Value>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let created = create_order_by_hand(&gateway.client, &gateway.base, &order).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// No `#[retry]` here: the middleware retries with the key set once.
async fn place_order_through_middleware(
    State(gateway): State<Gateway>,
    Json(order): Json<Value>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let response = gateway
        .middleware
        .post(format!("{}/orders", gateway.base))
        .idempotency_key()
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&order).map_err(DownstreamError::from)?)
        .send()
        .await
        .map_err(DownstreamError::from)?;
    let created = json_of(response).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

const QUICK: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

fn middleware_client(middleware: RetryMiddleware) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
}

async fn gateway(base: String) -> servers::Server {
    let state = Gateway {
        client: reqwest::Client::new(),
        middleware: middleware_client(RetryMiddleware::new(QUICK)),
        base,
    };
    let router = Router::new()
        .route("/profile/{id}", get(profile))
        .route("/orders", post(place_order))
        .route("/orders-by-hand", post(place_order_by_hand))
        .route(
            "/orders-via-middleware",
            post(place_order_through_middleware),
        )
        .with_state(state);
    servers::serve(router, 0).await
}

async fn post_json(client: &reqwest::Client, url: String, body: &Value) -> (u16, Value) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

// ---------------------------------------------------------------------
// Handlers calling retried functions.

#[tokio::test(start_paused = true)]
async fn a_handler_retries_its_downstream_call_and_returns_the_answer() {
    let (users, state) = downstream(2).await;
    let front = gateway(users.url("")).await;

    let response = reqwest::get(front.url("/profile/7")).await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body, json!({ "id": 7, "hit": 3 }));
    assert_eq!(state.hits(), 3);

    // A downstream that stays down: four attempts, and the last error, as
    // the gateway's own 502.
    let (users, state) = downstream(100).await;
    let front = gateway(users.url("")).await;
    let response = reqwest::get(front.url("/profile/7")).await.unwrap();
    assert_eq!(response.status(), 502);
    assert_eq!(response.text().await.unwrap(), "downstream answered 503");
    assert_eq!(state.hits(), 4);
}

#[tokio::test(start_paused = true)]
async fn every_attempt_of_a_post_carries_the_calls_key_and_each_call_a_new_one() {
    for path in ["/orders", "/orders-by-hand", "/orders-via-middleware"] {
        let (orders, state) = downstream(2).await;
        let front = gateway(orders.url("")).await;
        let client = reqwest::Client::new();
        for item in ["book", "pen"] {
            let (status, body) =
                post_json(&client, front.url(path), &json!({ "item": item })).await;
            assert_eq!((status, &body["item"]), (201, &json!(item)), "{path}");
        }
        let keys = state.keys();
        assert_eq!(keys.len(), 6, "{path}: {keys:?}");
        assert!(!keys[0].is_empty(), "{path}: {keys:?}");
        assert!(
            keys[..3].iter().all(|key| *key == keys[0]),
            "{path}: {keys:?}"
        );
        assert!(
            keys[3..].iter().all(|key| *key == keys[3]),
            "{path}: {keys:?}"
        );
        assert_ne!(keys[0], keys[3], "{path}");
    }
}

// ---------------------------------------------------------------------
// A retried function calling through a retrying client: one layer retries.

#[retry(max = 3, base = "10ms", on = DownstreamError::is_transient)]
async fn order_via_retrying_client(
    client: &ClientWithMiddleware,
    base: &str,
    item: &str,
) -> Result<Value, DownstreamError> {
    let response = client
        .post(format!("{base}/orders"))
        .idempotency_key()
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&json!({ "item": item }))?)
        .send()
        .await?;
    json_of(response).await
}

#[tokio::test(start_paused = true)]
async fn a_retried_function_over_the_middleware_sends_one_key_and_retries_once() {
    let (orders, state) = downstream(2).await;
    let client = middleware_client(RetryMiddleware::new(QUICK));
    let base = orders.url("");
    let future = order_via_retrying_client(&client, &base, "book");
    assert_send(&future);
    assert_eq!(future.await.unwrap()["item"], "book");
    let again = order_via_retrying_client(&client, &orders.url(""), "pen")
        .await
        .unwrap();
    assert_eq!(again["item"], "pen");
    let keys = state.keys();
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert!(keys[..3].iter().all(|key| *key == keys[0]), "{keys:?}");
    assert!(keys[3..].iter().all(|key| *key == keys[3]), "{keys:?}");
    assert_ne!(keys[0], keys[3]);

    // The middleware gives up on a 503 (two attempts) and the body turns
    // the answer into its error: the outer function does not retry it again.
    let (orders, state) = downstream(100).await;
    let client = middleware_client(RetryMiddleware::new(QUICK.with_max_attempts(2)));
    let error = order_via_retrying_client(&client, &orders.url(""), "book")
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(503));
    assert_eq!(state.hits(), 2);
}

// ---------------------------------------------------------------------
// hyper with RetryLayer, under `#[retry]`, and anyhow.

static HYPER_POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

type Hyper = HyperClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn hyper_client() -> Hyper {
    HyperClient::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>()
}

#[retry(max = 2, base = "10ms", on = |e: &anyhow::Error| retry_runtime::classify::chain::is_transient(e))]
async fn order_over_hyper(client: &Hyper, url: &str, item: &str) -> anyhow::Result<Value> {
    let request = http::Request::post(url)
        .header("content-type", "application/json")
        .header(
            "idempotency-key",
            retry_runtime::IdempotencyKey::for_this_call().header_value(),
        )
        .body(Full::new(Bytes::from(serde_json::to_vec(
            &json!({ "item": item }),
        )?)))?;
    let response = ServiceBuilder::new()
        .layer(RetryLayer::new(&HYPER_POLICY))
        .service(client.clone())
        .oneshot(request)
        .await?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    anyhow::ensure!(status.is_success(), "orders answered {status}");
    Ok(serde_json::from_slice(&bytes)?)
}

#[tokio::test(start_paused = true)]
async fn a_hyper_client_behind_the_layer_sends_the_calls_key_on_every_attempt() {
    let (orders, state) = downstream(2).await;
    let client = hyper_client();
    let url = orders.url("/orders");
    let task = tokio::spawn({
        let client = client.clone();
        let url = url.clone();
        async move { order_over_hyper(&client, &url, "book").await }
    });
    assert_eq!(task.await.unwrap().unwrap()["item"], "book");
    let keys = state.keys();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");

    // Down: the layer gives up after three, the anyhow error says so, and
    // the outer does not retry it (one layer retries).
    let (orders, state) = downstream(100).await;
    let error = order_over_hyper(&client, &orders.url("/orders"), "pen")
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "orders answered 503 Service Unavailable");
    assert_eq!(state.hits(), 3);
}

// ---------------------------------------------------------------------
// Spawned, fanned out, instrumented.

#[tracing::instrument(skip(client))]
#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
async fn instrumented_above(
    client: &reqwest::Client,
    base: &str,
    id: u32,
) -> Result<Value, DownstreamError> {
    let response = client.get(format!("{base}/users/{id}")).send().await?;
    json_of(response).await
}

#[retry(max = 4, base = "10ms", on = DownstreamError::is_transient)]
#[tracing::instrument(skip(client), err)]
async fn instrumented_below(
    client: &reqwest::Client,
    base: &str,
    id: u32,
) -> Result<Value, DownstreamError> {
    let response = client.get(format!("{base}/users/{id}")).send().await?;
    json_of(response).await
}

#[tokio::test(start_paused = true)]
async fn spawned_and_fanned_out_calls_each_retry_their_own_failures() {
    let (users, state) = downstream(3).await;
    let client = reqwest::Client::new();
    let base = users.url("");

    let mut set = JoinSet::new();
    for id in 0..6_u32 {
        let client = client.clone();
        let base = base.clone();
        match id % 3 {
            0 => set.spawn(fetch_user_owned(client, base, id)),
            1 => set.spawn(async move { instrumented_above(&client, &base, id).await }),
            _ => set.spawn(async move { instrumented_below(&client, &base, id).await }),
        };
    }
    let mut ids = Vec::new();
    while let Some(joined) = set.join_next().await {
        ids.push(joined.unwrap().unwrap()["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
    // Three failures, each retried once by the call it failed.
    assert_eq!(state.hits(), 9);
}

// ---------------------------------------------------------------------
// One breaker per host; one host down.

fn per_host() -> Arc<Registry> {
    Arc::new(Registry::new(64, |_host: &str| {
        Upstream::new().with_breaker(
            CircuitBreaker::new()
                .with_consecutive_failures(2)
                .with_min_calls(1000)
                .with_open_for(Duration::from_secs(60))
                .with_jitter(0.0),
        )
    }))
}

fn refused(error: &DownstreamError) -> bool {
    matches!(error, DownstreamError::Middleware(reqwest_middleware::Error::Middleware(inner)) if inner.is::<CircuitOpen>())
}

#[retry(max = 3, base = "10ms", on = DownstreamError::is_transient)]
async fn get_user_from(
    client: &ClientWithMiddleware,
    base: &str,
    id: u32,
) -> Result<Value, DownstreamError> {
    let response = client.get(format!("{base}/users/{id}")).send().await?;
    json_of(response).await
}

#[tokio::test(start_paused = true)]
async fn one_host_down_opens_only_its_own_circuit() {
    let (a, a_state) = downstream(0).await;
    let (b, b_state) = downstream(1000).await;
    let (c, c_state) = downstream(0).await;
    let registry = per_host();
    let client =
        middleware_client(RetryMiddleware::new(QUICK).per_authority(Arc::clone(&registry)));

    for round in 0..3 {
        let mut set = JoinSet::new();
        for (index, base) in [a.url(""), b.url(""), c.url("")].into_iter().enumerate() {
            let client = client.clone();
            set.spawn(async move { (index, get_user_from(&client, &base, 1).await) });
        }
        while let Some(joined) = set.join_next().await {
            let (index, result) = joined.unwrap();
            match (index, round) {
                (1, 0) => assert_eq!(result.unwrap_err().status(), Some(503)),
                (1, _) => assert!(refused(&result.unwrap_err())),
                _ => assert!(result.is_ok(), "{index}: {result:?}"),
            }
        }
    }
    // The host that is down saw the two failures that opened its circuit.
    assert_eq!((a_state.hits(), b_state.hits(), c_state.hits()), (3, 2, 3));
    let state = |server: &servers::Server| {
        registry
            .get(&server.addr.to_string())
            .breaker()
            .map(CircuitBreaker::state)
    };
    assert_eq!(state(&a), Some(CircuitState::Closed));
    assert_eq!(state(&b), Some(CircuitState::Open));
    assert_eq!(state(&c), Some(CircuitState::Closed));
}

// ---------------------------------------------------------------------
// One budget for the attribute, the tower layer and the middleware.

static SHARED: RetryBudget = RetryBudget::new(10, 0.1);

#[retry(max = 10, base = "10ms", budget = &SHARED, on = DownstreamError::is_transient)]
async fn budgeted(client: &reqwest::Client, url: &str) -> Result<Value, DownstreamError> {
    json_of(client.get(url).send().await?).await
}

#[tokio::test(start_paused = true)]
async fn one_budget_shared_by_the_attribute_the_layer_and_the_middleware() {
    let (down_server, state) = downstream(1000).await;
    let url = down_server.url("/down");

    // 10 tokens; a retry needs more than 5 left: four retries, five calls.
    let error = budgeted(&reqwest::Client::new(), &url).await.unwrap_err();
    assert_eq!(error.status(), Some(503));
    assert_eq!(state.hits(), 5);

    // The layer and the middleware find the budget spent: one call each.
    let response = ServiceBuilder::new()
        .layer(RetryLayer::new(&HYPER_POLICY).with_budget(&SHARED))
        .service(hyper_client())
        .oneshot(http::Request::get(&url).body(Full::default()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(state.hits(), 6);
    let client = middleware_client(RetryMiddleware::new(QUICK).with_budget(&SHARED));
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(state.hits(), 7);
    assert!(SHARED.tokens() < 5.0, "{}", SHARED.tokens());
}

// ---------------------------------------------------------------------
// Shutdown while calls wait.

static SHUTDOWN_BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(100)
    .with_min_calls(1000);
static SHUTDOWN_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[derive(Debug, thiserror::Error)]
enum WorkerError {
    #[error(transparent)]
    Downstream(#[from] DownstreamError),
    #[error("circuit open")]
    Open,
}

impl From<CircuitOpen> for WorkerError {
    fn from(_: CircuitOpen) -> Self {
        WorkerError::Open
    }
}

#[retry(
    max = 5,
    base = "10s",
    jitter = "none",
    budget = &SHUTDOWN_BUDGET,
    breaker = &SHUTDOWN_BREAKER,
    on = |e: &WorkerError| matches!(e, WorkerError::Downstream(inner) if inner.is_transient())
)]
async fn sync_user(client: &reqwest::Client, base: &str, id: u32) -> Result<Value, WorkerError> {
    let response = client
        .get(format!("{base}/users/{id}"))
        .send()
        .await
        .map_err(DownstreamError::from)?;
    Ok(json_of(response).await?)
}

#[retry(max = 1)]
async fn key_of_a_new_call() -> Result<String, WorkerError> {
    Ok(current_attempt().unwrap().idempotency_key().to_string())
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_drops_calls_mid_wait_and_leaves_nothing_behind() {
    let (users, state) = downstream(1000).await;
    let base = users.url("");
    let client = reqwest::Client::new();
    let (stop, stopped) = tokio::sync::watch::channel(false);

    let mut set = JoinSet::new();
    for id in 0..4_u32 {
        let (client, base, mut stopped) = (client.clone(), base.clone(), stopped.clone());
        set.spawn(async move {
            tokio::select! {
                result = sync_user(&client, &base, id) => Some(result),
                _ = stopped.wait_for(|stop| *stop) => None,
            }
        });
    }
    // Every call failed its first attempt and waits out its ten seconds
    // before its second.
    while state.hits() < 4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.send(true).unwrap();
    while let Some(joined) = set.join_next().await {
        assert!(joined.unwrap().is_none());
    }
    assert_eq!(state.hits(), 4);
    assert_eq!(SHUTDOWN_BREAKER.state(), CircuitState::Closed);
    assert!(current_attempt().is_none());

    // The thread is as it was: a new call is attempt 1 with a key of its own.
    let first = key_of_a_new_call().await.unwrap();
    let second = key_of_a_new_call().await.unwrap();
    assert_ne!(first, second);

    // After the downstream recovers, the same worker succeeds at once.
    let (users, _) = downstream(0).await;
    let user = sync_user(&client, &users.url(""), 9).await.unwrap();
    assert_eq!(user["id"], 9);
}

/// A gateway shutting down gracefully lets a request whose downstream call
/// waits between attempts finish, with the downstream's answer.
#[tokio::test(start_paused = true)]
async fn a_graceful_shutdown_lets_a_waiting_call_finish() {
    let (users, state) = downstream(2).await;
    let gateway_state = Gateway {
        client: reqwest::Client::new(),
        middleware: middleware_client(RetryMiddleware::new(QUICK)),
        base: users.url(""),
    };
    let router = Router::new()
        .route("/profile/{id}", get(profile))
        .with_state(gateway_state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
    });
    let request = tokio::spawn(reqwest::get(format!("http://{addr}/profile/3")));
    while state.hits() < 1 {
        tokio::task::yield_now().await;
    }
    stop.send(true).unwrap();
    let response = request.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["hit"], 3);
    server.await.unwrap().unwrap();
}

// ---------------------------------------------------------------------
// A per-attempt timeout on a function returning `anyhow::Result`, judged by
// the chain classifier the docs give for anyhow.

#[retry(
    max = 3,
    base = "10ms",
    timeout = "1s",
    on = retry_runtime::classify::chain::is_transient
)]
async fn fetch_with_timeout(client: &reqwest::Client, url: &str) -> anyhow::Result<Value> {
    let response = client.get(url).send().await?.error_for_status()?;
    Ok(serde_json::from_slice(&response.bytes().await?)?)
}

#[derive(Clone)]
struct Slow {
    client: reqwest::Client,
    url: String,
}

async fn slow_profile(State(slow): State<Slow>) -> Result<Json<Value>, (StatusCode, String)> {
    fetch_with_timeout(&slow.client, &slow.url)
        .await
        .map(Json)
        .map_err(|error| (StatusCode::GATEWAY_TIMEOUT, error.to_string()))
}

#[tokio::test(start_paused = true)]
async fn an_attempt_cut_off_by_timeout_is_retried_by_the_chain_classifier() {
    let (slow, state) = downstream(1).await;
    let router = Router::new()
        .route("/slow", get(slow_profile))
        .with_state(Slow {
            client: reqwest::Client::new(),
            url: slow.url("/hangs"),
        });
    let front = servers::serve(router, 0).await;

    let response = reqwest::get(front.url("/slow")).await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["hit"], 2);
    assert_eq!(state.hits(), 2);

    // The same classifier still lets a timeout of the last attempt through
    // as the error, unchanged.
    let (slow, state) = downstream(100).await;
    let error = fetch_with_timeout(&reqwest::Client::new(), &slow.url("/hangs"))
        .await
        .unwrap_err();
    assert!(error.is::<retry_runtime::TimedOut>(), "{error:?}");
    assert_eq!(state.hits(), 3);
}

// ---------------------------------------------------------------------
// The tower layer above `tower::timeout`, as docs/integrations.md says to
// bound each attempt ("the per-attempt timeout is tower's job here").

#[tokio::test(start_paused = true)]
async fn the_layer_above_a_tower_timeout_retries_an_attempt_cut_off() {
    let (slow, state) = downstream(1).await;
    let response = ServiceBuilder::new()
        .layer(
            RetryLayer::new(&HYPER_POLICY)
                .with_classifier(retry_runtime::tower::HttpClassifier::default().boxed_errors()),
        )
        .timeout(Duration::from_secs(1))
        .service(hyper_client())
        .oneshot(
            http::Request::get(slow.url("/hangs"))
                .body(Full::default())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(state.hits(), 2);
}
