//! The tower layer around a tonic channel, under `tonic::client::Grpc`, in
//! front of a real tonic server on 127.0.0.1 (`tests/support/grpc.rs`):
//! the documented shape compiles, UNAVAILABLE is retried after the server's
//! pushback with the request's message sent again, and a body over the
//! layer's bound is sent once.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use grpc_server::{serve, status};
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Jitter, Policy, RetryBudget};
use tokio::time::Instant;
use tonic::{Code, Status};
use tower::ServiceBuilder;

static POLICY: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// One unary call of `test.Echo/Say` through `channel`, as a generated
/// client makes it.
async fn say<T>(channel: T, message: &'static [u8]) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    grpc_server::say(channel, tonic::Request::new(Bytes::from_static(message))).await
}

/// UNAVAILABLE twice, then OK: three calls, and the third carries the
/// request's message (echoed back), replayed from the first attempt's.
#[tokio::test(start_paused = true)]
async fn unavailable_twice_then_ok_is_three_calls() {
    let (channel, calls) = serve([
        status(Code::Unavailable, None),
        status(Code::Unavailable, None),
    ])
    .await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(channel);

    let reply = say(channel, b"hello").await.unwrap();

    assert_eq!(reply, "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn the_servers_pushback_is_honoured() {
    let (channel, calls) = serve([status(Code::Unavailable, Some("300"))]).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(channel);

    let started = Instant::now();
    let reply = say(channel, b"hello").await.unwrap();

    assert_eq!(reply, "hello");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // max(pushback, backoff) plus up to a tenth of the pushback.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited <= Duration::from_millis(330),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_negative_pushback_or_a_code_outside_the_set_is_returned_at_once() {
    for script in [
        status(Code::Unavailable, Some("-1")),
        status(Code::Internal, None),
    ] {
        let code = script.code();
        let (channel, calls) = serve([script]).await;
        let channel = ServiceBuilder::new()
            .layer(RetryLayer::new(&POLICY))
            .service(channel);
        assert_eq!(say(channel, b"hello").await.unwrap_err().code(), code);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{code:?}");
    }
}

/// A message larger than the layer's bound is sent once: nothing was kept
/// to send it again. It still counts against the budget (one token).
#[tokio::test(start_paused = true)]
async fn a_body_over_the_bound_is_sent_once_and_counted() {
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let (channel, calls) = serve([status(Code::Unavailable, None)]).await;
    let channel = ServiceBuilder::new()
        .layer(
            RetryLayer::new(&POLICY)
                .with_budget(Arc::clone(&budget))
                .with_max_body(4),
        )
        .service(channel);

    let error = say(channel, b"more than four bytes").await.unwrap_err();
    assert_eq!(error.code(), Code::Unavailable);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(budget.tokens(), 9.0);
}
