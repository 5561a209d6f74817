//! The tower `HedgeLayer`: requests safe to repeat are hedged, the first
//! response wins and the other copies are dropped; a request that is not
//! safe to repeat is sent once. Paused clock, exact times.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::Policy;
use tokio::time::{sleep, Instant};
use tower::{Service, ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new().with_max_attempts(3);
const HEDGE: Hedge = Hedge::after(Duration::from_millis(20));

/// Counts copies sent, and copies dropped before they answered.
#[derive(Default)]
struct Counts {
    sent: AtomicU32,
    dropped: AtomicU32,
}

struct DropGuard(Arc<Counts>, bool);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Copy `n` (from 1) answers after `took(n)` ms with `status(n)`.
fn server(
    counts: Arc<Counts>,
    took: fn(u32) -> u64,
    status: fn(u32) -> StatusCode,
) -> impl Service<Request<()>, Response = Response<u32>, Error = std::io::Error, Future = impl Send>
       + Clone {
    tower::service_fn(move |_request: Request<()>| {
        let counts = counts.clone();
        async move {
            let n = counts.sent.fetch_add(1, Ordering::SeqCst) + 1;
            let mut guard = DropGuard(counts, false);
            sleep(Duration::from_millis(took(n))).await;
            guard.1 = true;
            let response = Response::builder()
                .status(status(n))
                .header("retry-after", "1")
                .body(n)
                .unwrap();
            Ok(response)
        }
    })
}

async fn send(
    policy: impl Into<retry_runtime::Shared<Policy>>,
    service: impl Service<Request<()>, Response = Response<u32>, Error = std::io::Error, Future: Send>
        + Clone
        + Send
        + 'static,
    request: Request<()>,
) -> (Response<u32>, u64) {
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(policy, HEDGE))
        .service(service);
    let started = Instant::now();
    let response = client.ready().await.unwrap().call(request).await.unwrap();
    let took = u64::try_from(started.elapsed().as_millis()).unwrap();
    (response, took)
}

#[tokio::test(start_paused = true)]
async fn a_get_is_hedged_and_the_first_response_wins() {
    let counts = Arc::new(Counts::default());
    // Copy 1 hangs; copy 2 (sent at 20 ms) answers at 25 ms.
    let service = server(
        counts.clone(),
        |n| if n == 1 { 1000 } else { 5 },
        |_| StatusCode::OK,
    );
    let (response, took) = send(&POLICY, service, Request::new(())).await;
    assert_eq!((*response.body(), took), (2, 25));
    assert_eq!(counts.sent.load(Ordering::SeqCst), 2);
    assert_eq!(counts.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_post_without_a_key_is_sent_once() {
    let counts = Arc::new(Counts::default());
    let service = server(counts.clone(), |_| 1000, |_| StatusCode::OK);
    let post = Request::builder().method(Method::POST).body(()).unwrap();
    let (response, took) = send(&POLICY, service, post).await;
    assert_eq!((*response.body(), took), (1, 1000));
    assert_eq!(counts.sent.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_post_with_a_key_is_hedged() {
    let counts = Arc::new(Counts::default());
    let service = server(
        counts.clone(),
        |n| if n == 1 { 1000 } else { 5 },
        |_| StatusCode::OK,
    );
    let post = Request::builder()
        .method(Method::POST)
        .header("idempotency-key", "7c0ffee")
        .body(())
        .unwrap();
    let (response, took) = send(&POLICY, service, post).await;
    assert_eq!((*response.body(), took), (2, 25));
}

#[tokio::test(start_paused = true)]
async fn a_503_starts_the_next_copy_after_its_retry_after() {
    let counts = Arc::new(Counts::default());
    // Copy 1 answers 503 with Retry-After: 1 at 5 ms; copy 2 follows the
    // hint (1 s, plus up to a tenth), not the 20 ms hedge delay.
    let service = server(
        counts.clone(),
        |_| 5,
        |n| {
            if n == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        },
    );
    let (response, took) = send(&POLICY, service, Request::new(())).await;
    assert_eq!(*response.body(), 2);
    assert!((1010..=1111).contains(&took), "{took}");
    assert_eq!(counts.sent.load(Ordering::SeqCst), 2);
}

/// The policy from an `Arc` (built at run time) hedges as a `static` does.
#[tokio::test(start_paused = true)]
async fn an_arc_policy_hedges_the_same() {
    let counts = Arc::new(Counts::default());
    let service = server(
        counts.clone(),
        |n| if n == 1 { 1000 } else { 5 },
        |_| StatusCode::OK,
    );
    let policy = Arc::new(Policy::new().with_max_attempts(3));
    let (response, took) = send(policy, service, Request::new(())).await;
    assert_eq!((*response.body(), took), (2, 25));
    assert_eq!(counts.sent.load(Ordering::SeqCst), 2);
}

/// A service that counts its clones.
struct Cloned(Arc<AtomicU32>);

impl Clone for Cloned {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, Ordering::SeqCst);
        Cloned(Arc::clone(&self.0))
    }
}

impl Service<Request<()>> for Cloned {
    type Response = Response<u32>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Response<u32>, std::io::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Ok(Response::new(1)))
    }
}

/// The first copy is sent by the service polled ready; the clone left
/// behind for the next request is the only one a request answered at once
/// needs (a clone of a tonic `Channel` or a hyper client is not free).
#[tokio::test(start_paused = true)]
async fn a_request_answered_by_its_first_copy_clones_the_service_once() {
    let clones = Arc::new(AtomicU32::new(0));
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(&POLICY, HEDGE))
        .service(Cloned(Arc::clone(&clones)));
    let before = clones.load(Ordering::SeqCst);
    let response = client
        .ready()
        .await
        .unwrap()
        .call(Request::new(()))
        .await
        .unwrap();
    assert_eq!(*response.body(), 1);
    assert_eq!(clones.load(Ordering::SeqCst) - before, 1);
}

/// With `tower::timeout` inside the layer (its per-attempt timeout), the
/// service fails with tower's `BoxError`: `boxed_errors()` keeps the default
/// classifier's rules for it. A copy cut off by the timeout is a transient
/// failure, so the next copy starts at once; a POST without a key is still
/// sent once, as the default classifier has it.
#[tokio::test(start_paused = true)]
async fn the_layer_over_a_tower_timeout_keeps_the_default_rules() {
    let counts = Arc::new(Counts::default());
    // Copy 1 hangs past the 30 ms timeout; copy 2 answers in 5 ms.
    let inner = server(
        Arc::clone(&counts),
        |n| if n == 1 { 1000 } else { 5 },
        |_| StatusCode::OK,
    );
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(&POLICY, Hedge::after(Duration::from_millis(100))).boxed_errors())
        .timeout(Duration::from_millis(30))
        .service(inner);
    let started = Instant::now();
    let get = Request::get("http://upstream/").body(()).unwrap();
    let response = client.ready().await.unwrap().call(get).await.unwrap();
    assert_eq!(*response.body(), 2, "the second copy answered");
    assert_eq!(started.elapsed(), Duration::from_millis(35));

    let counts = Arc::new(Counts::default());
    let inner = server(Arc::clone(&counts), |_| 1000, |_| StatusCode::OK);
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(&POLICY, Hedge::after(Duration::from_millis(10))).boxed_errors())
        .timeout(Duration::from_millis(30))
        .service(inner);
    let post = Request::post("http://upstream/").body(()).unwrap();
    let answer = client.ready().await.unwrap().call(post).await;
    let error = answer.expect_err("cut off, and not sent again");
    assert!(error.is::<tower::timeout::error::Elapsed>(), "{error}");
    assert_eq!(counts.sent.load(Ordering::SeqCst), 1);
}

/// `with_classifier` hedges every request; `boxed_errors` after it keeps
/// that (it changes how errors are judged, not which requests are hedged):
/// a POST without a key is hedged.
#[tokio::test(start_paused = true)]
async fn boxed_errors_after_with_classifier_still_hedges_every_request() {
    let counts = Arc::new(Counts::default());
    let inner = server(
        Arc::clone(&counts),
        |n| if n == 1 { 1000 } else { 5 },
        |_| StatusCode::OK,
    );
    let layer = HedgeLayer::new(&POLICY, HEDGE)
        .with_classifier(retry_runtime::tower::HttpClassifier::default())
        .boxed_errors();
    let mut client = ServiceBuilder::new()
        .layer(layer)
        .timeout(Duration::from_secs(10))
        .service(inner);
    let started = Instant::now();
    let post = Request::post("http://upstream/").body(()).unwrap();
    let response = client.ready().await.unwrap().call(post).await.unwrap();
    assert_eq!(*response.body(), 2, "the hedge answered");
    assert_eq!(started.elapsed(), Duration::from_millis(25));
    assert_eq!(counts.sent.load(Ordering::SeqCst), 2);
}
