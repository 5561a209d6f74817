//! A tonic call's own deadline (`tonic::Request::set_timeout`, sent as the
//! `grpc-timeout` header) is the whole call's under the tower layer, as
//! gRFC A6 has it: no retry starts, and no wait is begun, past it, and each
//! retried attempt tells the server the time that is left, not the time
//! the first attempt had. Against a real tonic server on 127.0.0.1.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use grpc_server::{status, Echo};
use retry_runtime::tower::RetryLayer;
use retry_runtime::{CircuitBreaker, Jitter, Policy};
use tokio::time::Instant;
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tower::ServiceBuilder;

static POLICY: Policy = Policy::new()
    .with_max_attempts(5)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// `test.Echo`, noting the `grpc-timeout` each call arrives with.
#[derive(Clone, Default)]
struct Noting {
    echo: Echo,
    timeouts: Arc<Mutex<Vec<Option<String>>>>,
}

impl NamedService for Noting {
    const NAME: &'static str = "test.Echo";
}

impl tower::Service<http::Request<tonic::body::Body>> for Noting {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let timeout = request
            .headers()
            .get("grpc-timeout")
            .map(|value| value.to_str().unwrap().to_owned());
        self.timeouts.lock().unwrap().push(timeout);
        self.echo.call(request)
    }
}

async fn serve(script: impl IntoIterator<Item = Status>) -> (Channel, Noting) {
    let noting = Noting::default();
    noting.echo.script.lock().unwrap().extend(script);
    (grpc_server::serve_service(noting.clone()).await, noting)
}

async fn say<T>(channel: T, timeout: Option<Duration>) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let mut request = tonic::Request::new(Bytes::from_static(b"hello"));
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    grpc_server::say(channel, request).await
}

/// A `grpc-timeout` value in milliseconds, whatever its unit.
fn millis(value: &str) -> f64 {
    let (digits, unit) = value.split_at(value.len() - 1);
    let number: f64 = digits.parse().unwrap();
    number
        * match unit {
            "H" => 3_600_000.0,
            "M" => 60_000.0,
            "S" => 1_000.0,
            "m" => 1.0,
            "u" => 0.001,
            "n" => 0.000_001,
            other => panic!("unit {other}"),
        }
}

/// Told to come back in 300 ms each time, a call with 500 ms to live makes
/// its first retry (at about 300 ms) and no other: the next wait would end
/// past its deadline. The retry carries the time left, about 200 ms.
#[tokio::test(start_paused = true)]
async fn the_calls_timeout_bounds_its_retries_and_each_attempt_carries_the_time_left() {
    let (channel, noting) = serve([
        status(Code::Unavailable, Some("300")),
        status(Code::Unavailable, Some("300")),
        status(Code::Unavailable, Some("300")),
    ])
    .await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(channel);

    let started = Instant::now();
    let error = say(channel, Some(Duration::from_millis(500)))
        .await
        .unwrap_err();
    let took = started.elapsed();

    assert_eq!(error.code(), Code::Unavailable);
    assert_eq!(noting.echo.calls.load(Ordering::SeqCst), 2);
    assert!(took < Duration::from_millis(500), "{took:?}");
    let timeouts = noting.timeouts.lock().unwrap().clone();
    let first = millis(timeouts[0].as_deref().unwrap());
    let second = millis(timeouts[1].as_deref().unwrap());
    assert!((499.0..=500.0).contains(&first), "{timeouts:?}");
    assert!((165.0..=200.0).contains(&second), "{timeouts:?}");
}

/// The layer's own `deadline`, when nearer than the call's timeout, is the
/// one that bounds the call; a call without a timeout is not given one.
#[tokio::test(start_paused = true)]
async fn the_nearer_of_the_policys_deadline_and_the_calls_timeout_wins() {
    static NEAR: Policy = POLICY.with_deadline(Duration::from_millis(200));
    let (channel, noting) = serve([
        status(Code::Unavailable, Some("150")),
        status(Code::Unavailable, Some("150")),
    ])
    .await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&NEAR))
        .service(channel);
    let error = say(channel, Some(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Code::Unavailable);
    assert_eq!(noting.echo.calls.load(Ordering::SeqCst), 2);

    let (channel, noting) = serve([status(Code::Unavailable, None)]).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .service(channel);
    say(channel, None).await.unwrap();
    assert_eq!(*noting.timeouts.lock().unwrap(), [None, None]);
}

/// A server slower than the call's timeout: the call ends with it, once,
/// and is not sent again (DEADLINE_EXCEEDED is not retryable, and no time
/// is left), even with a breaker in front.
#[tokio::test(start_paused = true)]
async fn a_call_that_runs_out_of_time_is_not_sent_again() {
    static BREAKER: CircuitBreaker = CircuitBreaker::new();
    let (channel, noting) = serve([status(Code::DeadlineExceeded, None)]).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_breaker(&BREAKER))
        .service(channel);
    let error = say(channel, Some(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Code::DeadlineExceeded);
    assert_eq!(noting.echo.calls.load(Ordering::SeqCst), 1);
}
