//! Hosts for the per-host breaker tests: real axum servers on 127.0.0.1,
//! each up or down at the test's command, behind the tower layer or the
//! reqwest middleware with one breaker per authority from a `Registry`.
//! Needs `servers` beside it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reqwest_middleware::ClientWithMiddleware;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{BreakerError, HttpClassifier, PerAuthority, RetryLayer, RetryService};
use retry_runtime::{CircuitBreaker, CircuitOpen, Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

use super::servers;

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// A server that answers 200 while `up` holds, 503 otherwise, counting
/// requests.
pub struct Host {
    pub server: servers::Server,
    pub up: Arc<AtomicBool>,
    pub hits: Arc<AtomicU32>,
}

impl Host {
    pub async fn start(up: bool) -> Host {
        let up = Arc::new(AtomicBool::new(up));
        let hits = Arc::new(AtomicU32::new(0));
        let router = Router::new()
            .route(
                "/",
                any(
                    |State((up, hits)): State<(Arc<AtomicBool>, Arc<AtomicU32>)>| async move {
                        hits.fetch_add(1, Ordering::SeqCst);
                        if up.load(Ordering::SeqCst) {
                            StatusCode::OK
                        } else {
                            StatusCode::SERVICE_UNAVAILABLE
                        }
                    },
                ),
            )
            .with_state((Arc::clone(&up), Arc::clone(&hits)));
        Host {
            server: servers::serve(router, 0).await,
            up,
            hits,
        }
    }

    /// The registry's key for this host, and so its breaker's name.
    pub fn authority(&self) -> String {
        self.server.addr.to_string()
    }
}

/// One breaker per host, unnamed by the factory: two failures in a row open
/// it for a minute; one successful probe closes it.
pub fn upstreams() -> Arc<Registry> {
    Arc::new(Registry::new(64, |_host: &str| {
        Upstream::new().with_breaker(
            CircuitBreaker::new()
                .with_consecutive_failures(2)
                .with_min_calls(1000)
                .with_open_for(Duration::from_secs(60))
                .with_jitter(0.0)
                .with_probes(1)
                .with_close_after(1),
        )
    }))
}

/// A hyper client behind the retry layer, with a breaker per authority.
pub type Hosts = RetryService<Client<HttpConnector, Full<Bytes>>, HttpClassifier, PerAuthority>;

pub fn client(registry: &Arc<Registry>) -> Hosts {
    // No idle connections, whose timers would move the paused clock.
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).per_authority(Arc::clone(registry)))
        .service(client)
}

/// The status of a GET to `host`, or `None` when its breaker refused it.
pub async fn get(service: &mut Hosts, host: &Host) -> Option<u16> {
    let request = http::Request::get(host.server.url("/"))
        .body(Full::default())
        .unwrap();
    match service.ready().await.unwrap().call(request).await {
        Ok(response) => Some(response.status().as_u16()),
        Err(BreakerError::Open(_)) => None,
        Err(error) => panic!("{error:?}"),
    }
}

/// Two failed attempts open `host`'s circuit; the third is not sent.
pub async fn open(service: &mut Hosts, host: &Host) {
    assert_eq!(get(service, host).await, Some(503));
    assert_eq!(get(service, host).await, None);
}

/// A reqwest client behind the retry middleware, with a breaker per
/// authority (`RetryMiddleware::per_authority`) and the same policy.
pub fn middleware_client(registry: &Arc<Registry>) -> ClientWithMiddleware {
    // No idle connections, whose timers would move the paused clock.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    reqwest_middleware::ClientBuilder::new(client)
        .with(RetryMiddleware::new(POLICY).per_authority(Arc::clone(registry)))
        .build()
}

/// The status of a GET to `host` through the middleware, or `None` when its
/// breaker refused it (`Error::Middleware` holding a `CircuitOpen`).
pub async fn send(client: &ClientWithMiddleware, host: &Host) -> Option<u16> {
    match client.get(host.server.url("/")).send().await {
        Ok(response) => Some(response.status().as_u16()),
        Err(reqwest_middleware::Error::Middleware(error)) if error.is::<CircuitOpen>() => None,
        Err(error) => panic!("{error:?}"),
    }
}

/// Through the middleware: two failed attempts open `host`'s circuit; the
/// third is not sent, and the next request is refused.
pub async fn open_through(client: &ClientWithMiddleware, host: &Host) {
    assert_eq!(send(client, host).await, Some(503));
    assert_eq!(send(client, host).await, None);
}
