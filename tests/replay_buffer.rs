//! What a layer keeps for replay across all its calls at once is bounded
//! (gRFC A6's per-channel limit), as each call's is (`with_max_body`): many
//! concurrent calls with large streaming bodies hold at most
//! `with_max_buffered` bytes (16 MiB by default) between them. A call whose
//! recording would pass it is sent once and not retried (reason
//! `not_retryable`, as a body over the per-call limit), and what a call held
//! is given back when it ends, so the next calls have it.
//!
//! Against an axum server on 127.0.0.1 that reads each body whole and holds
//! every answer (503) until all the calls of a wave have arrived: every
//! recording is then made before any call ends. Each body is one frame, so a
//! recording takes its room whole or not at all, and exactly as many calls
//! as the limit holds bodies are retried.

#[path = "support/servers.rs"]
mod servers;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::any;
use axum::Router;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use retry_runtime::tower::RetryLayer;
use retry_runtime::Policy;
use tokio::sync::Barrier;
use tower::{Layer, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(2)
    .with_base(Duration::from_millis(10));

/// Calls at once, and the body each sends (the per-call limit's default).
const CALLS: usize = 40;
const BODY: usize = 64 * 1024;

/// Requests seen, by the call they belong to (`x-call`).
type Hits = Arc<Mutex<HashMap<String, u32>>>;

#[derive(Clone)]
struct Wave {
    hits: Hits,
    arrived: Arc<AtomicUsize>,
    all_in: Arc<Barrier>,
}

/// A server answering 503 to each request, after reading its body; the
/// first `CALLS` requests are answered together, once all have arrived.
async fn holding_server() -> (servers::Server, Hits) {
    let wave = Wave {
        hits: Hits::default(),
        arrived: Arc::new(AtomicUsize::new(0)),
        all_in: Arc::new(Barrier::new(CALLS)),
    };
    let hits = Arc::clone(&wave.hits);
    let router = Router::new()
        .route(
            "/",
            any(
                |State(wave): State<Wave>, headers: HeaderMap, body: Bytes| async move {
                    assert_eq!(body.len(), BODY, "each body arrives whole");
                    let call = headers["x-call"].to_str().unwrap().to_owned();
                    *wave.hits.lock().unwrap().entry(call).or_default() += 1;
                    if wave.arrived.fetch_add(1, Ordering::SeqCst) < CALLS {
                        wave.all_in.wait().await;
                    }
                    StatusCode::SERVICE_UNAVAILABLE
                },
            ),
        )
        .with_state(wave);
    (servers::serve(router, 0).await, hits)
}

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A PUT of `BODY` bytes in one frame, streamed: the layer records it.
fn put(url: &str, call: usize) -> http::Request<Body> {
    let body = Full::new(Bytes::from(vec![b'x'; BODY]))
        .map_err(|never| match never {})
        .boxed_unsync();
    http::Request::put(url)
        .header("x-call", call.to_string())
        .body(body)
        .unwrap()
}

/// `CALLS` calls at once through services `layer` makes (two of them: what
/// one layer keeps is shared by its services), against a new server: how
/// many were retried and how many sent once.
async fn wave(layer: &RetryLayer) -> (usize, usize) {
    let (server, hits) = holding_server().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Body>();
    let services = [layer.layer(client.clone()), layer.layer(client)];
    let calls = (0..CALLS).map(|call| {
        let service = services[call % 2].clone();
        service.oneshot(put(&server.url("/"), call))
    });
    for response in futures_util::future::join_all(calls).await {
        assert_eq!(response.unwrap().status(), 503);
    }
    let hits = hits.lock().unwrap();
    assert_eq!(hits.len(), CALLS);
    let retried = hits.values().filter(|&&hits| hits == 2).count();
    let once = hits.values().filter(|&&hits| hits == 1).count();
    (retried, once)
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_keep_no_more_than_the_layer_allows() {
    // 40 bodies of 64 KiB are 2.5 MiB, within the default 16 MiB: every
    // call is retried.
    let unbounded = RetryLayer::new(&POLICY);
    assert_eq!(wave(&unbounded).await, (CALLS, 0));

    // Room for 16 of them: 16 calls are retried, the others sent once.
    let bounded = RetryLayer::new(&POLICY).with_max_buffered(16 * BODY);
    assert_eq!(wave(&bounded).await, (16, CALLS - 16));
    // What the first wave held was given back as its calls ended.
    assert_eq!(wave(&bounded).await, (16, CALLS - 16));
}
