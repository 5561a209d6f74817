//! One `tracing` span per attempt (feature `attempt-spans`), with
//! OpenTelemetry's attribute names: `code.function.name`, and for HTTP
//! `http.request.resend_count` (the attempt number less one, on resends
//! only). Alone in its test binary: tracing caches, per call site and
//! process-wide, whether anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use retry_runtime::Policy;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Every span the runtime opens, as text: its name and fields.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for Spans {
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={:?}", field.name(), value));
            }
        }
        if attributes.metadata().target() != "retry_runtime" {
            return;
        }
        let mut fields = Fields(attributes.metadata().name().to_owned());
        attributes.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

/// A server that answers 503 twice, then 200; it counts the requests.
async fn twice_unavailable() -> (servers::Server, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let router = Router::new().route(
        "/",
        get(move || async move {
            if counted.fetch_add(1, Ordering::SeqCst) < 2 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }),
    );
    (servers::serve(router, 0).await, calls)
}

#[tokio::test(start_paused = true)]
async fn each_http_attempt_of_the_middleware_has_a_span_with_its_resend_count() {
    static POLICY: Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(1));
    let spans = Spans::default();
    let _guard = events::capture(tracing_subscriber::registry().with(spans.clone()));

    let (server, calls) = twice_unavailable().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(POLICY).named("billing"))
        .build();
    let response = client.get(server.url("/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    assert_eq!(
        spans.0.lock().unwrap().clone(),
        [
            "retry.attempt code.function.name=\"billing\" attempt=1",
            "retry.attempt code.function.name=\"billing\" attempt=2 http.request.resend_count=1",
            "retry.attempt code.function.name=\"billing\" attempt=3 http.request.resend_count=2",
        ]
    );
}

/// A request whose body is a stream is sent once, unretried, and that one
/// attempt has its span as any other. It used to have none.
#[tokio::test(start_paused = true)]
async fn a_streaming_body_sent_by_the_middleware_has_its_attempt_span() {
    static POLICY: Policy = Policy::new().with_max_attempts(3);
    let spans = Spans::default();
    let _guard = events::capture(tracing_subscriber::registry().with(spans.clone()));

    let (server, calls) = twice_unavailable().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(POLICY).named("upload"))
        .build();
    let chunks = futures_util::stream::iter([Ok::<_, std::io::Error>("part")]);
    let response = client
        .get(server.url("/"))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "sent once"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        spans.0.lock().unwrap().clone(),
        ["retry.attempt code.function.name=\"upload\" attempt=1"]
    );
}

#[tokio::test(start_paused = true)]
async fn each_http_attempt_of_the_tower_layer_has_a_span_with_its_resend_count() {
    use tower::{Service, ServiceBuilder, ServiceExt};
    static POLICY: Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(1));
    let spans = Spans::default();
    let _guard = events::capture(tracing_subscriber::registry().with(spans.clone()));

    let (server, calls) = twice_unavailable().await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(retry_runtime::tower::RetryLayer::new(&POLICY).named("inventory"))
        .service(client);
    let request = http::Request::get(server.url("/"))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    assert_eq!(
        spans.0.lock().unwrap().clone(),
        [
            "retry.attempt code.function.name=\"inventory\" attempt=1",
            "retry.attempt code.function.name=\"inventory\" attempt=2 http.request.resend_count=1",
            "retry.attempt code.function.name=\"inventory\" attempt=3 http.request.resend_count=2",
        ]
    );
}

#[derive(Debug, PartialEq)]
struct Failure;

#[retry_runtime::retry(max = 3, base = "1ms")]
async fn third_time_lucky(calls: &AtomicU32) -> Result<u32, Failure> {
    // The attempt runs inside its span.
    assert!(!tracing::Span::current().is_none());
    match calls.fetch_add(1, Ordering::SeqCst) + 1 {
        call if call < 3 => Err(Failure),
        call => Ok(call),
    }
}

#[retry_runtime::retry(max = 2, base = "1ms")]
fn blocking() -> Result<(), Failure> {
    Err(Failure)
}

#[tokio::test(start_paused = true)]
async fn each_attempt_of_a_retried_function_has_a_span() {
    let spans = Spans::default();
    let _guard = events::capture(tracing_subscriber::registry().with(spans.clone()));

    let calls = AtomicU32::new(0);
    assert_eq!(third_time_lucky(&calls).await.unwrap(), 3);
    blocking().unwrap_err();

    let function = "attempt_spans::third_time_lucky";
    assert_eq!(
        spans.0.lock().unwrap().clone(),
        [
            format!("retry.attempt code.function.name=\"{function}\" attempt=1"),
            format!("retry.attempt code.function.name=\"{function}\" attempt=2"),
            format!("retry.attempt code.function.name=\"{function}\" attempt=3"),
            "retry.attempt code.function.name=\"attempt_spans::blocking\" attempt=1".to_owned(),
            "retry.attempt code.function.name=\"attempt_spans::blocking\" attempt=2".to_owned(),
        ]
    );

    // One span per attempt too where the attempt's future is made by a
    // closure (the closure API) or beside others (a hedged call).
    spans.0.lock().unwrap().clear();
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1));
    let closure: Result<(), std::io::Error> = policy
        .retrying()
        .run(|| async { Err(std::io::ErrorKind::Other.into()) })
        .await;
    assert!(closure.is_err());
    assert_eq!(hedged_twice().await, Err(Failure));
    assert_eq!(
        spans.0.lock().unwrap().clone(),
        [
            "retry.attempt code.function.name=\"closure\" attempt=1",
            "retry.attempt code.function.name=\"closure\" attempt=2",
            "retry.attempt code.function.name=\"attempt_spans::hedged_twice\" attempt=1",
            "retry.attempt code.function.name=\"attempt_spans::hedged_twice\" attempt=2",
        ]
    );
}

#[retry_runtime::retry(max = 2, hedge = "10ms")]
async fn hedged_twice() -> Result<(), Failure> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Err(Failure)
}

/// The hedge layer's copies are HTTP resends too: each copy's span carries
/// `http.request.resend_count`, as the retry layer's and the middleware's
/// attempts' do. The first copy hangs until the client lets it go (the
/// test's signal, not a duration), so the hedge delay passes on the paused
/// clock and the second copy answers.
#[tokio::test(start_paused = true)]
async fn each_copy_of_the_hedge_layer_has_a_span_with_its_resend_count() {
    use retry_runtime::hedge::{Hedge, HedgeLayer};
    use tower::{Service, ServiceBuilder, ServiceExt};
    static POLICY: Policy = Policy::new().with_max_attempts(2);
    let spans = Spans::default();
    let _guard = events::capture(tracing_subscriber::registry().with(spans.clone()));

    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let router = Router::new().route(
        "/",
        get(move || async move {
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                std::future::pending::<()>().await;
            }
            StatusCode::OK
        }),
    );
    let server = servers::serve(router, 0).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let mut service = ServiceBuilder::new()
        .layer(HedgeLayer::new(&POLICY, Hedge::after(Duration::from_millis(20))).named("search"))
        .service(client);
    let request = http::Request::get(server.url("/"))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    assert_eq!(
        spans.0.lock().unwrap().clone(),
        [
            "retry.attempt code.function.name=\"search\" attempt=1",
            "retry.attempt code.function.name=\"search\" attempt=2 http.request.resend_count=1",
        ]
    );
}
