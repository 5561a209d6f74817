//! Every request through the tower layer and the reqwest middleware is a
//! call in the counters, the ones not retried included: a POST without an
//! idempotency key that gets a 503 ends as `not_retryable`, one that gets a
//! 200 as a success (issue 17: the middleware left them out); a call a
//! breaker stops, or refuses, as `open` (counted through the `metrics`
//! facade on this thread).

#[path = "support/servers.rs"]
mod servers;

#[path = "support/counts.rs"]
mod counts;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::Policy;
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10));

#[tokio::test(start_paused = true)]
async fn posts_that_are_not_retried_are_counted_by_both_integrations() {
    let router = Router::new()
        .route("/down", any(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/up", any(|| async { StatusCode::OK }));
    let server = servers::serve(router, 0).await;

    let counting = counts::Counting::on_this_thread();

    let before = counting.now();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(POLICY))
        .build();
    client.post(server.url("/down")).send().await.unwrap();
    client.post(server.url("/up")).send().await.unwrap();
    let after = counting.now();
    assert_eq!(after.not_retryable - before.not_retryable, 1);
    assert_eq!(after.retries, before.retries);

    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(client);
    let post = |path| {
        http::Request::post(server.url(path))
            .body(Full::default())
            .unwrap()
    };
    service
        .ready()
        .await
        .unwrap()
        .call(post("/down"))
        .await
        .unwrap();
    service
        .ready()
        .await
        .unwrap()
        .call(post("/up"))
        .await
        .unwrap();
    let last = counting.now();
    assert_eq!(last.not_retryable - after.not_retryable, 1);
    assert_eq!(last.retries, after.retries);

    // With a breaker: the call whose failure opens the circuit stops with
    // reason `open`, and so does the next one, refused.
    static BREAKER: retry_runtime::CircuitBreaker = retry_runtime::CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0);
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_breaker(&BREAKER))
        .service(client);
    let get = |path| {
        http::Request::get(server.url(path))
            .body(Full::default())
            .unwrap()
    };
    let opened = service.ready().await.unwrap().call(get("/down")).await;
    assert_eq!(opened.unwrap().status(), 503);
    let refused = service.ready().await.unwrap().call(get("/down")).await;
    assert!(refused.is_err());
    let open = counting.now();
    assert_eq!(open.open - last.open, 2);
    assert_eq!(open.retries - last.retries, 1);

    // A service that cannot become ready for the retry (a pool or buffer
    // that closed after the first attempt) ends the call with its error, as
    // tower's `Retry` does, and the call is counted, as `not_retryable`.
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(ClosesAfterOneCall {
            client,
            calls: Arc::new(AtomicU32::new(0)),
        });
    let closed = service.ready().await.unwrap().call(get("/down")).await;
    assert_eq!(closed.unwrap_err().to_string(), "the pool closed");
    let unready = counting.now();
    assert_eq!(unready.not_retryable - open.not_retryable, 1);
    assert_eq!(unready.retries - open.retries, 1);
}

/// The hyper client, which stops being ready once it has made one call.
#[derive(Clone)]
struct ClosesAfterOneCall {
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    calls: Arc<AtomicU32>,
}

impl Service<http::Request<Full<Bytes>>> for ClosesAfterOneCall {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(if self.calls.load(Ordering::SeqCst) == 0 {
            Ok(())
        } else {
            Err(std::io::Error::other("the pool closed"))
        })
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let response = self.client.request(request);
        Box::pin(async move { response.await.map_err(std::io::Error::other) })
    }
}
