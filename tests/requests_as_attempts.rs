//! `tower::ServerLayer` (DESIGN §4.17): a server runs each request as an
//! attempt with the deadline its caller sent, answers at once a request
//! whose deadline passed in a queue below it, and marks a failure an inner
//! call gave up on "do not retry". Real servers on 127.0.0.1 where a user
//! would have one.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use retry_runtime::classify::grpc;
use retry_runtime::tower::{ServerBody, ServerLayer};
use retry_runtime::{current_attempt, retry, Stop};
use tokio::sync::Notify;
use tower::{Service, ServiceBuilder, ServiceExt};

#[path = "support/grpc.rs"]
mod grpc_support;

/// Serves `service` (an axum router under layers) on 127.0.0.1.
async fn serve<S>(service: S) -> String
where
    S: Service<Request<hyper::body::Incoming>, Response = Response<ServerBody<axum::body::Body>>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: std::error::Error + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{addr}/")
}

/// A client that keeps no idle connection, whose timers would move the
/// paused clock.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// The time the handler had left as it started, in whole milliseconds, in
/// the response body; `none` without a deadline.
async fn time_left() -> String {
    let attempt = current_attempt().expect("a request runs as an attempt");
    match attempt.time_left() {
        Some(left) => left.as_millis().to_string(),
        None => "none".to_owned(),
    }
}

#[tokio::test(start_paused = true)]
async fn the_handler_runs_with_the_time_its_caller_sent() {
    let router = Router::new().route("/", get(time_left));
    let url = serve(
        ServiceBuilder::new()
            .layer(ServerLayer::new())
            .service(router),
    )
    .await;
    let client = client();
    let ask = |headers: &[(&'static str, &'static str)]| {
        let mut request = client.get(&url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    assert_eq!(
        ask(&[("x-envoy-expected-rq-timeout-ms", "250")]).await,
        "250"
    );
    assert_eq!(ask(&[("grpc-timeout", "2S")]).await, "2000");
    let both = [
        ("grpc-timeout", "100m"),
        ("x-envoy-expected-rq-timeout-ms", "250"),
    ];
    assert_eq!(ask(&both).await, "100");
    // No header, or one that is not a single positive number: no deadline,
    // and the request is served.
    assert_eq!(ask(&[]).await, "none");
    for bad in ["0", "-250", "250ms", "", "99999999999999999999999"] {
        assert_eq!(
            ask(&[("x-envoy-expected-rq-timeout-ms", bad)]).await,
            "none",
            "{bad:?}"
        );
    }
}

/// Waits of 10 s between attempts: under a caller's deadline of 1 s, the
/// first wait would pass it.
#[retry(max = 3, base = "10s", jitter = "none")]
async fn slow_retries(calls: &AtomicU32) -> Result<(), StatusCode> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(StatusCode::SERVICE_UNAVAILABLE)
}

#[tokio::test(start_paused = true)]
async fn the_callers_deadline_bounds_the_handlers_retries() {
    async fn handler(State(calls): State<Arc<AtomicU32>>) -> StatusCode {
        match slow_retries(&calls).await {
            Ok(()) => StatusCode::OK,
            Err(status) => {
                assert_eq!(retry_runtime::last_call().unwrap().reason(), Stop::Deadline);
                status
            }
        }
    }
    let calls = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route("/", get(handler))
        .with_state(Arc::clone(&calls));
    let url = serve(
        ServiceBuilder::new()
            .layer(ServerLayer::new())
            .service(router),
    )
    .await;
    let started = tokio::time::Instant::now();
    let response = client()
        .get(&url)
        .header("x-envoy-expected-rq-timeout-ms", "1000")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the 10 s wait would pass the deadline"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
    // The inner call gave up on a retryable error: the caller is told.
    assert_eq!(response.headers()["retry-exhausted"], "deadline");
}

#[tokio::test(start_paused = true)]
async fn a_request_whose_deadline_passed_in_the_queue_is_answered_without_its_handler() {
    #[derive(Clone)]
    struct Slow {
        runs: Arc<AtomicU32>,
        started: Arc<Notify>,
    }
    async fn handler(State(slow): State<Slow>) -> &'static str {
        slow.runs.fetch_add(1, Ordering::SeqCst);
        slow.started.notify_one();
        tokio::time::sleep(Duration::from_millis(100)).await;
        "done"
    }
    let slow = Slow {
        runs: Arc::new(AtomicU32::new(0)),
        started: Arc::new(Notify::new()),
    };
    let router = Router::new()
        .route("/", get(handler))
        .with_state(slow.clone());
    let server = ServiceBuilder::new()
        .layer(ServerLayer::new())
        .concurrency_limit(1)
        .service(router);
    let url = serve(server).await;
    let client = client();
    let send = |deadline_ms: &'static str| {
        client
            .get(&url)
            .header("x-envoy-expected-rq-timeout-ms", deadline_ms)
            .send()
    };
    let first = tokio::spawn(send("1000"));
    slow.started.notified().await;
    // The second waits behind the first (100 ms), past its 50 ms.
    let started = tokio::time::Instant::now();
    let second = send("50").await.unwrap();
    assert_eq!(second.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    assert_eq!(first.await.unwrap().unwrap().text().await.unwrap(), "done");
    assert_eq!(
        slow.runs.load(Ordering::SeqCst),
        1,
        "the second handler never ran"
    );
    // One with time enough waits its turn and runs.
    let third = send("150").await.unwrap();
    assert_eq!(third.text().await.unwrap(), "done");
    assert_eq!(slow.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_grpc_request_whose_deadline_passed_is_answered_deadline_exceeded() {
    let ran = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&ran);
    let handler = tower::service_fn(move |_: Request<()>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(String::new())) }
    });
    let busy = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&busy);
    // A service below that becomes ready only after 2 s.
    let queued = tower::service_fn(move |request: Request<()>| {
        let mut handler = handler.clone();
        let gate = Arc::clone(&gate);
        async move {
            let _permit = gate.acquire().await.unwrap();
            handler.call(request).await
        }
    });
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        busy.add_permits(1);
    });
    let request = Request::post("/test.Echo/Say")
        .header("content-type", "application/grpc")
        .header("grpc-timeout", "1S")
        .body(())
        .unwrap();
    let mut server = ServiceBuilder::new()
        .layer(ServerLayer::new())
        .layer(tower::limit::ConcurrencyLimitLayer::new(1))
        .service(queued);
    // Holds the one slot for 2 s.
    let holder = server.ready().await.unwrap().call(Request::new(()));
    let late = server.ready().await.unwrap().call(request);
    let (held, late) = tokio::join!(holder, late);
    assert_eq!(held.unwrap().status(), 200);
    let late = late.unwrap();
    assert_eq!(late.status(), 200, "a gRPC error is Trailers-Only");
    assert_eq!(late.headers()["grpc-status"], "4", "DEADLINE_EXCEEDED");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "only the first ran");
}

/// Two attempts 10 ms apart, both failing.
#[retry(max = 2, base = "10ms", jitter = "none")]
async fn gives_up() -> Result<(), StatusCode> {
    Err(StatusCode::SERVICE_UNAVAILABLE)
}

#[tokio::test(start_paused = true)]
async fn a_failure_an_inner_call_gave_up_on_is_marked() {
    async fn propagates() -> Result<&'static str, StatusCode> {
        gives_up().await?;
        Ok("fine")
    }
    async fn handles() -> Result<&'static str, StatusCode> {
        // A fallback: the give-up is handled, then the handler's own work
        // fails.
        let _ = gives_up().await;
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        Err(StatusCode::INTERNAL_SERVER_ERROR)
    }
    async fn recovers() -> Result<&'static str, StatusCode> {
        let _ = gives_up().await;
        Ok("fine")
    }
    async fn own() -> Result<&'static str, StatusCode> {
        Err(StatusCode::SERVICE_UNAVAILABLE)
    }
    let router = Router::new()
        .route("/propagates", get(propagates))
        .route("/handles", get(handles))
        .route("/recovers", get(recovers))
        .route("/own", get(own));
    let url = serve(
        ServiceBuilder::new()
            .layer(ServerLayer::new())
            .service(router),
    )
    .await;
    let client = client();
    let get = |path: &str| client.get(format!("{url}{}", &path[1..])).send();
    let marked = get("/propagates").await.unwrap();
    assert_eq!(marked.status(), 503);
    assert_eq!(marked.headers()["retry-exhausted"], "exhausted");
    for (path, status) in [("/handles", 500), ("/recovers", 200), ("/own", 503)] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        assert!(
            response.headers().get("retry-exhausted").is_none(),
            "{path}"
        );
    }
}

/// A gRPC server whose handler calls a dependency that always fails, with
/// three attempts.
#[derive(Clone, Default)]
struct Stock {
    calls: Arc<AtomicU32>,
}

#[retry(max = 3, base = "10ms", jitter = "none", on = grpc::is_retryable)]
async fn dependency(calls: &AtomicU32) -> Result<Bytes, tonic::Status> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(tonic::Status::unavailable("down"))
}

impl tonic::server::UnaryService<Bytes> for Stock {
    type Response = Bytes;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<tonic::Response<Bytes>, tonic::Status>> + Send>,
    >;
    fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
        let calls = Arc::clone(&self.calls);
        Box::pin(async move { dependency(&calls).await.map(tonic::Response::new) })
    }
}

impl tonic::server::NamedService for Stock {
    const NAME: &'static str = "test.Echo";
}

impl Service<Request<tonic::body::Body>> for Stock {
    type Response = Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>,
    >;
    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        let stock = self.clone();
        Box::pin(async move {
            Ok(tonic::server::Grpc::new(grpc_support::Raw)
                .unary(stock, request)
                .await)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_grpc_failure_an_inner_call_gave_up_on_carries_a_negative_pushback() {
    let stock = Stock::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(ServerLayer::new())
            .add_service(stock.clone())
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = grpc_support::say(channel, tonic::Request::new(Bytes::new()))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(stock.calls.load(Ordering::SeqCst), 3);
    assert_eq!(status.metadata().get(grpc::PUSHBACK).unwrap(), "-1");
    assert!(!grpc::is_retryable(&status), "gRFC A6: not retried");
}

/// A gRPC failure whose status comes in the trailers, after a message: the
/// trailers carry the mark.
#[tokio::test(start_paused = true)]
async fn a_grpc_failure_in_the_trailers_is_marked_there() {
    use http_body_util::BodyExt;

    type Frames = http_body_util::StreamBody<
        futures_util::stream::Iter<
            std::vec::IntoIter<Result<hyper::body::Frame<Bytes>, Infallible>>,
        >,
    >;

    fn streamed(code: &'static str) -> Response<Frames> {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static(code));
        let frames = vec![
            Ok(hyper::body::Frame::data(Bytes::from_static(b"\0\0\0\0\0"))),
            Ok(hyper::body::Frame::trailers(trailers)),
        ];
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        Response::builder()
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap()
    }

    for (code, give_up, marked) in [("14", true, true), ("0", true, false), ("14", false, false)] {
        let handler = tower::service_fn(move |_: Request<()>| async move {
            if give_up {
                let _ = gives_up().await;
            }
            Ok::<_, Infallible>(streamed(code))
        });
        let request = Request::post("/test.Echo/Say")
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        let server = ServiceBuilder::new()
            .layer(ServerLayer::new())
            .service(handler);
        let response = server.oneshot(request).await.unwrap();
        assert!(
            response.headers().get(grpc::PUSHBACK).is_none(),
            "not in the headers"
        );
        let trailers = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .trailers()
            .cloned()
            .unwrap();
        assert_eq!(
            trailers
                .get(grpc::PUSHBACK)
                .map(|value| value.to_str().unwrap()),
            marked.then_some("-1"),
            "grpc-status {code}, inner give-up {give_up}"
        );
    }
}
