//! Which registry entry (and so which breaker, budget and metrics series) a
//! request of the tower layer's `per_authority` uses: its `host:port`, as
//! docs/observability.md gives it (`breaker="payments.internal:443"`) and
//! as the reqwest middleware's `per_authority` keys it. The port a URI
//! leaves out is its scheme's default, the host is compared without regard
//! to case, and credentials in the URI (`user:secret@`) are no part of the
//! key, so they never reach a metrics label or a `tracing` field. A layer
//! and a middleware sharing one registry share one breaker per host.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{CircuitBreaker, CircuitState, Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

static ONE_ATTEMPT: Policy = Policy::new()
    .with_max_attempts(1)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

fn registry() -> Arc<Registry> {
    Arc::new(Registry::new(64, |_host: &str| {
        Upstream::new().with_breaker(
            CircuitBreaker::new()
                .with_consecutive_failures(2)
                .with_open_for(Duration::from_secs(60))
                .with_jitter(0.0),
        )
    }))
}

/// A service that answers 503 to every request, counting them; no socket.
fn down(
    hits: &Arc<AtomicU32>,
) -> impl Service<
    http::Request<String>,
    Response = http::Response<()>,
    Error = std::io::Error,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    let hits = Arc::clone(hits);
    tower::service_fn(move |_request: http::Request<String>| {
        hits.fetch_add(1, Ordering::SeqCst);
        async {
            Ok::<_, std::io::Error>(
                http::Response::builder()
                    .status(StatusCode::SERVICE_UNAVAILABLE)
                    .body(())
                    .unwrap(),
            )
        }
    })
}

/// `https://payments.internal/` and `https://payments.internal:443/` are
/// one upstream: one entry, named `payments.internal:443`, whose circuit
/// two failures (one through each spelling) open.
#[tokio::test(start_paused = true)]
async fn a_uri_without_a_port_is_keyed_by_its_schemes_default_port() {
    let upstreams = registry();
    let hits = Arc::new(AtomicU32::new(0));
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .service(down(&hits));
    for url in [
        "https://payments.internal/charge",
        "https://payments.internal:443/refund",
    ] {
        let request = http::Request::get(url).body(String::new()).unwrap();
        let response = service.ready().await.unwrap().call(request).await.unwrap();
        assert_eq!(response.status(), 503);
    }
    assert_eq!(upstreams.len(), 1, "one host, one entry");
    let entry = upstreams.get("payments.internal:443");
    assert_eq!(entry.breaker().unwrap().name(), "payments.internal:443");
    assert_eq!(entry.breaker().unwrap().state(), CircuitState::Open);
    let third = http::Request::get("https://PAYMENTS.internal/")
        .body(String::new())
        .unwrap();
    let refused = service.ready().await.unwrap().call(third).await;
    assert!(matches!(refused, Err(BreakerError::Open(_))), "{refused:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(upstreams.len(), 1);
}

/// Credentials in the URI are not part of the key: the breaker's name (its
/// metrics label and `tracing` field) does not carry the password.
#[tokio::test(start_paused = true)]
async fn credentials_in_the_uri_are_no_part_of_the_key() {
    let upstreams = registry();
    let hits = Arc::new(AtomicU32::new(0));
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .service(down(&hits));
    let request = http::Request::get("http://deploy:s3cret@ci.internal:8080/hook")
        .body(String::new())
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(upstreams.len(), 1);
    let entry = upstreams.get("ci.internal:8080");
    assert_eq!(upstreams.len(), 1, "the same entry as the request's");
    assert_eq!(entry.breaker().unwrap().name(), "ci.internal:8080");
}

/// A port the URI writes that is no port (above 65535) is no part of the
/// host's default port's breaker: it keys as written, and a leading zero
/// (`:0443`) is the port it means.
#[tokio::test(start_paused = true)]
async fn ports_are_read_as_numbers_and_a_port_that_is_none_keys_as_written() {
    let upstreams = registry();
    let hits = Arc::new(AtomicU32::new(0));
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .service(down(&hits));
    for url in ["http://h.internal:99999/", "https://h.internal:0443/"] {
        let request = http::Request::get(url).body(String::new()).unwrap();
        let response = service.ready().await.unwrap().call(request).await.unwrap();
        assert_eq!(response.status(), 503);
    }
    let mut names: Vec<String> = ["h.internal:99999", "h.internal:443"]
        .iter()
        .map(|key| upstreams.get(key).breaker().unwrap().name().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["h.internal:443", "h.internal:99999"]);
    assert_eq!(upstreams.len(), 2, "no entry for h.internal:80");
}

/// A tower layer (over a hyper client) and a reqwest middleware sharing one
/// registry, against one real server that is down: a failure through each
/// is two failures of the same host's breaker, which opens it for both.
#[tokio::test]
async fn a_layer_and_a_middleware_sharing_a_registry_share_each_hosts_breaker() {
    let upstreams = registry();
    let (server, hits) = servers::answering(StatusCode::SERVICE_UNAVAILABLE).await;
    let port = server.addr.port();
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let mut layered = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .service(client);
    let reqwest_client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let middleware = reqwest_middleware::ClientBuilder::new(reqwest_client)
        .with(RetryMiddleware::new(ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .build();

    let through_middleware = middleware
        .get(format!("http://localhost:{port}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(through_middleware.status(), 503);
    let request = http::Request::get(format!("http://LocalHost:{port}/"))
        .body(Full::default())
        .unwrap();
    let through_layer = layered.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(through_layer.status(), 503);

    assert_eq!(upstreams.len(), 1, "one host, one breaker");
    let breaker_state = upstreams
        .get(&format!("localhost:{port}"))
        .breaker()
        .unwrap()
        .state();
    assert_eq!(breaker_state, CircuitState::Open);
    let refused = middleware
        .get(format!("http://localhost:{port}/"))
        .send()
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}
