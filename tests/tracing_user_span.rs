//! The runtime's spans and events sit inside the caller's own span (the
//! current span is respected), hedged calls have one span per attempt, and
//! no span is left entered after a call: a later, unrelated call on the same
//! thread sees no span of the runtime. Alone in its test binary: tracing
//! caches, per call site and process-wide, whether anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/trace_tree.rs"]
mod trace_tree;

use std::time::Duration;

use retry_runtime::{current_attempt, retry, Policy};
use tracing::Instrument;

#[derive(Debug, Clone, PartialEq)]
struct Failure;

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn fails_twice() -> Result<u32, Failure> {
    tokio::task::yield_now().await;
    match current_attempt().unwrap().attempt() {
        attempt @ 3 => Ok(attempt),
        _ => Err(Failure),
    }
}

#[retry(max = 2, base = "10ms", jitter = "none")]
fn blocking_fails() -> Result<(), Failure> {
    Err(Failure)
}

/// Attempt 1 answers at 50 ms, hedges start at 10 ms and 20 ms and never
/// answer first.
#[retry(max = 3, hedge = "10ms")]
async fn hedged() -> Result<u32, Failure> {
    let attempt = current_attempt().unwrap().attempt();
    if attempt == 1 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    } else {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::info!(attempt, "inside a hedged attempt");
    Ok(attempt)
}

/// An outer retried function around a hedged one.
#[retry(max = 2, base = "10ms", jitter = "none")]
async fn around_hedged() -> Result<u32, Failure> {
    hedged().await
}

fn position(recorded: &trace_tree::Recorded, name: &str) -> usize {
    recorded
        .spans
        .iter()
        .position(|span| span.name == name)
        .unwrap_or_else(|| panic!("no span {name}: {recorded:#?}"))
}

fn attempt_spans(recorded: &trace_tree::Recorded) -> Vec<usize> {
    (0..recorded.spans.len())
        .filter(|&index| recorded.spans[index].name == "retry.attempt")
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_runtime_stays_inside_the_callers_span() {
    let (tree, _guard) = trace_tree::install();

    // An async retried function inside `instrument`.
    let user = tracing::info_span!("handle_request");
    assert_eq!(fails_twice().instrument(user).await, Ok(3));
    assert!(tracing::Span::current().is_none());
    let recorded = tree.take();
    let user = position(&recorded, "handle_request");
    let attempts = attempt_spans(&recorded);
    assert_eq!(attempts.len(), 3, "{recorded:#?}");
    assert!(attempts
        .iter()
        .all(|&index| recorded.spans[index].parent == Some(user)));
    assert_eq!(recorded.runtime_events().len(), 2, "{recorded:#?}");
    assert!(
        recorded
            .events
            .iter()
            .all(|event| event.scope.contains(&user)),
        "{recorded:#?}"
    );
    assert!(recorded.spans.iter().all(|span| span.closed));

    // A blocking one inside an entered span.
    {
        let user = tracing::info_span!("batch_job");
        let _entered = user.enter();
        blocking_fails().unwrap_err();
        assert_eq!(
            tracing::Span::current().metadata().unwrap().name(),
            "batch_job"
        );
    }
    assert!(tracing::Span::current().is_none());
    let recorded = tree.take();
    let user = position(&recorded, "batch_job");
    assert_eq!(attempt_spans(&recorded).len(), 2);
    assert!(attempt_spans(&recorded)
        .iter()
        .all(|&index| recorded.spans[index].parent == Some(user)));
    assert_eq!(recorded.runtime_events().len(), 2, "{recorded:#?}");
    assert!(recorded
        .events
        .iter()
        .all(|event| event.scope.contains(&user)));

    // The closure API.
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1));
    let result: std::io::Result<()> = policy
        .retrying()
        .run(|| async {
            tracing::info!("inside the closure's attempt");
            Err(std::io::ErrorKind::Other.into())
        })
        .instrument(tracing::info_span!("closure_caller"))
        .await;
    assert!(result.is_err());
    assert!(tracing::Span::current().is_none());
    let recorded = tree.take();
    let user = position(&recorded, "closure_caller");
    let attempts = attempt_spans(&recorded);
    assert_eq!(attempts.len(), 2, "{recorded:#?}");
    assert!(attempts
        .iter()
        .all(|&index| recorded.spans[index].parent == Some(user)));
    assert!(recorded
        .events
        .iter()
        .all(|event| event.scope.contains(&user)));
    // The body's own events are inside its attempt's span.
    let own: Vec<_> = recorded
        .events
        .iter()
        .filter(|event| !event.is_runtime())
        .collect();
    assert_eq!(own.len(), 2);
    assert_eq!(own[0].scope.first(), Some(&attempts[0]), "{recorded:#?}");
    assert_eq!(own[1].scope.first(), Some(&attempts[1]), "{recorded:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_has_one_span_per_attempt_inside_the_callers_span() {
    let (tree, _guard) = trace_tree::install();

    let user = tracing::info_span!("handle_request");
    assert_eq!(hedged().instrument(user).await, Ok(1));
    assert!(tracing::Span::current().is_none());
    let recorded = tree.take();
    let user = position(&recorded, "handle_request");
    let attempts = attempt_spans(&recorded);
    let described: Vec<_> = attempts
        .iter()
        .map(|&index| recorded.describe(index))
        .collect();
    let function = "tracing_user_span::hedged";
    assert_eq!(
        described,
        (1..=3)
            .map(|attempt| format!(
                "retry.attempt code.function.name=\"{function}\" attempt={attempt}"
            ))
            .collect::<Vec<_>>(),
        "{recorded:#?}"
    );
    assert!(attempts
        .iter()
        .all(|&index| recorded.spans[index].parent == Some(user)));
    assert!(
        recorded.spans.iter().all(|span| span.closed),
        "{recorded:#?}"
    );
    // The winner's own event is inside its attempt's span.
    let own: Vec<_> = recorded
        .events
        .iter()
        .filter(|event| !event.is_runtime())
        .collect();
    assert_eq!(own.len(), 1, "{recorded:#?}");
    assert_eq!(own[0].scope, [attempts[0], user], "{recorded:#?}");
    assert!(recorded
        .events
        .iter()
        .all(|event| event.scope.contains(&user)));

    // Inside an outer retried function, the hedged attempts are children
    // of the outer attempt.
    assert_eq!(around_hedged().await, Ok(1));
    assert!(tracing::Span::current().is_none());
    let recorded = tree.take();
    let attempts = attempt_spans(&recorded);
    assert_eq!(attempts.len(), 4, "{recorded:#?}");
    assert_eq!(recorded.spans[attempts[0]].parent, None);
    assert!(attempts[1..]
        .iter()
        .all(|&index| recorded.spans[index].parent == Some(attempts[0])));
    assert!(
        recorded.spans.iter().all(|span| span.closed),
        "{recorded:#?}"
    );
}
