//! The nesting rule (DESIGN §4.11) where the inner retries are not another
//! `#[retry]` function: calls retried by the tower layer, and hedged calls.
//! An inner call that gave up fails the enclosing attempt without a retry
//! when its error is propagated, and a give-up the body handled leaves the
//! body's own failure to be retried.

#[path = "support/servers.rs"]
mod servers;

#[path = "support/counting.rs"]
mod counting;
use counting::{calls, count, own_call};

use std::sync::atomic::AtomicU32;
use std::sync::Arc;
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
use retry_runtime::{retry, Policy};
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
