//! The metrics through the `metrics` facade (`retry_runtime_*`), with exact
//! values, read back with metrics-util's debugging recorder: calls by
//! function, outcome and reason (every reason of the documented list),
//! retries, waits and call durations in seconds, and circuit breaker transitions and state.

#[path = "support/servers.rs"]
mod servers;

use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Policy, RetryBudget};

#[derive(Debug, PartialEq)]
enum Failure {
    Transient,
    Permanent,
    Busy(Duration),
    Open,
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure::Open
    }
}

// For the closure API's loops, whose policy may carry a timeout.
impl From<retry_runtime::TimedOut> for Failure {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Failure::Transient
    }
}

fn transient(failure: &Failure) -> bool {
    !matches!(failure, Failure::Permanent)
}

#[retry(max = 3, base = "1ms", jitter = "none", on = transient)]
async fn always_down() -> Result<(), Failure> {
    Err(Failure::Transient)
}

#[retry(max = 3, base = "1ms", jitter = "none", on = transient)]
async fn rejected() -> Result<(), Failure> {
    Err(Failure::Permanent)
}

#[retry(max = 3, base = "1ms", jitter = "none", on = transient)]
async fn second_time_lucky(calls: &mut u32) -> Result<(), Failure> {
    *calls += 1;
    if *calls == 1 {
        Err(Failure::Transient)
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

/// The metric of `kind` named `name` with exactly these labels, if it was
/// recorded.
fn metric<'r>(
    recorded: &'r Recorded,
    kind: MetricKind,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'r DebugValue> {
    let mut wanted: Vec<(&str, &str)> = labels.to_vec();
    wanted.sort_unstable();
    recorded.iter().find_map(|(key, _, _, value)| {
        let mut found: Vec<(&str, &str)> = key
            .key()
            .labels()
            .map(|label| (label.key(), label.value()))
            .collect();
        found.sort_unstable();
        (key.kind() == kind && key.key().name() == name && found == wanted).then_some(value)
    })
}

fn counter(recorded: &Recorded, name: &str, labels: &[(&str, &str)]) -> Option<u64> {
    match metric(recorded, MetricKind::Counter, name, labels)? {
        DebugValue::Counter(count) => Some(*count),
        other => panic!("{name} is not a counter: {other:?}"),
    }
}

fn gauge(recorded: &Recorded, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    match metric(recorded, MetricKind::Gauge, name, labels)? {
        DebugValue::Gauge(value) => Some(value.0),
        other => panic!("{name} is not a gauge: {other:?}"),
    }
}

fn histogram(recorded: &Recorded, name: &str, labels: &[(&str, &str)]) -> Option<Vec<f64>> {
    match metric(recorded, MetricKind::Histogram, name, labels)? {
        DebugValue::Histogram(values) => Some(values.iter().map(|value| value.0).collect()),
        other => panic!("{name} is not a histogram: {other:?}"),
    }
}

/// Every metric name recorded, once each.
fn names(recorded: &Recorded) -> Vec<String> {
    let mut names: Vec<String> = recorded
        .iter()
        .map(|(key, _, _, _)| key.key().name().to_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn run(recorder: &DebuggingRecorder, test: impl std::future::Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(recorder, || runtime.block_on(test));
}

const CALLS: &str = "retry_runtime_calls_total";
const RETRIES: &str = "retry_runtime_retries_total";
const WAITS: &str = "retry_runtime_wait_seconds";
const DURATIONS: &str = "retry_runtime_call_duration_seconds";

#[test]
fn calls_retries_and_waits_are_counted_by_function_outcome_and_reason() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();

    run(&recorder, async {
        let _ = always_down().await;
        let _ = always_down().await;
        let _ = rejected().await;
        let mut calls = 0;
        second_time_lucky(&mut calls).await.unwrap();
    });

    let recorded = recorded(&snapshotter);
    let down = "labelled_metrics::always_down";
    assert_eq!(counter(&recorded, RETRIES, &[("function", down)]), Some(4));
    assert_eq!(
        counter(
            &recorded,
            CALLS,
            &[
                ("function", down),
                ("outcome", "failure"),
                ("reason", "exhausted")
            ]
        ),
        Some(2)
    );
    // Waits in seconds: 1ms then 2ms, twice.
    assert_eq!(
        histogram(&recorded, WAITS, &[("function", down)]),
        Some(vec![0.001, 0.002, 0.001, 0.002])
    );
    let rejected = "labelled_metrics::rejected";
    assert_eq!(
        counter(
            &recorded,
            CALLS,
            &[
                ("function", rejected),
                ("outcome", "failure"),
                ("reason", "not_retryable")
            ]
        ),
        Some(1)
    );
    assert_eq!(counter(&recorded, RETRIES, &[("function", rejected)]), None);
    assert_eq!(histogram(&recorded, WAITS, &[("function", rejected)]), None);
    let lucky = "labelled_metrics::second_time_lucky";
    assert_eq!(counter(&recorded, RETRIES, &[("function", lucky)]), Some(1));
    assert_eq!(
        counter(
            &recorded,
            CALLS,
            &[
                ("function", lucky),
                ("outcome", "success"),
                ("reason", "done")
            ]
        ),
        Some(1)
    );

    // Each call's time, its waits included, on the paused clock.
    let failed = [("function", down), ("outcome", "failure")];
    assert_eq!(
        histogram(&recorded, DURATIONS, &failed),
        Some(vec![0.003, 0.003])
    );
    let failed = [("function", rejected), ("outcome", "failure")];
    assert_eq!(histogram(&recorded, DURATIONS, &failed), Some(vec![0.0]));
    let succeeded = [("function", lucky), ("outcome", "success")];
    assert_eq!(
        histogram(&recorded, DURATIONS, &succeeded),
        Some(vec![0.001])
    );

    // The name before 0.2 is emitted alongside for one release, with the
    // same counts; `retry_calls_total` (the name that collided with
    // tower-resilience's) is not.
    assert_eq!(
        counter(&recorded, "retry_retries_total", &[("function", down)]),
        Some(4)
    );
    assert_eq!(
        names(&recorded),
        [
            "retry_retries_total",
            "retry_runtime_call_duration_seconds",
            "retry_runtime_calls_total",
            "retry_runtime_retries_total",
            "retry_runtime_wait_seconds"
        ]
    );
}

static SPENT: RetryBudget = RetryBudget::new(2, 0.1);

#[retry(max = 3, base = "1ms", budget = &SPENT)]
async fn over_budget() -> Result<(), Failure> {
    Err(Failure::Transient)
}

#[retry(
    max = 3,
    base = "1ms",
    deadline = "1ms",
    jitter = "none",
    multiplier = 10
)]
async fn too_late() -> Result<(), Failure> {
    Err(Failure::Transient)
}

#[retry(max = 3, cap = "1s", retry_after = |failure: &Failure| match failure {
    Failure::Busy(hint) => Some(*hint),
    _ => None,
})]
async fn told_to_wait_too_long() -> Result<(), Failure> {
    Err(Failure::Busy(Duration::from_secs(60)))
}

#[retry(max = 3, base = "1ms")]
async fn outer() -> Result<(), Failure> {
    always_down().await
}

static REFUSING: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(60))
    .with_jitter(0.0)
    .with_name("refusing");

#[retry(max = 3, base = "1ms", breaker = &REFUSING)]
async fn behind_an_open_breaker() -> Result<(), Failure> {
    Err(Failure::Transient)
}

#[test]
fn every_documented_reason_is_a_label() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();

    run(&recorder, async {
        // Two tokens: the first failure leaves 1, not above 2 / 2.
        assert_eq!(over_budget().await, Err(Failure::Transient));
        assert_eq!(too_late().await, Err(Failure::Transient));
        assert_eq!(
            told_to_wait_too_long().await,
            Err(Failure::Busy(Duration::from_secs(60)))
        );
        assert_eq!(outer().await, Err(Failure::Transient));
        // The first attempt's failure opens the breaker: no retry is let
        // through, so the call stops at once; the next call is refused.
        assert_eq!(behind_an_open_breaker().await, Err(Failure::Transient));
        assert_eq!(behind_an_open_breaker().await, Err(Failure::Open));
    });

    let recorded = recorded(&snapshotter);
    let failed = |function: &str, reason: &str| {
        counter(
            &recorded,
            CALLS,
            &[
                ("function", &format!("labelled_metrics::{function}")),
                ("outcome", "failure"),
                ("reason", reason),
            ],
        )
    };
    assert_eq!(failed("over_budget", "budget"), Some(1));
    assert_eq!(failed("too_late", "deadline"), Some(1));
    assert_eq!(failed("told_to_wait_too_long", "hint_too_long"), Some(1));
    assert_eq!(failed("always_down", "exhausted"), Some(1));
    assert_eq!(failed("outer", "nested"), Some(1));
    assert_eq!(failed("behind_an_open_breaker", "open"), Some(2));
}

static PAYMENTS: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(1))
    .with_probes(1)
    .with_close_after(1)
    .with_jitter(0.0)
    .with_name("payments");

#[retry(max = 1, breaker = &PAYMENTS)]
async fn pay(up: bool) -> Result<(), Failure> {
    if up {
        Ok(())
    } else {
        Err(Failure::Transient)
    }
}

#[test]
fn breaker_transitions_and_state_go_through_the_facade() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let transitions = "retry_runtime_circuit_transitions_total";
    let state = "retry_runtime_circuit_state";
    let breaker = ("breaker", "payments");

    run(&recorder, async {
        assert_eq!(pay(false).await, Err(Failure::Transient));
        assert_eq!(pay(false).await, Err(Failure::Transient)); // opens
    });
    let opened = recorded(&snapshotter);
    assert_eq!(gauge(&opened, state, &[breaker]), Some(2.0));

    run(&recorder, async {
        assert_eq!(pay(true).await, Err(Failure::Open));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(pay(false).await, Err(Failure::Transient)); // probe fails: open again
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(pay(true).await, Ok(())); // probe succeeds: closed
    });
    let recorded = recorded(&snapshotter);
    let moved = |from: &str, to: &str| {
        counter(
            &recorded,
            transitions,
            &[breaker, ("from", from), ("to", to)],
        )
    };
    // Counts are handed out once: these are the second run's.
    assert_eq!(moved("closed", "open"), Some(0));
    assert_eq!(moved("open", "half_open"), Some(2));
    assert_eq!(moved("half_open", "open"), Some(1));
    assert_eq!(moved("half_open", "closed"), Some(1));
    assert_eq!(gauge(&recorded, state, &[breaker]), Some(0.0));
    assert_eq!(
        counter(
            &opened,
            transitions,
            &[breaker, ("from", "closed"), ("to", "open")]
        ),
        Some(1)
    );
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
            counter(&recorded, RETRIES, &[("function", function)]),
            Some(1)
        );
        // The 503 returned when no retry is left is a failure.
        assert_eq!(
            counter(
                &recorded,
                CALLS,
                &[
                    ("function", function),
                    ("outcome", "failure"),
                    ("reason", "exhausted")
                ]
            ),
            Some(1)
        );
    }
}

/// Every loop of the closure API records under `function="closure"`, as the
/// metrics docs say, its hedged and blocking loops included.
#[test]
fn closure_loops_are_labelled_closure() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1));
    run(&recorder, async {
        let down: Result<(), Failure> = policy
            .on(transient)
            .run(|| async { Err(Failure::Transient) })
            .await;
        assert_eq!(down, Err(Failure::Transient));
        let hedged: Result<(), Failure> = policy
            .on(transient)
            .hedge(retry_runtime::hedge::Hedge::after(Duration::from_secs(1)))
            .run(|| async { Ok(()) })
            .await;
        assert_eq!(hedged, Ok(()));
        let blocking: Result<(), Failure> = policy.on(transient).run_blocking(|| Ok(()));
        assert_eq!(blocking, Ok(()));
    });
    let recorded = recorded(&snapshotter);
    let closure = [("function", "closure")];
    let failed = [closure[0], ("outcome", "failure"), ("reason", "exhausted")];
    let succeeded = [closure[0], ("outcome", "success"), ("reason", "done")];
    assert_eq!(counter(&recorded, CALLS, &failed), Some(1));
    assert_eq!(counter(&recorded, CALLS, &succeeded), Some(2));
    assert_eq!(counter(&recorded, RETRIES, &closure), Some(1));
}

/// A loop named with `named(..)` records under its name: the plain, hedged
/// and blocking loops alike, so that two loops of one service can be told
/// apart in a dashboard.
#[test]
fn a_named_closure_loop_records_under_its_name() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1));
    run(&recorder, async {
        let down: Result<(), Failure> = policy
            .on(transient)
            .named("inventory::reserve")
            .run(|| async { Err(Failure::Transient) })
            .await;
        assert_eq!(down, Err(Failure::Transient));
        let hedged: Result<(), Failure> = policy
            .on(transient)
            .named("inventory::lookup")
            .hedge(retry_runtime::hedge::Hedge::after(Duration::from_secs(1)))
            .run(|| async { Ok(()) })
            .await;
        assert_eq!(hedged, Ok(()));
        let blocking: Result<(), Failure> = policy
            .on(transient)
            .named("inventory::lookup")
            .run_blocking(|| Ok(()));
        assert_eq!(blocking, Ok(()));
    });
    let recorded = recorded(&snapshotter);
    let reserve = [("function", "inventory::reserve")];
    let lookup = [("function", "inventory::lookup")];
    let failed = [reserve[0], ("outcome", "failure"), ("reason", "exhausted")];
    let succeeded = [lookup[0], ("outcome", "success"), ("reason", "done")];
    assert_eq!(counter(&recorded, CALLS, &failed), Some(1));
    assert_eq!(counter(&recorded, CALLS, &succeeded), Some(2));
    assert_eq!(counter(&recorded, RETRIES, &reserve), Some(1));
    let closure = [("function", "closure")];
    assert_eq!(counter(&recorded, RETRIES, &closure), None);
}
