//! Corpus: two public users of `tower::retry::Policy`, ported to
//! `retry_runtime::tower::RetryPolicy` under tower's own `RetryLayer`, for
//! any cloneable request (not only HTTP). Each is run beside a policy
//! written as its project writes it, against the same scripted service on
//! tokio's paused clock, and both count the same calls.
//!
//! - ZcashFoundation/zebra `zebra-network/src/policies.rs` (`RetryLimit`),
//!   used in `zebrad/src/components/sync.rs` as
//!   `ServiceBuilder::new().retry(RetryLimit::new(BLOCK_DOWNLOAD_RETRY_LIMIT))
//!   .timeout(BLOCK_DOWNLOAD_TIMEOUT).service(peers)`: every error retried,
//!   three times, at once (after a `yield_now`).
//! - vectordotdev/vector `src/sinks/util/retries.rs`
//!   (`FibonacciRetryPolicy<L: RetryLogic>`): a sink's request retried on
//!   the errors its `RetryLogic` accepts, on a timeout, and on a response
//!   the logic says to retry, with Fibonacci waits up to a maximum.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::tower::RetryPolicy;
use retry_runtime::{Classification, Jitter, Policy};
use tower::timeout::error::Elapsed;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

/// What call `n` (from 1) of a request does: how long it takes, and its
/// answer.
type Script<Req, Res> = fn(u32, &Req) -> (Duration, Result<Res, BoxError>);

/// A dependency scripted by call number.
#[derive(Clone)]
struct Scripted<Req, Res> {
    calls: Arc<AtomicU32>,
    script: Script<Req, Res>,
}

impl<Req, Res> Scripted<Req, Res> {
    fn new(script: Script<Req, Res>) -> Self {
        Scripted {
            calls: Arc::new(AtomicU32::new(0)),
            script,
        }
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl<Req, Res: Send + 'static> Service<Req> for Scripted<Req, Res> {
    type Response = Res;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Res, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let (took, answer) = (self.script)(n, &request);
        Box::pin(async move {
            tokio::time::sleep(took).await;
            answer
        })
    }
}

// ---------------------------------------------------------------------------
// zebra: the block downloader's `RetryLimit`.
// ---------------------------------------------------------------------------

/// What zebra's syncer asks its peers for.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlocksByHash(u64);

#[derive(Debug)]
struct NotFound;

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("block not found")
    }
}

impl std::error::Error for NotFound {}

const BLOCK_DOWNLOAD_RETRY_LIMIT: u32 = 3;
const BLOCK_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(15);

/// zebra's `RetryLimit`, as the project writes it: any error is retried,
/// `remaining_tries` times, after letting other tasks run.
#[derive(Clone, Debug)]
struct RetryLimit {
    remaining_tries: u32,
}

impl<Req: Clone, Res, E> tower::retry::Policy<Req, Res, E> for RetryLimit {
    type Future = Pin<Box<dyn Future<Output = ()> + Send>>;

    fn retry(&mut self, _: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        if result.is_err() && self.remaining_tries > 0 {
            self.remaining_tries -= 1;
            Some(Box::pin(tokio::task::yield_now()))
        } else {
            None
        }
    }

    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}

/// The port: the same count (3 retries, 4 attempts), waits of at most a
/// millisecond where zebra yields, every error transient.
static BLOCK_DOWNLOAD: Policy = Policy::new()
    .with_max_attempts(BLOCK_DOWNLOAD_RETRY_LIMIT + 1)
    .with_base(Duration::from_millis(1))
    .with_cap(Duration::from_millis(1));

fn any_error_is_transient<Req, Res>(_: &Req, result: &Result<Res, BoxError>) -> Classification {
    match result {
        Ok(_) => Classification::Done,
        Err(_) => Classification::Transient(None),
    }
}

/// Peer answers: the first call hangs past the timeout, the next two are
/// `notfound`, the fourth has the block.
fn flaky_peers(n: u32, request: &BlocksByHash) -> (Duration, Result<String, BoxError>) {
    match n {
        1 => (Duration::from_secs(3600), Ok("never".to_owned())),
        2 | 3 => (Duration::from_millis(5), Err(NotFound.into())),
        _ => (Duration::from_millis(5), Ok(format!("block {}", request.0))),
    }
}

fn peers_without_the_block(_: u32, _: &BlocksByHash) -> (Duration, Result<String, BoxError>) {
    (Duration::from_millis(5), Err(NotFound.into()))
}

async fn download_block(
    peers: Scripted<BlocksByHash, String>,
    ported: bool,
) -> Result<String, BoxError> {
    let hash = BlocksByHash(419_200);
    if ported {
        let policy = RetryPolicy::new(&BLOCK_DOWNLOAD)
            .named("block_download")
            .with_classifier(any_error_is_transient);
        let mut block_network = ServiceBuilder::new()
            .layer(tower::retry::RetryLayer::new(policy))
            .timeout(BLOCK_DOWNLOAD_TIMEOUT)
            .service(peers);
        block_network.ready().await?.call(hash).await
    } else {
        let mut block_network = ServiceBuilder::new()
            .retry(RetryLimit {
                remaining_tries: BLOCK_DOWNLOAD_RETRY_LIMIT,
            })
            .timeout(BLOCK_DOWNLOAD_TIMEOUT)
            .service(peers);
        block_network.ready().await?.call(hash).await
    }
}

#[tokio::test(start_paused = true)]
async fn zebra_block_download_retry_limit() {
    for script in [flaky_peers, peers_without_the_block] {
        let (original, ported) = (Scripted::new(script), Scripted::new(script));
        let by_original = download_block(original.clone(), false).await;
        let by_port = download_block(ported.clone(), true).await;
        assert_eq!(
            by_port.as_ref().map_err(ToString::to_string),
            by_original.as_ref().map_err(ToString::to_string)
        );
        assert_eq!((ported.calls(), original.calls()), (4, 4));
    }
    // The hung first call was cut off by the timeout and retried.
    let peers = Scripted::new(flaky_peers);
    assert_eq!(download_block(peers, true).await.unwrap(), "block 419200");
}

// ---------------------------------------------------------------------------
// vector: a sink's `FibonacciRetryPolicy<L: RetryLogic>`.
// ---------------------------------------------------------------------------

/// A sink's request: a batch of events, cloned for each attempt.
#[derive(Clone, Debug)]
struct Batch(Vec<&'static str>);

/// A sink's response: an HTTP status.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SinkResponse(u16);

/// A sink's own error: a transport failure, retriable or not.
#[derive(Debug)]
struct HttpError {
    retriable: bool,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http error (retriable: {})", self.retriable)
    }
}

impl std::error::Error for HttpError {}

/// vector's `RetryLogic` for this sink: which errors and which responses
/// to retry.
#[derive(Clone, Copy)]
struct SinkRetryLogic;

impl SinkRetryLogic {
    fn is_retriable_error(self, error: &HttpError) -> bool {
        error.retriable
    }

    fn should_retry_response(self, response: &SinkResponse) -> bool {
        response.0 == 429 || response.0 >= 500
    }

    /// Any error of the service: the logic's own, a timeout, or another
    /// (not retried), as the policy downcasts it.
    fn retry_error(self, error: &BoxError) -> bool {
        match error.downcast_ref::<HttpError>() {
            Some(expected) => self.is_retriable_error(expected),
            None => error.is::<Elapsed>(),
        }
    }
}

/// vector's `FibonacciRetryPolicy` as the project writes it (without its
/// jitter): waits 1, 1, 2, 3, 5, .. times the initial backoff, up to the
/// maximum, `remaining_attempts` retries.
#[derive(Clone)]
struct FibonacciRetryPolicy {
    remaining_attempts: u32,
    previous: Duration,
    current: Duration,
    max_duration: Duration,
    logic: SinkRetryLogic,
}

impl tower::retry::Policy<Batch, SinkResponse, BoxError> for FibonacciRetryPolicy {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _: &mut Batch,
        result: &mut Result<SinkResponse, BoxError>,
    ) -> Option<Self::Future> {
        let retry = match result {
            Ok(response) => self.logic.should_retry_response(response),
            Err(error) => self.logic.retry_error(error),
        };
        if !retry || self.remaining_attempts == 0 {
            return None;
        }
        self.remaining_attempts -= 1;
        let wait = self.current;
        let next = (self.previous + self.current).min(self.max_duration);
        (self.previous, self.current) = (self.current, next);
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Batch) -> Option<Batch> {
        Some(request.clone())
    }
}

const RETRY_ATTEMPTS: u32 = 5;
const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const MAX_DURATION: Duration = Duration::from_secs(30);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The port: the Fibonacci ratio as the multiplier, full jitter (vector's
/// default `JitterMode::Full`), the same count and maximum.
static SINK_POLICY: Policy = Policy::new()
    .with_max_attempts(RETRY_ATTEMPTS + 1)
    .with_base(INITIAL_BACKOFF)
    .with_multiplier(1.618)
    .with_cap(MAX_DURATION)
    .with_jitter(Jitter::Full);

fn sink_classifier(_: &Batch, result: &Result<SinkResponse, BoxError>) -> Classification {
    let logic = SinkRetryLogic;
    let retry = match result {
        Ok(response) => logic.should_retry_response(response),
        Err(error) => logic.retry_error(error),
    };
    if retry {
        Classification::Transient(None)
    } else if result.is_ok() {
        Classification::Done
    } else {
        Classification::Permanent
    }
}

/// A retriable transport error, a timeout, a 503, then a 200; each attempt
/// sends the whole batch again.
fn recovering_endpoint(n: u32, batch: &Batch) -> (Duration, Result<SinkResponse, BoxError>) {
    assert_eq!(batch.0, ["event 1", "event 2"], "attempt {n}");
    match n {
        1 => (
            Duration::from_millis(10),
            Err(HttpError { retriable: true }.into()),
        ),
        2 => (Duration::from_secs(3600), Ok(SinkResponse(200))),
        3 => (Duration::from_millis(10), Ok(SinkResponse(503))),
        _ => (Duration::from_millis(10), Ok(SinkResponse(200))),
    }
}

/// A 400 is the sink's answer: not retried.
fn rejecting_endpoint(_: u32, _: &Batch) -> (Duration, Result<SinkResponse, BoxError>) {
    (Duration::from_millis(10), Ok(SinkResponse(400)))
}

/// A transport error the logic calls permanent: not retried.
fn refusing_endpoint(_: u32, _: &Batch) -> (Duration, Result<SinkResponse, BoxError>) {
    (
        Duration::from_millis(10),
        Err(HttpError { retriable: false }.into()),
    )
}

/// Always 503: retried until the attempts run out, and the last 503
/// returned.
fn overloaded_endpoint(_: u32, _: &Batch) -> (Duration, Result<SinkResponse, BoxError>) {
    (Duration::from_millis(10), Ok(SinkResponse(503)))
}

async fn send_batch(
    endpoint: Scripted<Batch, SinkResponse>,
    ported: bool,
) -> Result<SinkResponse, BoxError> {
    let batch = Batch(vec!["event 1", "event 2"]);
    if ported {
        let policy = RetryPolicy::new(&SINK_POLICY)
            .named("http_sink")
            .with_classifier(sink_classifier);
        let mut service = ServiceBuilder::new()
            .layer(tower::retry::RetryLayer::new(policy))
            .timeout(REQUEST_TIMEOUT)
            .service(endpoint);
        service.ready().await?.call(batch).await
    } else {
        let policy = FibonacciRetryPolicy {
            remaining_attempts: RETRY_ATTEMPTS,
            previous: Duration::ZERO,
            current: INITIAL_BACKOFF,
            max_duration: MAX_DURATION,
            logic: SinkRetryLogic,
        };
        let mut service = ServiceBuilder::new()
            .retry(policy)
            .timeout(REQUEST_TIMEOUT)
            .service(endpoint);
        service.ready().await?.call(batch).await
    }
}

#[tokio::test(start_paused = true)]
async fn vector_sink_fibonacci_retry_policy() {
    let cases: [(Script<Batch, SinkResponse>, u32); 4] = [
        (recovering_endpoint, 4),
        (rejecting_endpoint, 1),
        (refusing_endpoint, 1),
        (overloaded_endpoint, RETRY_ATTEMPTS + 1),
    ];
    for (script, calls) in cases {
        let (original, ported) = (Scripted::new(script), Scripted::new(script));
        let by_original = send_batch(original.clone(), false).await;
        let by_port = send_batch(ported.clone(), true).await;
        assert_eq!(
            by_port.as_ref().map_err(ToString::to_string),
            by_original.as_ref().map_err(ToString::to_string)
        );
        assert_eq!((ported.calls(), original.calls()), (calls, calls));
    }
}

/// vector's waits never pass `max_duration`; the port's never pass `cap`,
/// jitter included: in all, at most the policy's worst case.
#[tokio::test(start_paused = true)]
async fn the_ports_waits_stay_under_its_worst_case() {
    let mut took = Vec::new();
    for ported in [false, true] {
        let start = tokio::time::Instant::now();
        let endpoint = Scripted::new(overloaded_endpoint);
        let _ = send_batch(endpoint, ported).await;
        took.push(start.elapsed());
    }
    let calls = Duration::from_millis(10) * (RETRY_ATTEMPTS + 1);
    // Original: 1 + 1 + 2 + 3 + 5 s of waits.
    assert_eq!(took[0], Duration::from_secs(12) + calls);
    // Port: ceilings 1, 1.618, 2.618, 4.236 and 6.854 s.
    assert!(took[1] <= SINK_POLICY.worst_case_wait() + calls, "{took:?}");
    assert_eq!(SINK_POLICY.worst_case_wait().as_millis(), 16_325);
}
