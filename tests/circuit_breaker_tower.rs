//! The tower layer with a breaker counts what happened: the call whose
//! failure opened the circuit stops for the reason `open` (not
//! `not_retryable`), and so does every call the breaker refuses; and
//! `BreakerError` says its message once in a report that walks the chain.
//! Alone in its test binary: the counters are process-wide.

#[path = "support/counts.rs"]
mod counts;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{CircuitBreaker, CircuitState, Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

static BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);
static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

#[tokio::test(start_paused = true)]
async fn the_opening_call_and_each_refused_call_stop_for_the_reason_open() {
    let hits = Arc::new(AtomicU32::new(0));
    let down = {
        let hits = Arc::clone(&hits);
        tower::service_fn(move |_: http::Request<String>| {
            hits.fetch_add(1, Ordering::SeqCst);
            async {
                Ok::<_, Infallible>(
                    http::Response::builder()
                        .status(503)
                        .body(String::new())
                        .unwrap(),
                )
            }
        })
    };
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_breaker(&BREAKER))
        .service(down);
    let request = || {
        http::Request::get("http://payments/")
            .body(String::new())
            .unwrap()
    };
    let counting = counts::Counting::on_this_thread();
    let before = counting.now();

    // Two failed attempts open the circuit; the third is not sent, and the
    // call stops because the circuit is open.
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(BREAKER.state(), CircuitState::Open);
    let after = counting.now();
    assert_eq!(after.open - before.open, 1, "the opening call");
    assert_eq!(after.not_retryable, before.not_retryable);

    for _ in 0..5 {
        let refused = service.ready().await.unwrap().call(request()).await;
        assert!(matches!(refused, Err(BreakerError::Open(_))), "{refused:?}");
    }
    let after = counting.now();
    assert_eq!(after.open - before.open, 6, "and five refused calls");
    assert_eq!(after.not_retryable, before.not_retryable);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[derive(Debug)]
struct Upstream;

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("upstream reset the connection")
    }
}

impl std::error::Error for Upstream {}

#[test]
fn a_breaker_error_report_says_the_service_error_once() {
    let error = anyhow::Error::new(BreakerError::Service(Upstream));
    assert_eq!(
        format!("{error:#}"),
        "the service behind the circuit breaker failed: upstream reset the connection"
    );
    let open: BreakerError<Upstream> = BreakerError::Open(retry_runtime::CircuitOpen);
    assert_eq!(
        format!("{:#}", anyhow::Error::new(open)),
        "the circuit is open: the call was refused without being made"
    );
}
