//! A gRPC call answered by something in front of the server (a proxy, a
//! load balancer, a restarting sidecar) with a plain HTTP error and no
//! `grpc-status`: the classifier maps the HTTP status as gRPC clients do
//! (gRPC's "HTTP to gRPC Status Code Mapping": 429, 502, 503 and 504 are
//! `UNAVAILABLE`; 400 `INTERNAL`, 401 `UNAUTHENTICATED`, 403
//! `PERMISSION_DENIED`, 404 `UNIMPLEMENTED`, any other `UNKNOWN`) and
//! retries the codes it retries. It used to judge the call as any POST: a
//! 503 from the proxy was never retried, and a 500 went unretried for the
//! wrong reason. A real server on 127.0.0.1, through the tower layer and
//! the reqwest middleware; the clock is paused.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::RetryLayer;
use retry_runtime::Policy;
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10));

/// Answers its first `fail` calls with `status` and no gRPC status, as a
/// proxy does, then as a gRPC server does (`grpc-status: 0`).
async fn behind_a_proxy(fail: u32, status: StatusCode) -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/echo.Echo/Say",
            post(move |State(hits): State<Arc<AtomicU32>>| async move {
                if hits.fetch_add(1, Ordering::SeqCst) < fail {
                    (
                        status,
                        [("content-type", "text/plain")],
                        "upstream unavailable",
                    )
                } else {
                    (StatusCode::OK, [("grpc-status", "0")], "")
                }
            }),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, 0).await, hits)
}

/// A gRPC call through `RetryLayer` over a hyper client.
async fn call_through_the_layer(server: &servers::Server, content_type: &str) -> StatusCode {
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(
            Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(0)
                .build_http::<Full<Bytes>>(),
        );
    let request = http::Request::post(server.url("/echo.Echo/Say"))
        .header("content-type", content_type)
        .header("te", "trailers")
        .body(Full::new(Bytes::from_static(b"\0\0\0\0\0")))
        .unwrap();
    let response = client.ready().await.unwrap().call(request).await.unwrap();
    response.status()
}

#[tokio::test(start_paused = true)]
async fn a_proxys_503_to_a_grpc_call_is_retried_as_unavailable() {
    for content_type in ["application/grpc", "application/grpc+proto"] {
        let (server, hits) = behind_a_proxy(2, StatusCode::SERVICE_UNAVAILABLE).await;
        assert_eq!(call_through_the_layer(&server, content_type).await, 200);
        assert_eq!(hits.load(Ordering::SeqCst), 3, "{content_type}");
    }
}

#[tokio::test(start_paused = true)]
async fn statuses_grpc_maps_to_other_codes_are_not_retried() {
    for status in [
        StatusCode::INTERNAL_SERVER_ERROR,
        StatusCode::NOT_FOUND,
        StatusCode::UNAUTHORIZED,
    ] {
        let (server, hits) = behind_a_proxy(2, status).await;
        assert_eq!(
            call_through_the_layer(&server, "application/grpc").await,
            status
        );
        assert_eq!(hits.load(Ordering::SeqCst), 1, "{status}");
    }
}

/// Any other POST answered 503 is still sent once: only gRPC calls are
/// judged by gRPC's codes.
#[tokio::test(start_paused = true)]
async fn a_plain_post_answered_503_is_still_sent_once() {
    let (server, hits) = behind_a_proxy(2, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(
        call_through_the_layer(&server, "application/json").await,
        503
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_middleware_retries_a_proxys_503_to_a_grpc_call() {
    let (server, hits) = behind_a_proxy(2, StatusCode::BAD_GATEWAY).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(
            POLICY,
        ))
        .build();
    let response = client
        .post(server.url("/echo.Echo/Say"))
        .header("content-type", "application/grpc")
        .body("\0\0\0\0\0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}
