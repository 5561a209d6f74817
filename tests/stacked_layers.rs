//! Layers stacked the way platform teams stack them, against real servers
//! on 127.0.0.1: `RetryLayer` over `HedgeLayer` (and the reverse) over a
//! tonic channel with the call's own `grpc-timeout`; a per-host breaker of
//! `RetryLayer::per_authority` that a `CircuitBreakerLayer` below names
//! too; a `RetryLayer` called from `#[retry]` functions (the nesting rule,
//! DESIGN §4.11); and the metrics of stacked layers. Clocks are paused:
//! nothing here reads the wall clock.

#[path = "support/grpc.rs"]
mod grpc_server;

#[path = "support/servers.rs"]
mod servers;

#[path = "support/hosts.rs"]
mod hosts;

#[path = "support/counting.rs"]
mod counting;
use counting::{calls, count};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use grpc_server::status;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::tower::{BreakerError, CircuitBreakerLayer, HttpClassifier, RetryLayer};
use retry_runtime::{last_call, retry, CircuitBreaker, CircuitState, Jitter, Nested, Policy, Stop};
use tokio::time::Instant;
use tonic::{Code, Status};
use tower::{Service, ServiceBuilder, ServiceExt};

static RETRY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);
/// `RETRY` over a layer that retries too, retrying what it gave up on
/// (DESIGN §4.11's opt-out): the retry layer's attempts run in its attempt
/// context, so under `RETRY` a hedge layer's give-up below is not retried.
static RETRY_AGAIN: Policy = RETRY.with_nested(Nested::Retry);
static HEDGE: Policy = Policy::new().with_max_attempts(2);
const AFTER: Hedge = Hedge::after(Duration::from_millis(20));

fn unavailable(times: usize, pushback: Option<&'static str>) -> Vec<Status> {
    (0..times)
        .map(|_| status(Code::Unavailable, pushback))
        .collect()
}

async fn say<T>(channel: T, timeout: Duration) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let mut request = tonic::Request::new(Bytes::from_static(b"hello"));
    request.set_timeout(timeout);
    grpc_server::say(channel, request).await
}

fn hedging() -> HedgeLayer<HttpClassifier> {
    HedgeLayer::new(&HEDGE, AFTER).with_classifier(HttpClassifier::default())
}

// (1) Retry over hedge, and hedge over retry, over a tonic channel.

/// A server that is down: the retry layer's 3 attempts of the hedge
/// layer's 2 copies are at most 6 calls, the call ends well inside its
/// `grpc-timeout`, and the caller gets the server's own UNAVAILABLE.
#[tokio::test(start_paused = true)]
async fn retry_over_hedge_stays_within_both_maxes_and_returns_the_last_status() {
    let (channel, calls) = grpc_server::serve(unavailable(20, None)).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&RETRY))
        .layer(hedging())
        .service(channel);
    let started = Instant::now();
    let error = say(channel, Duration::from_secs(1)).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(error.code(), Code::Unavailable, "{error:?}");
    assert_eq!(error.message(), "scripted");
    let made = calls.load(Ordering::SeqCst);
    assert!((2..=6).contains(&made), "{made} calls");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn hedge_over_retry_stays_within_both_maxes_and_returns_the_last_status() {
    let (channel, calls) = grpc_server::serve(unavailable(20, None)).await;
    let channel = ServiceBuilder::new()
        .layer(hedging())
        .layer(RetryLayer::new(&RETRY))
        .service(channel);
    let started = Instant::now();
    let error = say(channel, Duration::from_secs(1)).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(error.code(), Code::Unavailable, "{error:?}");
    assert_eq!(error.message(), "scripted");
    let made = calls.load(Ordering::SeqCst);
    assert!((2..=6).contains(&made), "{made} calls");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// Told to come back in 300 ms each time, a call with 500 ms to live never
/// runs past them, whichever layer is outside; the last status is the
/// server's, not a local DEADLINE_EXCEEDED or CANCELLED.
#[tokio::test(start_paused = true)]
async fn the_calls_timeout_bounds_both_orders_of_the_stack() {
    for retry_outside in [true, false] {
        let (channel, calls) = grpc_server::serve(unavailable(20, Some("300"))).await;
        let timeout = Duration::from_millis(500);
        let started = Instant::now();
        let result = if retry_outside {
            let channel = ServiceBuilder::new()
                .layer(RetryLayer::new(&RETRY))
                .layer(hedging())
                .service(channel);
            say(channel, timeout).await
        } else {
            let channel = ServiceBuilder::new()
                .layer(hedging())
                .layer(RetryLayer::new(&RETRY))
                .service(channel);
            say(channel, timeout).await
        };
        let took = started.elapsed();
        let error = result.unwrap_err();
        assert_eq!(
            error.code(),
            Code::Unavailable,
            "retry outside: {retry_outside}, {error:?}"
        );
        assert_eq!(
            error.message(),
            "scripted",
            "retry outside: {retry_outside}"
        );
        let made = calls.load(Ordering::SeqCst);
        assert!(
            (1..=6).contains(&made),
            "retry outside: {retry_outside}: {made} calls"
        );
        assert!(took < timeout, "retry outside: {retry_outside}: {took:?}");
    }
}

/// A server that fails twice then answers: whichever layer is outside
/// (the retry layer retrying what the hedge layer gave up on), the answer
/// comes back, in at most 3 calls.
#[tokio::test(start_paused = true)]
async fn a_recovering_server_answers_through_both_orders() {
    for retry_outside in [true, false] {
        let (channel, calls) = grpc_server::serve(unavailable(2, None)).await;
        let timeout = Duration::from_secs(1);
        let result = if retry_outside {
            let channel = ServiceBuilder::new()
                .layer(RetryLayer::new(&RETRY_AGAIN))
                .layer(hedging())
                .service(channel);
            say(channel, timeout).await
        } else {
            let channel = ServiceBuilder::new()
                .layer(hedging())
                .layer(RetryLayer::new(&RETRY))
                .service(channel);
            say(channel, timeout).await
        };
        assert_eq!(result.unwrap(), Bytes::from_static(b"hello"));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "retry outside: {retry_outside}"
        );
    }
}

/// The same server under the retry layer's default `nested = once`: the
/// hedge layer's 2 copies fail and it gives up, which fails the retry
/// layer's attempt without a retry (DESIGN §4.11): 2 calls, not 3.
#[tokio::test(start_paused = true)]
async fn retry_over_hedge_returns_the_hedge_layers_give_up_at_once() {
    let (channel, calls) = grpc_server::serve(unavailable(2, None)).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(&RETRY))
        .layer(hedging())
        .service(channel);
    let error = say(channel, Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(error.code(), Code::Unavailable, "{error:?}");
    assert_eq!(error.message(), "scripted");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Nested, 1));
}

// (2) One breaker named by two layers of the same stack.

static ONE_ATTEMPT: Policy = Policy::new().with_max_attempts(1);

/// Two failures in a row open it; a minute open.
const fn two_in_a_row() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0)
}

fn get_request(host: &hosts::Host) -> http::Request<Full<Bytes>> {
    http::Request::get(host.server.url("/"))
        .body(Full::default())
        .unwrap()
}

fn hyper_client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>()
}

/// `with_breaker(&B)` over `CircuitBreakerLayer::new(&B)`: one failed
/// request is one failure, so one of two in a row does not open it.
#[tokio::test(start_paused = true)]
async fn one_breaker_on_the_retry_layer_and_a_breaker_layer_counts_a_failure_once() {
    static SHARED: CircuitBreaker = two_in_a_row();
    let host = hosts::Host::start(false).await;
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).with_breaker(&SHARED))
        .layer(CircuitBreakerLayer::new(&SHARED))
        .service(hyper_client());
    let response = service
        .ready()
        .await
        .unwrap()
        .call(get_request(&host))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(host.hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        SHARED.state(),
        CircuitState::Closed,
        "one failure, counted twice"
    );
}

/// The same with the per-host breaker of `per_authority`, which the
/// breaker layer below names too (a registry's breaker lives in an `Arc`;
/// the layer takes a `&'static`, so the test keeps the entry for good).
#[tokio::test(start_paused = true)]
async fn a_per_host_breaker_named_by_a_breaker_layer_too_counts_a_failure_once() {
    let host = hosts::Host::start(false).await;
    let registry = Arc::new(Registry::new(16, |_host: &str| {
        Upstream::new().with_breaker(two_in_a_row())
    }));
    let entry: &'static Arc<Upstream> = Box::leak(Box::new(registry.get(&host.authority())));
    let breaker: &'static CircuitBreaker = entry.breaker().unwrap();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&registry)))
        .layer(CircuitBreakerLayer::new(breaker))
        .service(hyper_client());
    let response = service
        .ready()
        .await
        .unwrap()
        .call(get_request(&host))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(host.hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "one failure, counted twice"
    );
    // The second failed request opens it, and the third is refused.
    let second = service
        .ready()
        .await
        .unwrap()
        .call(get_request(&host))
        .await;
    assert_eq!(second.unwrap().status(), 503);
    assert_eq!(breaker.state(), CircuitState::Open);
    let third = service
        .ready()
        .await
        .unwrap()
        .call(get_request(&host))
        .await;
    assert!(matches!(third, Err(BreakerError::Open(_))), "{third:?}");
    assert_eq!(host.hits.load(Ordering::SeqCst), 2);
}

// (3) A retry layer called from `#[retry]` functions: the nesting rule.

#[derive(Debug, Clone, PartialEq, Default)]
enum Error {
    #[default]
    Down,
}

async fn down_server() -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&hits);
    let router = Router::new().route(
        "/down",
        get(move || async move {
            count(&counted);
            StatusCode::SERVICE_UNAVAILABLE
        }),
    );
    (servers::serve(router, 0).await, hits)
}

/// The bottom: 3 attempts through the tower layer.
async fn through_layer(server: &servers::Server) -> Result<(), Error> {
    let request = http::Request::get(server.url("/down"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = ServiceBuilder::new()
        .layer(RetryLayer::new(&RETRY))
        .service(hyper_client())
        .oneshot(request)
        .await
        .map_err(|_| Error::Down)?;
    if response.status() == StatusCode::OK {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

#[retry(max = 3, base = "10ms", nested = "once")]
async fn middle(server: &servers::Server, attempts: &AtomicU32) -> Result<(), Error> {
    count(attempts);
    through_layer(server).await
}

#[retry(max = 3, base = "10ms", nested = "once")]
async fn top(server: &servers::Server, outer: &AtomicU32, inner: &AtomicU32) -> Result<(), Error> {
    count(outer);
    middle(server, inner).await
}

#[tokio::test(start_paused = true)]
async fn three_layers_of_three_attempts_cost_three_calls_across_the_tower_layer() {
    let (server, hits) = down_server().await;
    let (outer, inner) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(top(&server, &outer, &inner).await, Err(Error::Down));
    assert_eq!(
        (calls(&outer), calls(&inner), calls(&hits)),
        (1, 1, 3),
        "top attempts, middle attempts, hits"
    );
}

// (4) Metrics: each attempt counted once across stacked layers.

type Recorded = Vec<(
    metrics_util::CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

fn counter(recorded: &Recorded, name: &str, labels: &[(&str, &str)]) -> u64 {
    let mut wanted: Vec<(&str, &str)> = labels.to_vec();
    wanted.sort_unstable();
    recorded
        .iter()
        .filter(|(key, _, _, _)| key.kind() == MetricKind::Counter && key.key().name() == name)
        .filter(|(key, _, _, _)| {
            let mut found: Vec<(&str, &str)> = key
                .key()
                .labels()
                .map(|label| (label.key(), label.value()))
                .collect();
            found.sort_unstable();
            wanted.iter().all(|pair| found.contains(pair))
        })
        .map(|(_, _, _, value)| match value {
            DebugValue::Counter(count) => *count,
            other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

const CALLS: &str = "retry_runtime_calls_total";
const RETRIES: &str = "retry_runtime_retries_total";

/// Retry over hedge (the retry layer retrying what the hedge layer gave up
/// on), a server that fails twice then answers. Each layer's
/// calls plus its retries are the attempts it made: the hedge layer's are
/// the server's calls, the retry layer's are the hedge layer's calls.
#[test]
fn metrics_count_each_attempt_once_across_retry_over_hedge() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let server_calls = metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let (channel, calls) = grpc_server::serve(unavailable(2, None)).await;
            let channel = ServiceBuilder::new()
                .layer(RetryLayer::new(&RETRY_AGAIN).named("stack.retry"))
                .layer(hedging().named("stack.hedge"))
                .service(channel);
            let answer = say(channel, Duration::from_secs(5)).await.unwrap();
            assert_eq!(answer, Bytes::from_static(b"hello"));
            calls.load(Ordering::SeqCst)
        })
    });
    let recorded: Recorded = snapshotter.snapshot().into_vec();
    let retry_calls = counter(&recorded, CALLS, &[("function", "stack.retry")]);
    let retry_retries = counter(&recorded, RETRIES, &[("function", "stack.retry")]);
    let hedge_calls = counter(&recorded, CALLS, &[("function", "stack.hedge")]);
    let hedge_retries = counter(&recorded, RETRIES, &[("function", "stack.hedge")]);
    assert_eq!(server_calls, 3);
    assert_eq!(retry_calls, 1, "{recorded:?}");
    assert_eq!(
        counter(
            &recorded,
            CALLS,
            &[("function", "stack.retry"), ("outcome", "success")]
        ),
        1
    );
    assert_eq!(
        hedge_calls + hedge_retries,
        u64::from(server_calls),
        "hedge calls {hedge_calls}, hedge retries {hedge_retries}"
    );
    assert_eq!(
        retry_calls + retry_retries,
        hedge_calls,
        "retry calls {retry_calls}, retry retries {retry_retries}"
    );
}

/// Hedge over retry, the same server: the same identities, the other way up.
#[test]
fn metrics_count_each_attempt_once_across_hedge_over_retry() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let server_calls = metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let (channel, calls) = grpc_server::serve(unavailable(2, None)).await;
            let channel = ServiceBuilder::new()
                .layer(hedging().named("stack.hedge"))
                .layer(RetryLayer::new(&RETRY).named("stack.retry"))
                .service(channel);
            let answer = say(channel, Duration::from_secs(5)).await.unwrap();
            assert_eq!(answer, Bytes::from_static(b"hello"));
            calls.load(Ordering::SeqCst)
        })
    });
    let recorded: Recorded = snapshotter.snapshot().into_vec();
    let retry_calls = counter(&recorded, CALLS, &[("function", "stack.retry")]);
    let retry_retries = counter(&recorded, RETRIES, &[("function", "stack.retry")]);
    let hedge_calls = counter(&recorded, CALLS, &[("function", "stack.hedge")]);
    let hedge_retries = counter(&recorded, RETRIES, &[("function", "stack.hedge")]);
    assert_eq!(server_calls, 3);
    assert_eq!(hedge_calls, 1, "{recorded:?}");
    // Every retry-layer call the hedge started ended, or was dropped when
    // another copy won; those that ended were counted once each.
    assert!(
        retry_calls + retry_retries <= u64::from(server_calls),
        "retry calls {retry_calls}, retry retries {retry_retries}"
    );
    assert!(
        hedge_calls + hedge_retries >= retry_calls,
        "hedge calls {hedge_calls}, hedge retries {hedge_retries}, retry calls {retry_calls}"
    );
}
