//! One breaker named on two layers, the outer one serving a cached answer
//! when the inner call gives up (docs/breaker.md, "One breaker on two
//! layers": the inner call runs under the outer attempt's permit and its
//! outcome is recorded once). The dependency is a real server on 127.0.0.1
//! that answers 503 while down; the clock is paused.
//!
//! The inner call's failure is the dependency's failure whether the outer
//! body propagates it with `?` or hides it behind a fallback: the breaker
//! must count it in both cases. Before, a fallback made the outer attempt a
//! success, which was the only outcome recorded: the circuit never opened
//! while every call to the dependency failed, and a half-open circuit closed
//! on probes whose every call had failed.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState};

#[derive(Debug, Clone, PartialEq)]
enum Error {
    Unavailable,
    Transport,
    Open,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

fn transient(error: &Error) -> bool {
    matches!(error, Error::Unavailable | Error::Transport)
}

struct Dependency {
    hits: AtomicU32,
    up: AtomicBool,
}

/// The profile service: 503 while down, 200 once up; counts its hits.
async fn profile_service() -> (servers::Server, Arc<Dependency>) {
    let dependency = Arc::new(Dependency {
        hits: AtomicU32::new(0),
        up: AtomicBool::new(false),
    });
    let router = Router::new()
        .route(
            "/profile",
            get(|State(dep): State<Arc<Dependency>>| async move {
                dep.hits.fetch_add(1, Ordering::SeqCst);
                if dep.up.load(Ordering::SeqCst) {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                }
            }),
        )
        .with_state(Arc::clone(&dependency));
    (servers::serve(router, 0).await, dependency)
}

fn client() -> reqwest::Client {
    // No idle connections, whose timers would let the paused clock jump.
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

async fn get_profile(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    let response = client.get(url).send().await.map_err(|_| Error::Transport)?;
    if response.status() == StatusCode::OK {
        Ok("fresh".to_owned())
    } else {
        Err(Error::Unavailable)
    }
}

static FALLBACK: CircuitBreaker = CircuitBreaker::new()
    .with_name("profiles")
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);
static PROPAGATE: CircuitBreaker = CircuitBreaker::new()
    .with_name("profiles")
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

/// The client function.
#[retry(max = 3, base = "10ms", on = transient, breaker = breaker)]
async fn fetch_profile(
    client: &reqwest::Client,
    url: &str,
    breaker: &'static CircuitBreaker,
) -> Result<String, Error> {
    get_profile(client, url).await
}

/// The service function: the same breaker, a cached answer when the client
/// function gives up.
#[retry(max = 2, base = "10ms", on = transient, breaker = &FALLBACK)]
async fn profile_or_cached(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    Ok(fetch_profile(client, url, &FALLBACK)
        .await
        .unwrap_or_else(|_| "cached".to_owned()))
}

/// The same, propagating the give-up with `?`.
#[retry(max = 2, base = "10ms", on = transient, breaker = &PROPAGATE)]
async fn profile_or_error(client: &reqwest::Client, url: &str) -> Result<String, Error> {
    fetch_profile(client, url, &PROPAGATE).await
}

#[tokio::test(start_paused = true)]
async fn a_fallback_over_a_failing_dependency_still_opens_the_shared_breaker() {
    let (server, dependency) = profile_service().await;
    let (client, url) = (client(), server.url("/profile"));

    // `?`: each request is one failure (recorded once), ten in a row open.
    for _ in 0..10 {
        assert_eq!(
            profile_or_error(&client, &url).await,
            Err(Error::Unavailable)
        );
    }
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 30);
    assert_eq!(PROPAGATE.state(), CircuitState::Open);

    // A fallback: the same thirty failed calls to the dependency.
    for _ in 0..10 {
        assert_eq!(
            profile_or_cached(&client, &url).await,
            Ok("cached".to_owned())
        );
    }
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 60);
    assert_eq!(
        FALLBACK.state(),
        CircuitState::Open,
        "thirty failed calls, all recorded as successes"
    );
    // Open: the request is refused without a call.
    assert_eq!(profile_or_cached(&client, &url).await, Err(Error::Open));
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 60);

    // Half-open, still down: the probe's three calls fail, the caller gets
    // its cached answer, and the circuit opens again.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(
        profile_or_cached(&client, &url).await,
        Ok("cached".to_owned())
    );
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 63);
    assert_eq!(FALLBACK.state(), CircuitState::Open);

    // Up again: the next probe (after the doubled open period) closes it.
    dependency.up.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        profile_or_cached(&client, &url).await,
        Ok("fresh".to_owned())
    );
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 64);
    assert_eq!(FALLBACK.state(), CircuitState::Closed);
}

/// A fallback on a call that failed once and then succeeded on its retry:
/// the dependency answered last, so the outer attempt is a success.
#[tokio::test(start_paused = true)]
async fn an_inner_call_that_recovers_on_its_retry_counts_as_a_success() {
    static FLAKY: CircuitBreaker = CircuitBreaker::new().with_consecutive_failures(2);

    #[retry(max = 2, base = "10ms", on = transient, breaker = &FLAKY)]
    async fn outer(client: &reqwest::Client, url: &str) -> Result<String, Error> {
        let first = fetch_profile(client, url, &FLAKY).await;
        Ok(first.unwrap_or_else(|_| "cached".to_owned()))
    }

    let (server, dependency) = profile_service().await;
    let (client, url) = (client(), server.url("/profile"));
    // Down for the first call of each request, up for its retry.
    for round in 1..=5 {
        dependency.up.store(false, Ordering::SeqCst);
        let flip = Arc::clone(&dependency);
        let watcher = tokio::spawn(async move {
            while flip.hits.load(Ordering::SeqCst) < 2 * round - 1 {
                tokio::task::yield_now().await;
            }
            flip.up.store(true, Ordering::SeqCst);
        });
        assert_eq!(outer(&client, &url).await, Ok("fresh".to_owned()));
        watcher.await.unwrap();
    }
    assert_eq!(dependency.hits.load(Ordering::SeqCst), 10);
    assert_eq!(FLAKY.state(), CircuitState::Closed);
}
