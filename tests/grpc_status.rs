//! gRPC statuses from a real tonic server on 127.0.0.1, through a tonic
//! client: UNAVAILABLE is retried after the server's
//! `grpc-retry-pushback-ms`; a negative or malformed pushback, or a code
//! outside the retryable set, is returned at once (gRFC A6).
//!
//! The service is written by hand over tonic's generic server pieces and a
//! codec of raw bytes, so no protoc is needed.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use retry_runtime::classify::grpc::{self, RetryableCodes};
use retry_runtime::retry;
use tokio::time::Instant;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{NamedService, UnaryService};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// Messages are their bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// `test.Echo`: answers each call with the next scripted status, or echoes
/// the request once the script is done.
#[derive(Clone, Default)]
struct Echo {
    script: Arc<Mutex<VecDeque<Status>>>,
    calls: Arc<AtomicU32>,
}

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

impl UnaryService<Bytes> for Echo {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;
    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let next = self.script.lock().unwrap().pop_front();
        std::future::ready(match next {
            Some(status) => Err(status),
            None => Ok(tonic::Response::new(request.into_inner())),
        })
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for Echo {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let echo = self.clone();
        Box::pin(async move { Ok(tonic::server::Grpc::new(Raw).unary(echo, request).await) })
    }
}

fn status(code: Code, pushback: Option<&'static str>) -> Status {
    let mut status = Status::new(code, "scripted");
    if let Some(pushback) = pushback {
        status
            .metadata_mut()
            .insert(grpc::PUSHBACK, pushback.parse().unwrap());
    }
    status
}

/// Serves `test.Echo` on 127.0.0.1 and connects a channel to it.
async fn serve(script: impl IntoIterator<Item = Status>) -> (Channel, Arc<AtomicU32>) {
    let echo = Echo::default();
    echo.script.lock().unwrap().extend(script);
    let calls = Arc::clone(&echo.calls);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(echo)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, calls)
}

async fn say(channel: &Channel) -> Result<Bytes, Status> {
    let mut client = tonic::client::Grpc::new(channel.clone());
    client
        .ready()
        .await
        .map_err(|error| Status::unavailable(error.to_string()))?;
    let request = tonic::Request::new(Bytes::from_static(b"hello"));
    let path = PathAndQuery::from_static("/test.Echo/Say");
    Ok(client.unary(request, path, Raw).await?.into_inner())
}

#[retry(max = 3, base = "10ms", cap = "5s", on = grpc::is_retryable, retry_after = grpc::pushback)]
async fn say_retried(channel: &Channel) -> Result<Bytes, Status> {
    say(channel).await
}

const ALSO_EXHAUSTED: RetryableCodes = RetryableCodes::UNAVAILABLE.with(Code::ResourceExhausted);

#[retry(max = 3, base = "10ms", on = |status| ALSO_EXHAUSTED.is_retryable(status), retry_after = grpc::pushback)]
async fn say_retrying_exhausted(channel: &Channel) -> Result<Bytes, Status> {
    say(channel).await
}

#[tokio::test]
async fn unavailable_is_retried_after_the_servers_pushback() {
    let (channel, calls) = serve([status(Code::Unavailable, Some("200"))]).await;

    let started = Instant::now();
    let reply = say_retried(&channel).await.unwrap();

    assert_eq!(reply, "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn unavailable_without_pushback_backs_off_as_usual() {
    let (channel, calls) = serve([
        status(Code::Unavailable, None),
        status(Code::Unavailable, None),
    ])
    .await;
    assert_eq!(say_retried(&channel).await.unwrap(), "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_negative_or_malformed_pushback_means_do_not_retry() {
    for pushback in ["-1", "soon", "1.5"] {
        let (channel, calls) = serve([status(Code::Unavailable, Some(pushback))]).await;
        let error = say_retried(&channel).await.unwrap_err();
        assert_eq!(error.code(), Code::Unavailable, "{pushback}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{pushback}");
    }
}

#[tokio::test]
async fn a_pushback_above_cap_is_not_waited_out() {
    let (channel, calls) = serve([status(Code::Unavailable, Some("60000"))]).await;
    let started = Instant::now();
    let error = say_retried(&channel).await.unwrap_err();
    assert_eq!(error.code(), Code::Unavailable);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn only_codes_in_the_set_are_retried() {
    let (channel, calls) = serve([status(Code::ResourceExhausted, None)]).await;
    assert_eq!(
        say_retried(&channel).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "UNAVAILABLE only by default"
    );

    let (channel, calls) = serve([
        status(Code::ResourceExhausted, Some("20")),
        status(Code::Unavailable, None),
    ])
    .await;
    assert_eq!(say_retrying_exhausted(&channel).await.unwrap(), "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    let (channel, calls) = serve([status(Code::Internal, None)]).await;
    assert_eq!(
        say_retrying_exhausted(&channel).await.unwrap_err().code(),
        Code::Internal
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
