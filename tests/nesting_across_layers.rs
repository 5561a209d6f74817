//! The nesting rule (DESIGN §4.11) where the inner retries are not another
//! `#[retry]` function: calls retried by the tower layer, and hedged calls.
//! An inner call that gave up fails the enclosing attempt without a retry
//! when its error is propagated, and a give-up the body handled leaves the
//! body's own failure to be retried. And the other way round: a retried
//! call inside a tower layer's attempt sees that attempt (its number and
//! the layer's deadline), as it would inside a retried function's.

#[path = "support/servers.rs"]
mod servers;

#[path = "support/counting.rs"]
mod counting;
use counting::{calls, count, own_call};

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use futures_util::future::join;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{current_attempt, last_call, retry, Jitter, Policy, Stop};
use tower::{ServiceBuilder, ServiceExt};

#[derive(Debug, Clone, PartialEq, Default)]
enum Error {
    #[default]
    Down,
}

static HTTP_POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10));

/// A server with `/down`, always 503, and `/slow`, 200 after a second; it
/// counts the hits on each.
async fn server() -> (servers::Server, Arc<AtomicU32>, Arc<AtomicU32>) {
    let (down, slow) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (down_hits, slow_hits) = (Arc::clone(&down), Arc::clone(&slow));
    let router = Router::new()
        .route(
            "/down",
            get(move || async move {
                count(&down_hits);
                StatusCode::SERVICE_UNAVAILABLE
            }),
        )
        .route(
            "/slow",
            get(move || async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                count(&slow_hits);
                StatusCode::OK
            }),
        );
    (servers::serve(router, 0).await, down, slow)
}

/// Both items through the tower layer, side by side; `?` on each.
#[retry(max = 3, base = "10ms")]
async fn fan_out(server: &servers::Server, attempts: &AtomicU32) -> Result<(), Error> {
    count(attempts);
    let client = || {
        ServiceBuilder::new()
            .layer(RetryLayer::new(&HTTP_POLICY))
            .service(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>())
    };
    let get = |path| {
        http::Request::get(server.url(path))
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let (down, slow) = join(
        client().oneshot(get("/down")),
        client().oneshot(get("/slow")),
    )
    .await;
    slow.map_err(|_| Error::Down)?;
    let down = down.map_err(|_| Error::Down)?;
    if down.status() != StatusCode::OK {
        // The item the layer gave up on fails the attempt.
        return Err(Error::Down);
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_fan_out_of_tower_layer_calls_whose_item_gave_up_is_not_re_sent() {
    let (server, down, slow) = server().await;
    let attempts = AtomicU32::new(0);
    assert_eq!(fan_out(&server, &attempts).await, Err(Error::Down));
    // The layer retried `/down` three times and gave up while `/slow` was
    // still in flight: the batch fails with that error, and is not re-sent.
    assert_eq!(
        (calls(&attempts), calls(&down), calls(&slow)),
        (1, 3, 1),
        "outer attempts, hits on /down, hits on /slow"
    );
}

#[retry(max = 2, base = "10ms", hedge = "5ms")]
async fn hedged_profile(calls: &AtomicU32) -> Result<String, Error> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms")]
async fn handler_with_hedged_profile(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = hedged_profile(inner).await.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_handled_hedged_give_up_leaves_the_own_failure_to_the_outer() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        handler_with_hedged_profile(&inner, &own).await,
        Err(Error::Down)
    );
    // As with an unhedged inner call: three handler attempts, each with the
    // two attempts of the hedged call.
    assert_eq!((calls(&own), calls(&inner)), (3, 6));
}

/// The layer's policy: 5 attempts, but a deadline 250 ms after the call
/// starts.
static LAYER_WITH_A_DEADLINE: Policy = Policy::new()
    .with_max_attempts(5)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None)
    .with_deadline(Duration::from_millis(250));

/// Fails every time; on its own, 10 attempts over 51 s.
#[retry(max = 10, base = "100ms", jitter = "none")]
async fn inner_lookup(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn a_retried_call_inside_a_tower_layer_attempt_sees_it_and_its_deadline() {
    let start = tokio::time::Instant::now();
    let inner = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (lookups, contexts) = (Arc::clone(&inner), Arc::clone(&seen));
    let service = tower::service_fn(move |_: http::Request<String>| {
        let (lookups, contexts) = (Arc::clone(&lookups), Arc::clone(&contexts));
        async move {
            let context = current_attempt().map(|a| (a.attempt(), a.deadline()));
            contexts.lock().unwrap().push(context);
            let status = match inner_lookup(&lookups).await {
                Ok(()) => StatusCode::OK,
                Err(Error::Down) => StatusCode::SERVICE_UNAVAILABLE,
            };
            let response = http::Response::builder().status(status).body(String::new());
            Ok::<_, std::convert::Infallible>(response.unwrap())
        }
    });
    let response = ServiceBuilder::new()
        .layer(RetryLayer::new(&LAYER_WITH_A_DEADLINE))
        .service(service)
        .oneshot(http::Request::get("/").body(String::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    // The attempt showed its number and the layer's deadline.
    let deadline = start + Duration::from_millis(250);
    assert_eq!(*seen.lock().unwrap(), [Some((1, Some(deadline)))]);
    // The inner call stopped at the layer's deadline (attempts at 0 and
    // 100 ms; the next, at 300 ms, would pass it) ...
    assert_eq!(calls(&inner), 2, "inner calls");
    assert!(start.elapsed() <= Duration::from_millis(250));
    // ... and its give-up failed the layer's attempt without a retry.
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Nested, 1));
}
