//! A request the server never processed is safe to send again, whatever its
//! method: gRFC A6's transparent retry. The HTTP layers send it again at
//! once, as the same attempt (a policy of one attempt still succeeds), with
//! no backoff and no budget token: any number of times while it never left
//! the client (a refused connection; at most 3 a call), once after the
//! server refused it (HTTP/2 `REFUSED_STREAM`, or a stream above a graceful
//! `GOAWAY`'s last stream id). A second refusal is a failure like any other.
//!
//! Against real servers on 127.0.0.1: a raw HTTP/2 server (the `h2` crate)
//! that resets the first streams with `REFUSED_STREAM`, or ends the first
//! connection with a `GOAWAY` that names no stream, then serves; through
//! the tower layer over a hyper client, the reqwest middleware and a tonic
//! channel. A POST without an idempotency key is sent again after a refused
//! stream, which its server never saw, but not after a 503, which it did.

#[path = "support/events.rs"]
mod events;
#[path = "support/grpc.rs"]
mod grpc_server;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{CircuitBreaker, CircuitState, Jitter, Policy, RetryBudget, Stop};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::{Service, ServiceBuilder, ServiceExt};
use tracing_subscriber::layer::SubscriberExt;

/// One attempt: what succeeds was not retried.
static ONCE: Policy = Policy::new().with_max_attempts(1);

/// Three attempts, ten seconds apart: a call that took less did not back off.
static SLOW: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_secs(10))
    .with_jitter(Jitter::None);

/// A raw HTTP/2 server, and what it saw.
struct H2Server {
    addr: SocketAddr,
    /// Every stream that reached it, refused ones included.
    streams: Arc<AtomicU32>,
    /// The requests its application answered.
    served: Arc<AtomicU32>,
}

impl H2Server {
    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn seen(&self) -> (u32, u32) {
        (
            self.streams.load(Ordering::SeqCst),
            self.served.load(Ordering::SeqCst),
        )
    }
}

/// Serves HTTP/2 without TLS: the first `go_away` connections get a
/// `GOAWAY` naming no stream as soon as their first request arrives; then
/// the first `refuse` streams are reset with `REFUSED_STREAM`; every other
/// request is answered `status`, echoing its body (a gRPC call's with
/// `grpc-status: 0`).
async fn h2_server(go_away: u32, refuse: u32, status: StatusCode) -> H2Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let streams = Arc::new(AtomicU32::new(0));
    let served = Arc::new(AtomicU32::new(0));
    let (seen, answered) = (Arc::clone(&streams), Arc::clone(&served));
    tokio::spawn(async move {
        for connection in 0.. {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            if connection < go_away {
                tokio::spawn(going_away(socket, Arc::clone(&seen)));
                continue;
            }
            let (seen, answered) = (Arc::clone(&seen), Arc::clone(&answered));
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(socket).await else {
                    return;
                };
                while let Some(Ok((request, mut respond))) = connection.accept().await {
                    if seen.fetch_add(1, Ordering::SeqCst) < refuse {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(answer(request, respond, status, Arc::clone(&answered)));
                }
            });
        }
    });
    H2Server {
        addr,
        streams,
        served,
    }
}

/// Reads the request's body, and answers `status` with it.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    status: StatusCode,
    served: Arc<AtomicU32>,
) {
    let grpc = request
        .headers()
        .get("content-type")
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
    let mut body = request.into_body();
    let mut received = BytesMut::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        received.extend_from_slice(&chunk);
    }
    served.fetch_add(1, Ordering::SeqCst);
    let mut response = http::Response::builder().status(status);
    if grpc {
        response = response.header("content-type", "application/grpc");
    }
    let Ok(mut stream) = respond.send_response(response.body(()).unwrap(), false) else {
        return;
    };
    let _ = stream.send_data(received.freeze(), !grpc);
    if grpc {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let _ = stream.send_trailers(trailers);
    }
}

/// Reads the client's preface and frames up to its first request's
/// `HEADERS`, then answers `SETTINGS` and a `GOAWAY` (`NO_ERROR`) whose last
/// stream id is 0: the request's stream, 1, is above it, so the server
/// processed nothing of it (RFC 9113 section 6.8). Written by hand: the h2
/// crate names the streams it has seen in its `GOAWAY`.
async fn going_away(mut socket: TcpStream, streams: Arc<AtomicU32>) {
    let mut preface = [0_u8; 24];
    if socket.read_exact(&mut preface).await.is_err() {
        return;
    }
    loop {
        let mut head = [0_u8; 9];
        if socket.read_exact(&mut head).await.is_err() {
            return;
        }
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]);
        let mut payload = vec![0; length as usize];
        if socket.read_exact(&mut payload).await.is_err() {
            return;
        }
        if head[3] == 0x1 {
            break;
        }
    }
    streams.fetch_add(1, Ordering::SeqCst);
    let settings = [0, 0, 0, 0x4, 0, 0, 0, 0, 0];
    let go_away = [0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let _ = socket.write_all(&settings).await;
    let _ = socket.write_all(&go_away).await;
    // Held open until the client lets it go.
    let _ = socket.read_to_end(&mut Vec::new()).await;
}

type Body = Full<Bytes>;

/// A hyper client that speaks HTTP/2 without TLS.
fn h2_client() -> Client<HttpConnector, Body> {
    // hyper-util's own resend of a request it thinks was never sent is off:
    // what is tested is the layer's, not the client's.
    Client::builder(TokioExecutor::new())
        .http2_only(true)
        .retry_canceled_requests(false)
        .build_http()
}

fn post(url: &str) -> http::Request<Body> {
    http::Request::post(url)
        .body(Full::new(Bytes::from_static(b"hello")))
        .unwrap()
}

/// The last call's stop reason and attempts.
fn last() -> (Stop, u32) {
    let last = retry_runtime::last_call().expect("a call ended");
    (last.reason(), last.attempts())
}

/// The runtime's events while `events` is the default subscriber.
fn recorded() -> (events::Events, tracing::subscriber::DefaultGuard) {
    let events = events::Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    (events, events::capture(subscriber))
}

#[tokio::test(start_paused = true)]
async fn a_refused_stream_is_sent_again_at_once_as_the_same_attempt() {
    let server = h2_server(0, 1, StatusCode::OK).await;
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let (events, _guard) = recorded();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE).with_budget(Arc::clone(&budget)))
        .service(h2_client());

    let response = service.ready().await.unwrap().call(post(&server.url()));
    let response = response.await.expect("sent again after the refusal");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello", "the same body, sent again");
    assert_eq!(last(), (Stop::Done, 1), "no attempt counted: max = 1");
    assert_eq!(server.seen(), (2, 1), "refused, then answered");
    assert!(
        (budget.tokens() - 10.0).abs() < 1e-9,
        "no token taken: {}",
        budget.tokens()
    );
    let events = events.0.lock().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0].starts_with("DEBUG") && events[0].contains("attempt=1"),
        "{events:?}"
    );
    assert!(events[0].contains("attempt not processed; sending again"));
}

#[tokio::test(start_paused = true)]
async fn a_refused_stream_is_no_failure_for_the_breaker() {
    // A breaker that opens on one failure: had the refusal counted, the
    // stream sent again would be refused.
    let server = h2_server(0, 1, StatusCode::OK).await;
    let breaker = Arc::new(CircuitBreaker::new().with_consecutive_failures(1));
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE).with_breaker(Arc::clone(&breaker)))
        .service(h2_client());

    let response = service.ready().await.unwrap().call(post(&server.url()));
    assert_eq!(response.await.unwrap().status(), 200);
    assert_eq!(last(), (Stop::Done, 1));
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_refused_stream_is_not_waited_for() {
    let server = h2_server(0, 1, StatusCode::OK).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&SLOW))
        .service(h2_client());

    let started = tokio::time::Instant::now();
    let response = service.ready().await.unwrap().call(post(&server.url()));
    assert_eq!(response.await.unwrap().status(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no backoff: {:?}",
        started.elapsed()
    );
    assert_eq!(last(), (Stop::Done, 1));
}

#[tokio::test(start_paused = true)]
async fn a_post_is_sent_again_after_a_refused_stream_but_not_after_a_503() {
    let server = h2_server(0, 1, StatusCode::SERVICE_UNAVAILABLE).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&SLOW))
        .service(h2_client());

    let response = service.ready().await.unwrap().call(post(&server.url()));
    assert_eq!(response.await.unwrap().status(), 503, "as it came");
    assert_eq!(
        last(),
        (Stop::NotRetryable, 1),
        "the server saw the 503'd POST: not repeated"
    );
    assert_eq!(server.seen(), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_second_refusal_is_a_failure_like_any_other() {
    // Refused twice: the second refusal is judged by the policy.
    let server = h2_server(0, 2, StatusCode::OK).await;
    let mut once = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE))
        .service(h2_client());
    let error = once.ready().await.unwrap().call(post(&server.url())).await;
    assert!(error.is_err(), "refused again, and max = 1");
    assert_eq!(last(), (Stop::Exhausted, 1));
    assert_eq!(server.seen(), (2, 0));

    let server = h2_server(0, 2, StatusCode::OK).await;
    let mut twice = ServiceBuilder::new()
        .layer(RetryLayer::new(&SLOW))
        .service(h2_client());
    let started = tokio::time::Instant::now();
    let response = twice.ready().await.unwrap().call(post(&server.url()));
    assert_eq!(response.await.unwrap().status(), 200);
    assert_eq!(last(), (Stop::Done, 2), "one retry, after its backoff");
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(server.seen(), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn a_stream_above_a_goaway_last_stream_id_is_sent_again() {
    let server = h2_server(1, 0, StatusCode::OK).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE))
        .service(h2_client());

    let response = service.ready().await.unwrap().call(post(&server.url()));
    let response = response.await.expect("sent again on a new connection");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    assert_eq!(last(), (Stop::Done, 1));
    assert_eq!(server.seen(), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn the_middleware_sends_a_refused_post_again() {
    let server = h2_server(0, 1, StatusCode::OK).await;
    // reqwest retries refused streams itself unless told not to; here the
    // middleware is the one that does.
    let reqwest = reqwest::Client::builder()
        .http2_prior_knowledge()
        .retry(reqwest::retry::never())
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(reqwest)
        .with(RetryMiddleware::new(ONCE))
        .build();

    let response = client.post(server.url()).body("hello").send().await;
    let response = response.expect("sent again after the refusal");
    assert_eq!(response.text().await.unwrap(), "hello");
    assert_eq!(last(), (Stop::Done, 1));
    assert_eq!(server.seen(), (2, 1));

    let server = h2_server(0, 1, StatusCode::SERVICE_UNAVAILABLE).await;
    let response = client.post(server.url()).body("hello").send().await;
    assert_eq!(response.unwrap().status(), 503);
    assert_eq!(last(), (Stop::NotRetryable, 1));
    assert_eq!(server.seen(), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_tonic_call_on_a_refused_stream_is_sent_again_with_its_message() {
    let server = h2_server(0, 1, StatusCode::OK).await;
    let channel = tonic::transport::Channel::from_shared(server.url())
        .unwrap()
        .connect_lazy();
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE))
        .service(channel);

    let reply = grpc_server::say(channel, tonic::Request::new(Bytes::from_static(b"hello")));
    assert_eq!(reply.await.expect("sent again"), "hello");
    assert_eq!(last(), (Stop::Done, 1));
    assert_eq!(server.seen(), (2, 1));
}

/// A port on 127.0.0.1 nothing listens on.
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_host_that_refuses_every_connection_costs_three_resends_a_call() {
    let addr = closed_port();
    let sends = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&sends);
    let below = h2_client().map_request(move |request| {
        counted.fetch_add(1, Ordering::SeqCst);
        request
    });
    let mut once = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONCE))
        .service(below.clone());
    let url = format!("http://{addr}/");

    let error = once.ready().await.unwrap().call(post(&url)).await;
    assert!(error.is_err());
    assert_eq!(last(), (Stop::Exhausted, 1), "then judged as any failure");
    assert_eq!(
        sends.swap(0, Ordering::SeqCst),
        4,
        "sent, and again 3 times"
    );

    let mut three = ServiceBuilder::new()
        .layer(RetryLayer::new(&SLOW))
        .service(below);
    let started = tokio::time::Instant::now();
    let error = three.ready().await.unwrap().call(post(&url)).await;
    assert!(error.is_err());
    assert_eq!(last(), (Stop::Exhausted, 3));
    assert_eq!(
        sends.load(Ordering::SeqCst),
        6,
        "3 resends a call, not an attempt"
    );
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(20),
        "two backoffs of 10 s (the default cap), no more"
    );
}
