//! The reqwest-middleware retry against a real axum server on 127.0.0.1:
//! Retry-After honoured, only requests safe to repeat retried, a dropped
//! connection retried, deadline and budget as `#[retry]` has them; a
//! middleware after it runs in each attempt's context.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use reqwest_middleware::ClientWithMiddleware;
use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::{Jitter, Policy, RetryBudget};
use tokio::time::Instant;

type Hits = Arc<AtomicU32>;

/// 429 with `Retry-After: 2` the first time, then 200.
async fn limited_once(State(hits): State<Hits>) -> Response {
    if hits.fetch_add(1, Ordering::SeqCst) == 0 {
        (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "2")]).into_response()
    } else {
        (StatusCode::OK, "hello").into_response()
    }
}

async fn down(State(hits): State<Hits>) -> StatusCode {
    hits.fetch_add(1, Ordering::SeqCst);
    StatusCode::SERVICE_UNAVAILABLE
}

async fn ok(State(hits): State<Hits>) -> &'static str {
    hits.fetch_add(1, Ordering::SeqCst);
    "fine"
}

async fn server(drops: u32) -> (servers::Server, Hits) {
    let hits = Hits::default();
    let router = Router::new()
        .route("/limited-once", any(limited_once))
        .route("/down", any(down))
        .route("/ok", any(ok))
        .with_state(Arc::clone(&hits));
    (servers::serve(router, drops).await, hits)
}

fn client(middleware: RetryMiddleware) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
}

const QUICK: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_millis(10))
    .with_cap(Duration::from_secs(10));

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let (server, hits) = server(0).await;
    let client = client(RetryMiddleware::new(QUICK));

    let started = Instant::now();
    let response = client
        .get(server.url("/limited-once"))
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited <= Duration::from_millis(2200),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn only_requests_safe_to_repeat_are_retried() {
    let (server, hits) = server(0).await;
    let client = client(RetryMiddleware::new(QUICK));

    let response = client.post(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "a POST without a key is sent once"
    );

    let response = client
        .post(server.url("/down"))
        .idempotency_key()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        5,
        "a POST with a key gets every attempt"
    );

    let response = client.put(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 9, "a PUT is idempotent");
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_before_the_response_is_retried_for_a_get() {
    let (server, hits) = server(2).await;
    let client = client(RetryMiddleware::new(QUICK));

    let response = client.get(server.url("/ok")).send().await.unwrap();

    assert_eq!(response.text().await.unwrap(), "fine");
    assert_eq!(server.dropped.load(Ordering::SeqCst), 2);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_before_the_response_is_returned_for_a_post() {
    let (server, hits) = server(1).await;
    let client = client(RetryMiddleware::new(QUICK));

    let error = client.post(server.url("/ok")).send().await.unwrap_err();

    assert!(error.is_request(), "{error:?}");
    assert_eq!(server.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_and_the_budget_stop_retries() {
    static BUDGET: RetryBudget = RetryBudget::new(4, 0.1);
    let (server, hits) = server(0).await;
    let deadline = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(400))
        .with_jitter(Jitter::None)
        .with_deadline(Duration::from_secs(1));
    let response = client(RetryMiddleware::new(deadline))
        .get(server.url("/down"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "400ms, then 800ms would pass the deadline"
    );

    let budgeted = client(RetryMiddleware::new(QUICK.with_max_attempts(10)).with_budget(&BUDGET));
    budgeted.get(server.url("/down")).send().await.unwrap();
    assert_eq!(
        hits.load(Ordering::SeqCst),
        4,
        "two tokens spent, then no retry"
    );
    budgeted.get(server.url("/down")).send().await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 5);
}

/// A classifier of the caller's own: this service's POSTs are idempotent by
/// design, so a 503 is retried whatever the method.
#[tokio::test(start_paused = true)]
async fn a_custom_classifier_decides() {
    use retry_runtime::reqwest_middleware::Outcome;
    use retry_runtime::Classification;

    let (server, hits) = server(0).await;
    let every_503 = |_: &reqwest::Request, outcome: &Outcome| match outcome {
        Ok(response) if response.status() == 503 => Classification::Transient(None),
        Ok(_) => Classification::Done,
        Err(_) => Classification::Permanent,
    };
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(QUICK).with_classifier(every_503))
        .build();

    let response = client.post(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 4);
}

/// With a breaker, the middleware stops sending to a server that is down:
/// the failure that opens the circuit is returned as it came, and later
/// requests fail at once with `CircuitOpen` in `Error::Middleware`.
#[tokio::test(start_paused = true)]
async fn a_breaker_refuses_requests_while_open() {
    use retry_runtime::{CircuitBreaker, CircuitOpen, CircuitState};

    static BREAKER: CircuitBreaker = CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0);
    let (server, hits) = server(0).await;
    let client = client(RetryMiddleware::new(QUICK).with_breaker(&BREAKER));

    let response = client.get(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503, "the real answer, not CircuitOpen");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(BREAKER.state(), CircuitState::Open);

    let refused = client.get(server.url("/down")).send().await.unwrap_err();
    assert!(
        matches!(&refused, reqwest_middleware::Error::Middleware(error) if error.is::<CircuitOpen>()),
        "{refused:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

/// A middleware of the user's, below the retry middleware, that asks the
/// same breaker around the request, as `CircuitBreaker::acquire` allows:
/// inside the retry middleware's attempt it runs under that attempt's
/// permit, so one failed request is one failure, not two.
struct AsksTheBreaker(&'static retry_runtime::CircuitBreaker);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for AsksTheBreaker {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let permit = self
            .0
            .acquire()
            .map_err(reqwest_middleware::Error::middleware)?;
        let result = next.run(request, extensions).await;
        permit.record(matches!(&result, Ok(response) if !response.status().is_server_error()));
        result
    }
}

#[tokio::test(start_paused = true)]
async fn one_breaker_on_the_middleware_and_one_below_counts_a_failure_once() {
    static SHARED: retry_runtime::CircuitBreaker = retry_runtime::CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0);
    let (server, hits) = server(0).await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(Policy::new().with_max_attempts(1)).with_breaker(&SHARED))
        .with(AsksTheBreaker(&SHARED))
        .build();
    let response = client.get(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        SHARED.state(),
        retry_runtime::CircuitState::Closed,
        "one failure, counted twice"
    );
}

/// A middleware after the retry: records what `current_attempt()` shows
/// for each attempt it passes on.
#[derive(Clone, Default)]
struct SeesTheAttempt(Arc<std::sync::Mutex<Vec<Seen>>>);

/// An attempt's number and deadline, if the code runs in one.
type Seen = Option<(u32, Option<Instant>)>;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for SeesTheAttempt {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let attempt = retry_runtime::current_attempt().map(|a| (a.attempt(), a.deadline()));
        self.0.lock().unwrap().push(attempt);
        next.run(request, extensions).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_middleware_after_the_retry_sees_each_attempt_and_the_deadline() {
    let (server, hits) = server(0).await;
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(10))
        .with_jitter(Jitter::None)
        .with_deadline(Duration::from_secs(1));
    let seen = SeesTheAttempt::default();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy))
        .with(seen.clone())
        .build();
    let started = Instant::now();
    let response = client.get(server.url("/down")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let deadline = Some(started + Duration::from_secs(1));
    assert_eq!(
        *seen.0.lock().unwrap(),
        [
            Some((1, deadline)),
            Some((2, deadline)),
            Some((3, deadline))
        ]
    );
}
