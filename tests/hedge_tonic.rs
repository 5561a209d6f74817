//! The tower `HedgeLayer` around a tonic channel, in front of a real tonic
//! server on 127.0.0.1: tonic's request bodies are not `Clone`, so the layer
//! records the body as the first copy sends it and plays it back to the
//! hedged copy (`ReplayBody`). The server's slowness is a signal the
//! test gives, never a duration; the client's clock is paused, so the hedge
//! delay passes whenever the runtime is idle.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use grpc_server::Raw;
use http_body_util::BodyExt;
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::tower::HttpClassifier;
use retry_runtime::{Policy, RetryBudget};
use tokio::sync::Notify;
use tonic::server::{NamedService, UnaryService};
use tonic::transport::Channel;
use tonic::Status;
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new().with_max_attempts(2);
const HEDGE: Hedge = Hedge::after(Duration::from_millis(20));

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// Requests that reached the server (their heads).
    arrived: AtomicU32,
    /// The messages the handler was given, in order.
    payloads: Mutex<Vec<Bytes>>,
    /// Handlers dropped before they answered (a copy the client let go).
    dropped: AtomicU32,
    /// Lets the first handler answer.
    release: Notify,
}

/// `test.Echo/Say`: the first call waits for `release`, the others echo at
/// once.
#[derive(Clone, Default)]
struct SlowFirst(Arc<Seen>);

impl NamedService for SlowFirst {
    const NAME: &'static str = "test.Echo";
}

struct Dropped(Arc<Seen>, bool);

impl Drop for Dropped {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl UnaryService<Bytes> for SlowFirst {
    type Response = Bytes;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<Bytes>, Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let seen = Arc::clone(&self.0);
        Box::pin(async move {
            let first = {
                let mut payloads = seen.payloads.lock().unwrap();
                payloads.push(request.get_ref().clone());
                payloads.len() == 1
            };
            if first {
                let mut guard = Dropped(Arc::clone(&seen), false);
                seen.release.notified().await;
                guard.1 = true;
            }
            Ok(tonic::Response::new(request.into_inner()))
        })
    }
}

impl Service<http::Request<tonic::body::Body>> for SlowFirst {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        self.0.arrived.fetch_add(1, Ordering::SeqCst);
        let echo = self.clone();
        Box::pin(async move { Ok(tonic::server::Grpc::new(Raw).unary(echo, request).await) })
    }
}

async fn serve() -> (Channel, Arc<Seen>) {
    let server = SlowFirst::default();
    let seen = Arc::clone(&server.0);
    (grpc_server::serve_service(server).await, seen)
}

/// One unary call of `test.Echo/Say` through `channel`, as a generated
/// client makes it.
async fn say<T>(channel: T, message: Bytes) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    grpc_server::say(channel, tonic::Request::new(message)).await
}

/// Every gRPC call is a POST: the user says which are safe to hedge (gRFC
/// A6 hedges the methods its service config names) by taking every request
/// through this layer as repeatable.
fn hedging(policy: impl Into<retry_runtime::Shared<Policy>>) -> HedgeLayer<HttpClassifier> {
    HedgeLayer::new(policy, HEDGE).with_classifier(HttpClassifier::default())
}

/// Lets the paused clock run well past the hedge delay: the runtime goes
/// idle, timers fire, and every copy due has been sent.
async fn idle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_answer_is_beaten_by_a_hedged_copy() {
    let (channel, seen) = serve().await;
    let channel = ServiceBuilder::new()
        .layer(hedging(&POLICY))
        .service(channel);

    let reply = say(channel, Bytes::from_static(b"hello")).await.unwrap();

    assert_eq!(reply, "hello");
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 2);
    // The first copy, still waiting, was dropped: the client reset it.
    idle().await;
    assert_eq!(seen.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_unary_body_is_replayed_to_the_hedged_copy() {
    let (channel, seen) = serve().await;
    let channel = ServiceBuilder::new()
        .layer(hedging(&POLICY))
        .service(channel);
    // 40 KB: several HTTP/2 frames, under the 64 KiB bound; no two words alike.
    let message: Bytes = (0..10_000_u32).flat_map(u32::to_be_bytes).collect();

    let reply = say(channel, message.clone()).await.unwrap();

    assert_eq!(reply, message);
    let payloads = seen.payloads.lock().unwrap().clone();
    assert_eq!(payloads, [message.clone(), message]);
}

/// The policy from an `Arc` (built at run time) works as a `static` one, and
/// the hedge takes a token from the budget.
#[tokio::test(start_paused = true)]
async fn an_arc_policy_and_budget_hedge_the_same() {
    let policy = Arc::new(Policy::new().with_max_attempts(3));
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let (channel, seen) = serve().await;
    let layer = hedging(Arc::clone(&policy)).with_budget(Arc::clone(&budget));
    assert_eq!(layer.policy().max_attempts(), 3);
    let channel = ServiceBuilder::new().layer(layer).service(channel);

    let reply = say(channel, Bytes::from_static(b"hello")).await.unwrap();

    assert_eq!(reply, "hello");
    // Copy 2 answered at once: no third copy.
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 2);
    // One token for the hedge, a tenth back for the success.
    assert_eq!(budget.tokens(), 9.1);
}

/// A message over the layer's bound cannot be played back: it is sent
/// once, unhedged, and answers when the server does.
#[tokio::test(start_paused = true)]
async fn a_body_over_the_bound_is_sent_once_unhedged() {
    let (channel, seen) = serve().await;
    let channel = ServiceBuilder::new()
        .layer(hedging(&POLICY).with_max_body(4))
        .service(channel);

    let call = tokio::spawn(say(channel, Bytes::from_static(b"more than four bytes")));
    idle().await;
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 1, "no hedged copy");
    seen.release.notify_one();
    let reply = call.await.unwrap().unwrap();

    assert_eq!(reply, "more than four bytes");
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 1);
}

/// A gRPC message with its five-byte prefix (not compressed, length).
fn framed(message: &[u8]) -> Bytes {
    let mut frame = BytesMut::new();
    frame.put_u8(0);
    frame.put_u32(u32::try_from(message.len()).unwrap());
    frame.put_slice(message);
    frame.freeze()
}

/// A body still being sent when the hedge is due (a client stream that has
/// not ended) cannot be played back: the request is sent once.
#[tokio::test(start_paused = true)]
async fn a_streaming_body_still_open_is_sent_once_unhedged() {
    let (channel, seen) = serve().await;
    let mut channel = ServiceBuilder::new()
        .layer(hedging(&POLICY))
        .service(channel);
    let (sender, frames) =
        tokio::sync::mpsc::channel::<Result<hyper::body::Frame<Bytes>, Status>>(1);
    let body = tonic::body::Body::new(http_body_util::StreamBody::new(
        futures_util::stream::unfold(frames, |mut frames| async move {
            frames.recv().await.map(|frame| (frame, frames))
        }),
    ));
    let request = http::Request::post("http://127.0.0.1/test.Echo/Say")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body)
        .unwrap();

    let ready = channel.ready().await.unwrap();
    let call = tokio::spawn(ready.call(request));
    idle().await;
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 1, "no hedged copy");
    // The stream ends; the server reads the message and, released, echoes.
    sender
        .send(Ok(hyper::body::Frame::data(framed(b"streamed"))))
        .await
        .unwrap();
    drop(sender);
    seen.release.notify_one();
    let response = call.await.unwrap().unwrap();
    let body = response.into_body().collect().await.unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "0");
    assert_eq!(body.to_bytes(), framed(b"streamed"));
    assert_eq!(seen.arrived.load(Ordering::SeqCst), 1);
    assert_eq!(seen.payloads.lock().unwrap().len(), 1);
}
