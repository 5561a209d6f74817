//! The tower layer, between a hyper client and a real axum server on
//! 127.0.0.1: the server's Retry-After and gRPC pushback, a connection
//! dropped mid-response, the deadline and the budget, decided as `#[retry]`
//! decides.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Jitter, Policy, RetryBudget};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

type Hits = Arc<AtomicU32>;

/// 503 with `Retry-After: 1` the first time, then 200.
async fn busy_once(State(hits): State<Hits>) -> Response {
    if hits.fetch_add(1, Ordering::SeqCst) == 0 {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
        )
            .into_response()
    } else {
        (StatusCode::OK, "hello").into_response()
    }
}

/// 503 every time, without a hint.
async fn down(State(hits): State<Hits>) -> StatusCode {
    hits.fetch_add(1, Ordering::SeqCst);
    StatusCode::SERVICE_UNAVAILABLE
}

/// A trailers-only gRPC UNAVAILABLE with the pushback in the path, then OK.
async fn grpc_busy_once(
    State(hits): State<Hits>,
    axum::extract::Path(pushback): axum::extract::Path<String>,
) -> Response {
    let status = if hits.fetch_add(1, Ordering::SeqCst) == 0 {
        "14"
    } else {
        "0"
    };
    (
        StatusCode::OK,
        [
            ("content-type", "application/grpc"),
            ("grpc-status", status),
            ("grpc-retry-pushback-ms", pushback.as_str()),
        ],
    )
        .into_response()
}

async fn server(drops: u32) -> (servers::Server, Hits) {
    let hits = Hits::default();
    let router = Router::new()
        .route("/busy-once", any(busy_once))
        .route("/down", any(down))
        .route("/grpc/{pushback}", any(grpc_busy_once))
        .with_state(Arc::clone(&hits));
    (servers::serve(router, drops).await, hits)
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

fn request(method: &str, url: &str) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap()
}

async fn send<S>(
    service: &mut S,
    request: http::Request<Full<Bytes>>,
) -> Result<S::Response, S::Error>
where
    S: Service<http::Request<Full<Bytes>>>,
{
    service.ready().await?.call(request).await
}

static QUICK: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_millis(10))
    .with_cap(Duration::from_secs(10));

#[tokio::test(start_paused = true)]
async fn a_503_with_retry_after_is_retried_after_the_servers_wait() {
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let started = Instant::now();
    let response = send(&mut service, request("GET", &server.url("/busy-once")))
        .await
        .unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // max(hint, backoff) plus up to a tenth of the hint.
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    assert!(waited <= Duration::from_millis(1100), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_post_without_an_idempotency_key_is_not_retried() {
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let response = send(&mut service, request("POST", &server.url("/down")))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // With a key, all four attempts.
    let mut keyed = request("POST", &server.url("/down"));
    keyed.headers_mut().insert(
        "idempotency-key",
        retry_runtime::IdempotencyKey::random().header_value(),
    );
    let response = send(&mut service, keyed).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 5);
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_mid_response_is_retried_for_a_get() {
    let (server, hits) = server(2).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let response = send(&mut service, request("GET", &server.url("/down")))
        .await
        .unwrap();

    // Two dropped connections, then the server's own answer.
    assert_eq!(server.dropped.load(Ordering::SeqCst), 2);
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_mid_response_is_returned_for_a_post() {
    let (server, hits) = server(1).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let error = send(&mut service, request("POST", &server.url("/down")))
        .await
        .unwrap_err();

    // The server may have charged: the caller decides, with the error as it came.
    let hyper_error = std::iter::successors(
        Some(&error as &(dyn std::error::Error + 'static)),
        |error| error.source(),
    )
    .find_map(|error| error.downcast_ref::<hyper::Error>())
    .unwrap();
    assert!(hyper_error.is_incomplete_message(), "{error:?}");
    assert_eq!(server.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn no_wait_that_would_pass_the_deadline_is_started() {
    static POLICY: Policy = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(400))
        .with_jitter(Jitter::None)
        .with_deadline(Duration::from_secs(1));
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(client());

    let started = Instant::now();
    let response = send(&mut service, request("GET", &server.url("/down")))
        .await
        .unwrap();

    // Waits of 400ms, then 800ms would end at 1.2s: the second 503 is returned.
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(started.elapsed(), Duration::from_millis(400));
}

#[tokio::test(start_paused = true)]
async fn a_spent_budget_stops_retries_across_requests() {
    // Four tokens: a retry is allowed while more than two remain.
    static BUDGET: RetryBudget = RetryBudget::new(4, 0.1);
    static POLICY: Policy = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(10));
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_budget(&BUDGET))
        .service(client());

    let first = send(&mut service, request("GET", &server.url("/down")))
        .await
        .unwrap();
    assert_eq!(first.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 2);

    let second = send(&mut service, request("GET", &server.url("/down")))
        .await
        .unwrap();
    assert_eq!(second.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn grpc_unavailable_is_retried_after_its_pushback() {
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let started = Instant::now();
    let response = send(&mut service, request("POST", &server.url("/grpc/300")))
        .await
        .unwrap();

    assert_eq!(response.headers()["grpc-status"], "0");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited <= Duration::from_millis(330),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_negative_grpc_pushback_means_do_not_retry() {
    let (server, hits) = server(0).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&QUICK))
        .service(client());

    let response = send(&mut service, request("POST", &server.url("/grpc/-1")))
        .await
        .unwrap();

    assert_eq!(response.headers()["grpc-status"], "14");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// With a breaker, the layer stops sending to a server that is down: the
/// retries end once the circuit opens, later requests fail at once without
/// reaching the server, and after the open period a probe finds it back.
#[tokio::test(start_paused = true)]
async fn a_breaker_stops_requests_to_a_server_that_is_down_until_a_probe_finds_it_back() {
    use retry_runtime::tower::BreakerError;
    use retry_runtime::{CircuitBreaker, CircuitState};
    use std::sync::atomic::AtomicBool;

    static BREAKER: CircuitBreaker = CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(1))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1);
    static POLICY: Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(10))
        .with_jitter(Jitter::None);

    let up = Arc::new(AtomicBool::new(false));
    let hits = Hits::default();
    let router = Router::new()
        .route(
            "/",
            any(
                |State((up, hits)): State<(Arc<AtomicBool>, Hits)>| async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    if up.load(Ordering::SeqCst) {
                        StatusCode::OK
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                },
            ),
        )
        .with_state((Arc::clone(&up), Arc::clone(&hits)));
    let server = servers::serve(router, 0).await;
    // No idle connections, whose timers would move the paused clock.
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_breaker(&BREAKER))
        .service(client);
    let url = server.url("/");

    // Two failed attempts open the circuit; the third is not sent.
    let response = send(&mut service, request("GET", &url)).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(BREAKER.state(), CircuitState::Open);

    // Open: refused at once, never retried, the server left alone.
    for _ in 0..10 {
        let refused = send(&mut service, request("GET", &url)).await;
        assert!(matches!(refused, Err(BreakerError::Open(_))), "{refused:?}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 2);

    // Back up; after the open period one probe goes through and closes it.
    up.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(1)).await;
    let response = send(&mut service, request("GET", &url)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert_eq!(BREAKER.state(), CircuitState::Closed);
}

/// Under `tower::timeout` (the per-attempt timeout the docs advise, with
/// `boxed_errors()`), a GET cut off is retried, and a POST without a key is
/// not: it may have been sent and acted on. A hyper client against a real
/// server that takes a second to answer.
#[tokio::test(start_paused = true)]
async fn a_post_cut_off_by_a_tower_timeout_is_sent_once() {
    static POLICY: Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(1));
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            any(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(1)).await;
                "late"
            }),
        )
        .with_state(Arc::clone(&hits));
    let server = servers::serve(router, 0).await;
    let mut client = ServiceBuilder::new()
        .layer(
            RetryLayer::new(&POLICY)
                .with_classifier(retry_runtime::tower::HttpClassifier::default().boxed_errors()),
        )
        .timeout(Duration::from_millis(30))
        .service(client());
    for (method, sent) in [(http::Method::POST, 1), (http::Method::GET, 3)] {
        hits.store(0, Ordering::SeqCst);
        let request = http::Request::builder()
            .method(method.clone())
            .uri(server.url("/"))
            .body(Full::<Bytes>::default())
            .unwrap();
        let answer = client.ready().await.unwrap().call(request).await;
        let error = answer.expect_err("cut off");
        assert!(error.is::<tower::timeout::error::Elapsed>(), "{error}");
        assert_eq!(hits.load(Ordering::SeqCst), sent, "{method}");
    }
}
