//! A request whose body is not `Clone` (hyper's boxed bodies, a tonic
//! channel's), sent while the server is down: the connection is refused,
//! so the body was never read, and the request was never sent. The
//! classifier retries a refused connection for any request
//! (docs/integrations.md: "connection errors"), and the retry must carry
//! the same body. The server comes up when the first attempt has failed
//! (started by the service below the layer as it returns that error), so
//! the second attempt finds it: no timing involved.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::put;
use axum::Router;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::tower::{HttpClassifier, RetryLayer};
use retry_runtime::{Policy, Stop};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10));

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A port on 127.0.0.1 nothing listens on (yet).
fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

type Start = Box<dyn FnOnce() + Send>;

/// Runs `start` once, the first time it is called.
#[derive(Clone)]
struct Once(Arc<Mutex<Option<Start>>>);

impl Once {
    fn new(start: impl FnOnce() + Send + 'static) -> Self {
        Once(Arc::new(Mutex::new(Some(Box::new(start)))))
    }

    fn run(&self) {
        if let Some(start) = self.0.lock().unwrap().take() {
            start();
        }
    }

    /// For `map_result` on a client: runs this the first time a call
    /// through it fails (its connection refused: the server is not up yet).
    fn on_refusal<T, E>(self) -> impl FnOnce(Result<T, E>) -> Result<T, E> + Clone {
        move |result| {
            if result.is_err() {
                self.run();
            }
            result
        }
    }
}

/// Starts an echo server on `addr`, counting the requests it gets.
fn start_http_server(addr: SocketAddr, hits: Arc<AtomicU32>) {
    let listener = std::net::TcpListener::bind(addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let router = Router::new().route(
        "/",
        put(move |body: Bytes| async move {
            hits.fetch_add(1, Ordering::SeqCst);
            body
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
}

fn hyper_client(
) -> hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Body> {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
}

fn put_hello(addr: SocketAddr) -> http::Request<Body> {
    http::Request::put(format!("http://{addr}/"))
        .body(
            Full::new(Bytes::from_static(b"hello"))
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_retry_layer_retries_a_refused_put_with_its_body() {
    let addr = free_port();
    let hits = Arc::new(AtomicU32::new(0));
    let server_hits = Arc::clone(&hits);
    let start = Once::new(move || start_http_server(addr, server_hits));
    let below = hyper_client().map_result(start.on_refusal());
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(below);

    let response = service
        .ready()
        .await
        .unwrap()
        .call(put_hello(addr))
        .await
        .expect("the refused attempt is retried once the server is up");
    let last = retry_runtime::last_call().unwrap();
    // Sent again at once, as the same attempt (tests/transparent_retries.rs).
    assert_eq!((last.reason(), last.attempts()), (Stop::Done, 1));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_hedge_layer_retries_a_refused_put_with_its_body() {
    let addr = free_port();
    let hits = Arc::new(AtomicU32::new(0));
    let server_hits = Arc::clone(&hits);
    let start = Once::new(move || start_http_server(addr, server_hits));
    let below = hyper_client().map_result(start.on_refusal());
    let mut service = ServiceBuilder::new()
        .layer(HedgeLayer::new(
            &POLICY,
            Hedge::after(Duration::from_secs(60)),
        ))
        .service(below);

    let response = service
        .ready()
        .await
        .unwrap()
        .call(put_hello(addr))
        .await
        .expect("the refused copy is followed by another once the server is up");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// A tonic channel to a server that is restarting: the connection is
/// refused, and gRPC's own clients retry such a call (it never reached the
/// server). Through the retry layer the call's message is sent again.
#[tokio::test(start_paused = true)]
async fn a_tonic_call_refused_a_connection_is_retried_with_its_message() {
    let addr = free_port();
    let echo = grpc_server::Echo::default();
    let calls = Arc::clone(&echo.calls);
    let start = Once::new(move || {
        let listener = std::net::TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(echo)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
    });
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    let below = channel.map_result(start.on_refusal());
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_classifier(HttpClassifier::default()))
        .service(below);

    let reply = grpc_server::say(channel, tonic::Request::new(Bytes::from_static(b"hello")))
        .await
        .expect("the refused call is retried once the server is up");
    assert_eq!(reply, "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
