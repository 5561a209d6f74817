//! Counters through the `metrics` facade, labelled by function and stop
//! reason, read back with metrics-util's debugging recorder; the
//! process-wide `snapshot()` keeps counting alongside.

#[path = "support/servers.rs"]
mod servers;

use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use retry_runtime::{retry, Policy};

#[derive(Debug)]
struct Failure {
    transient: bool,
}

#[retry(max = 3, base = "1ms", on = |failure: &Failure| failure.transient)]
async fn always_down() -> Result<(), Failure> {
    Err(Failure { transient: true })
}

#[retry(max = 3, base = "1ms", on = |failure: &Failure| failure.transient)]
async fn rejected() -> Result<(), Failure> {
    Err(Failure { transient: false })
}

#[retry(max = 3, base = "1ms", on = |failure: &Failure| failure.transient)]
async fn second_time_lucky(calls: &mut u32) -> Result<(), Failure> {
    *calls += 1;
    if *calls == 1 {
        Err(Failure { transient: true })
    } else {
        Ok(())
    }
}

type Recorded = Vec<(
    metrics_util::CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

/// Everything recorded: the debugging recorder hands each count out once.
fn recorded(snapshotter: &Snapshotter) -> Recorded {
    snapshotter.snapshot().into_vec()
}

/// The counter named `name` with exactly these labels, if it was recorded.
fn counter(recorded: &Recorded, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
    let mut wanted: Vec<(&str, &str)> = labels.to_vec();
    wanted.sort_unstable();
    recorded.iter().find_map(|(key, _, _, value)| {
        let mut found: Vec<(&str, &str)> = key
            .key()
            .labels()
            .map(|label| (label.key(), label.value()))
            .collect();
        found.sort_unstable();
        match value {
            DebugValue::Counter(count)
                if key.kind() == MetricKind::Counter
                    && key.key().name() == name
                    && found == wanted =>
            {
                Some(*count)
            }
            _ => None,
        }
    })
}

fn run(recorder: &DebuggingRecorder, test: impl std::future::Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(recorder, || runtime.block_on(test));
}

#[test]
fn calls_and_retries_are_counted_by_function_and_reason() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let before = retry_runtime::metrics::snapshot();

    run(&recorder, async {
        let _ = always_down().await;
        let _ = always_down().await;
        let _ = rejected().await;
        let mut calls = 0;
        second_time_lucky(&mut calls).await.unwrap();
    });

    let recorded = recorded(&snapshotter);
    let down = "labelled_metrics::always_down";
    assert_eq!(
        counter(&recorded, "retry_retries_total", &[("function", down)]),
        Some(4)
    );
    assert_eq!(
        counter(
            &recorded,
            "retry_calls_total",
            &[("function", down), ("reason", "exhausted")]
        ),
        Some(2)
    );
    let rejected = "labelled_metrics::rejected";
    assert_eq!(
        counter(
            &recorded,
            "retry_calls_total",
            &[("function", rejected), ("reason", "not_retryable")]
        ),
        Some(1)
    );
    assert_eq!(
        counter(&recorded, "retry_retries_total", &[("function", rejected)]),
        None
    );
    let lucky = "labelled_metrics::second_time_lucky";
    assert_eq!(
        counter(&recorded, "retry_retries_total", &[("function", lucky)]),
        Some(1)
    );
    assert_eq!(
        counter(
            &recorded,
            "retry_calls_total",
            &[("function", lucky), ("reason", "done")]
        ),
        Some(1)
    );

    // The unlabelled process-wide counters still count (other tests in this
    // binary may add to them).
    let after = retry_runtime::metrics::snapshot();
    assert!(after.retries - before.retries >= 5);
    assert!(after.exhausted - before.exhausted >= 2);
    assert!(after.not_retryable - before.not_retryable >= 1);
}

#[test]
fn the_tower_layer_and_the_middleware_count_under_their_names() {
    static POLICY: Policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1))
        .with_deadline(Duration::from_secs(5));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();

    run(&recorder, async {
        let router = Router::new().route("/", get(|| async { StatusCode::SERVICE_UNAVAILABLE }));
        let server = servers::serve(router, 0).await;

        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(retry_runtime::reqwest_middleware::RetryMiddleware::new(POLICY).named("billing"))
            .build();
        client.get(server.url("/")).send().await.unwrap();

        let mut service = tower::ServiceBuilder::new()
            .layer(retry_runtime::tower::RetryLayer::new(&POLICY).named("users"))
            .service(
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http::<http_body_util::Empty<bytes::Bytes>>(),
            );
        let request = http::Request::get(server.url("/"))
            .body(http_body_util::Empty::new())
            .unwrap();
        tower::ServiceExt::oneshot(&mut service, request)
            .await
            .unwrap();
    });

    let recorded = recorded(&snapshotter);
    for function in ["billing", "users"] {
        assert_eq!(
            counter(&recorded, "retry_retries_total", &[("function", function)]),
            Some(1)
        );
        assert_eq!(
            counter(
                &recorded,
                "retry_calls_total",
                &[("function", function), ("reason", "exhausted")]
            ),
            Some(1)
        );
    }
}
