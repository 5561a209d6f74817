//! `retry_runtime::tower::RetryPolicy` (the `tower::retry::Policy` for any
//! cloneable request) with a breaker: a failure whose retry the open
//! circuit refuses ends the call as every other front end ends it, counted
//! once in `retry_runtime_calls_total{reason="open"}`, told to
//! `last_call()`, and charged to the budget like any retryable failure.

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::tower::RetryPolicy;
use retry_runtime::{CircuitBreaker, Classification, Policy, RetryBudget, Stop};
use tower::{Service, ServiceExt};

static POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(1));
static BREAKER: CircuitBreaker = CircuitBreaker::new().with_name("tower_policy_metrics");
static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

fn classify(_: &u32, result: &Result<u32, &'static str>) -> Classification {
    match result {
        Ok(_) => Classification::Done,
        Err(_) => Classification::Transient(None),
    }
}

#[test]
fn a_retry_the_open_breaker_refuses_is_counted_as_a_stop_for_open() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let result = metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let policy = RetryPolicy::new(&POLICY)
                .with_budget(&BUDGET)
                .with_breaker(&BREAKER)
                .named("tower_policy_metrics")
                .with_classifier(classify);
            let mut service = tower::retry::Retry::new(
                policy,
                tower::service_fn(|_: u32| async { Err::<u32, _>("down") }),
            );
            // The circuit opens elsewhere (another layer, an operator).
            BREAKER.force_open();
            service.ready().await.unwrap().call(7).await
        })
    });
    assert_eq!(result, Err("down"), "the attempt's own error comes back");
    let last = retry_runtime::last_call().map(|stopped| stopped.reason());
    assert_eq!(last, Some(Stop::Open));

    let calls: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "retry_runtime_calls_total")
        .map(|(key, _, _, value)| {
            let labels: Vec<(String, String)> = key
                .key()
                .labels()
                .map(|label| (label.key().to_owned(), label.value().to_owned()))
                .collect();
            (labels, value)
        })
        .collect();
    assert_eq!(calls.len(), 1, "one call, counted once: {calls:?}");
    let (labels, value) = &calls[0];
    assert!(
        labels.contains(&("reason".to_owned(), "open".to_owned()))
            && labels.contains(&("outcome".to_owned(), "failure".to_owned()))
            && labels.contains(&("function".to_owned(), "tower_policy_metrics".to_owned())),
        "{labels:?}"
    );
    assert_eq!(*value, DebugValue::Counter(1));
    // A retryable failure takes a token, whether or not a retry follows.
    assert!((BUDGET.tokens() - 9.0).abs() < 1e-9, "{}", BUDGET.tokens());
}
