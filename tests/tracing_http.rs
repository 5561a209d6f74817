//! The `tracing` events and spans of the tower layer and the reqwest
//! middleware, against a real server on 127.0.0.1: one INFO event per retry
//! whose `wait_ms` is the wait slept, one WARN event when the call gives up,
//! none for a success; one `retry.attempt` span per attempt, with
//! `http.request.resend_count` on resends, inside the caller's own span.
//! Alone in its test binary: tracing caches, per call site and
//! process-wide, whether anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/servers.rs"]
mod servers;
#[path = "support/trace_tree.rs"]
mod trace_tree;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use retry_runtime::Policy;
use tokio::time::Instant;

/// A server that answers 503 `failures` times, then 200; it keeps the
/// instant of each request.
async fn unavailable(failures: usize) -> (servers::Server, Arc<Mutex<Vec<Instant>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let router = Router::new().route(
        "/",
        get(move || async move {
            let mut seen = kept.lock().unwrap();
            seen.push(Instant::now());
            if seen.len() <= failures {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }),
    );
    (servers::serve(router, 0).await, seen)
}

fn field<'e>(event: &'e str, name: &str) -> Option<&'e str> {
    let start = event.find(&format!(" {name}="))? + name.len() + 2;
    Some(event[start..].split(' ').next().unwrap())
}

fn waits(events: &[String]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|event| field(event, "wait_ms"))
        .map(|ms| Duration::from_secs_f64(ms.parse::<f64>().unwrap() / 1000.0))
        .collect()
}

fn gaps(seen: &Mutex<Vec<Instant>>) -> Vec<Duration> {
    let seen = seen.lock().unwrap();
    seen.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(100))
    .with_jitter(retry_runtime::Jitter::None);

/// Checks a call's events and spans, `name` its layer's name.
fn check(recorded: &trace_tree::Recorded, name: &str, failures: usize, user: usize) {
    let events = recorded.runtime_events();
    let attempts = (failures + 1).min(3);
    let retries = attempts - 1;
    let expected = if failures >= 3 { retries + 1 } else { retries };
    assert_eq!(events.len(), expected, "{recorded:#?}");
    for (index, event) in events[..retries].iter().enumerate() {
        assert!(
            event.starts_with("INFO message=attempt failed; retrying"),
            "{event}"
        );
        assert_eq!(
            field(event, "code.function.name"),
            Some(&*format!("\"{name}\""))
        );
        assert_eq!(field(event, "function"), Some(&*format!("\"{name}\"")));
        assert_eq!(field(event, "attempt"), Some(&*format!("{}", index + 1)));
    }
    if failures >= 3 {
        let last = events.last().unwrap();
        assert!(
            last.starts_with("WARN message=attempt failed; giving up"),
            "{last}"
        );
        assert_eq!(field(last, "reason"), Some("\"exhausted\""));
        assert_eq!(field(last, "attempt"), Some("3"));
    }
    // The runtime's events are inside the caller's span.
    for event in recorded.events.iter().filter(|event| event.is_runtime()) {
        assert!(event.scope.contains(&user), "{recorded:#?}");
    }
    // One span per attempt, children of the caller's span, all closed.
    let spans: Vec<_> = (0..recorded.spans.len())
        .filter(|&index| recorded.spans[index].name == "retry.attempt")
        .collect();
    assert_eq!(spans.len(), attempts, "{recorded:#?}");
    for (number, &index) in spans.iter().enumerate() {
        let attempt = number + 1;
        let resend = if attempt > 1 {
            format!(" http.request.resend_count={}", attempt - 1)
        } else {
            String::new()
        };
        assert_eq!(
            recorded.describe(index),
            format!("retry.attempt code.function.name=\"{name}\" attempt={attempt}{resend}")
        );
        assert_eq!(recorded.spans[index].parent, Some(user), "{recorded:#?}");
    }
    assert!(
        recorded.spans.iter().all(|span| span.closed),
        "{recorded:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_reports_each_retry_inside_the_callers_span() {
    use tower::{Service, ServiceBuilder, ServiceExt};
    use tracing::Instrument;
    let (tree, _guard) = trace_tree::install();

    for failures in [0, 2, 3] {
        let (server, seen) = unavailable(failures).await;
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let mut service = ServiceBuilder::new()
            .layer(retry_runtime::tower::RetryLayer::new(&POLICY).named("inventory"))
            .service(client);
        let request = http::Request::get(server.url("/"))
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        tree.take();
        let user = tracing::info_span!("handle_order");
        let response = async { service.ready().await.unwrap().call(request).await.unwrap() }
            .instrument(user)
            .await;
        let expected = if failures >= 3 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        assert_eq!(response.status(), expected);
        assert!(tracing::Span::current().is_none());
        let recorded = tree.take();
        let user = recorded
            .spans
            .iter()
            .position(|span| span.name == "handle_order")
            .unwrap();
        check(&recorded, "inventory", failures, user);
        let events = recorded.runtime_events();
        let slept = gaps(&seen);
        let reported = waits(&events);
        assert_eq!(reported.len(), slept.len().min(2));
        for (reported, slept) in reported.iter().zip(&slept) {
            assert!(
                *slept >= *reported && *slept - *reported < Duration::from_millis(2),
                "{reported:?} {slept:?}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_middleware_reports_each_retry_inside_the_callers_span() {
    use tracing::Instrument;
    let (tree, _guard) = trace_tree::install();

    for failures in [0, 2, 3] {
        let (server, seen) = unavailable(failures).await;
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(POLICY).named("billing"))
            .build();
        tree.take();
        let user = tracing::info_span!("handle_order");
        let response = async { client.get(server.url("/")).send().await.unwrap() }
            .instrument(user)
            .await;
        let expected = if failures >= 3 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        assert_eq!(response.status(), expected);
        assert!(tracing::Span::current().is_none());
        let recorded = tree.take();
        let user = recorded
            .spans
            .iter()
            .position(|span| span.name == "handle_order")
            .unwrap();
        check(&recorded, "billing", failures, user);
        let events = recorded.runtime_events();
        let slept = gaps(&seen);
        let reported = waits(&events);
        assert_eq!(reported.len(), slept.len().min(2));
        for (reported, slept) in reported.iter().zip(&slept) {
            assert!(
                *slept >= *reported && *slept - *reported < Duration::from_millis(2),
                "{reported:?} {slept:?}"
            );
        }
    }
}

/// A server whose first two connections close before the response.
async fn closing_twice() -> servers::Server {
    let router = Router::new().route("/", get(|| async { StatusCode::OK }));
    servers::serve(router, 2).await
}

/// The events of attempts that failed with an error (not a response) name
/// its class in `error.type`, as the attribute's and the closure API's do.
fn check_error_type(events: &[String], error: &str) {
    assert_eq!(events.len(), 2, "{events:#?}");
    for event in events {
        assert!(
            event.starts_with("INFO message=attempt failed; retrying"),
            "{event}"
        );
        assert_eq!(
            field(event, "error.type"),
            Some(&*format!("\"{error}\"")),
            "{event}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_exchange_names_its_error_type() {
    use tower::{Service, ServiceBuilder, ServiceExt};
    let (tree, _guard) = trace_tree::install();

    let server = closing_twice().await;
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
    check_error_type(
        &tree.take().runtime_events(),
        std::any::type_name::<hyper_util::client::legacy::Error>(),
    );

    let server = closing_twice().await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(POLICY).named("billing"))
        .build();
    let response = client.get(server.url("/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    check_error_type(
        &tree.take().runtime_events(),
        std::any::type_name::<reqwest_middleware::Error>(),
    );

    // The hedge layer: two copies refused, the third answers.
    use retry_runtime::hedge::{Hedge, HedgeLayer};
    static HEDGED: Policy = Policy::new().with_max_attempts(3);
    let sent = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let refusing = tower::service_fn(move |_request: http::Request<()>| {
        let sent = Arc::clone(&sent);
        async move {
            if sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
            } else {
                Ok(http::Response::new(()))
            }
        }
    });
    let mut client = ServiceBuilder::new()
        .layer(HedgeLayer::new(&HEDGED, Hedge::after(Duration::from_secs(1))).named("hedged"))
        .service(refusing);
    client
        .ready()
        .await
        .unwrap()
        .call(http::Request::new(()))
        .await
        .unwrap();
    check_error_type(
        &tree.take().runtime_events(),
        std::any::type_name::<std::io::Error>(),
    );

    // `tower::RetryPolicy`, under tower's own `Retry`: two connections reset
    // (a refused one would be sent again as the same attempt, with an event
    // of its own: tests/transparent_retries.rs).
    let sent = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let refusing = tower::service_fn(move |_request: http::Request<()>| {
        let sent = Arc::clone(&sent);
        async move {
            if sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
            } else {
                Ok(http::Response::new(()))
            }
        }
    });
    let mut client = ServiceBuilder::new()
        .layer(tower::retry::RetryLayer::new(
            retry_runtime::tower::RetryPolicy::new(&POLICY).named("policy"),
        ))
        .service(refusing);
    client
        .ready()
        .await
        .unwrap()
        .call(http::Request::new(()))
        .await
        .unwrap();
    check_error_type(
        &tree.take().runtime_events(),
        std::any::type_name::<std::io::Error>(),
    );
}
