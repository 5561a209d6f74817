//! gRPC statuses from a real tonic server on 127.0.0.1, through a tonic
//! client: UNAVAILABLE is retried after the server's
//! `grpc-retry-pushback-ms`; a negative or malformed pushback, or a code
//! outside the retryable set, is returned at once (gRFC A6).
//!
//! The server is `tests/support/grpc.rs`.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use grpc_server::{serve, status, Raw};
use http::uri::PathAndQuery;
use retry_runtime::classify::grpc::{self, RetryableCodes};
use retry_runtime::retry;
use tokio::time::Instant;
use tonic::transport::Channel;
use tonic::{Code, Status};

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
