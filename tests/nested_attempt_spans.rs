//! With `attempt-spans`, the attempt spans of retried functions called by
//! other retried functions: each inner attempt's span is a child of the outer
//! attempt's span that was running, every span closes, and a successful first
//! attempt is one span and no event. Alone in its test binary: tracing
//! caches, per call site and process-wide, whether anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/trace_tree.rs"]
mod trace_tree;

use std::cell::Cell;

use retry_runtime::{current_attempt, retry};

#[derive(Debug, Clone, PartialEq)]
struct Failure;

thread_local! {
    static INNER_CALLS: Cell<u32> = const { Cell::new(0) };
}

/// Fails its first attempt of every call, then answers.
#[retry(max = 3, base = "10ms", jitter = "none")]
async fn inner() -> Result<u32, Failure> {
    tokio::task::yield_now().await;
    if current_attempt().unwrap().attempt() == 1 {
        Err(Failure)
    } else {
        Ok(INNER_CALLS.with(|calls| {
            calls.set(calls.get() + 1);
            calls.get()
        }))
    }
}

/// Calls `inner` once per attempt, and fails its own first attempt.
#[retry(max = 2, base = "10ms", jitter = "none")]
async fn middle() -> Result<u32, Failure> {
    let value = inner().await?;
    if current_attempt().unwrap().attempt() == 1 {
        Err(Failure)
    } else {
        Ok(value)
    }
}

#[retry(max = 2, base = "10ms", jitter = "none")]
async fn outer() -> Result<u32, Failure> {
    middle().await
}

#[retry(max = 2, base = "10ms", jitter = "none")]
fn blocking_inner() -> Result<(), Failure> {
    Ok(())
}

#[retry(max = 2, base = "10ms", jitter = "none")]
async fn calls_blocking() -> Result<(), Failure> {
    blocking_inner()
}

#[retry(max = 3, base = "10ms")]
async fn succeeds_at_once() -> Result<u32, Failure> {
    Ok(7)
}

#[tokio::test(start_paused = true)]
async fn inner_attempt_spans_are_children_of_the_outer_attempt_that_ran() {
    let (tree, _guard) = trace_tree::install();

    // A successful first attempt: one span, no event.
    assert_eq!(succeeds_at_once().await, Ok(7));
    let recorded = tree.take();
    assert_eq!(
        recorded.runtime_events(),
        Vec::<String>::new(),
        "no event on the success path"
    );
    assert_eq!(recorded.spans.len(), 1, "{recorded:#?}");
    assert_eq!(
        recorded.describe(0),
        "retry.attempt code.function.name=\"nested_attempt_spans::succeeds_at_once\" attempt=1"
    );
    assert!(recorded.spans[0].closed);
    assert_eq!(recorded.spans[0].parent, None);

    // Three layers: outer 1 -> middle 1 -> inner 1, 2; middle fails, middle
    // 2 -> inner 1, 2; middle answers, outer answers.
    assert_eq!(outer().await, Ok(2));
    let recorded = tree.take();
    let described: Vec<_> = (0..recorded.spans.len())
        .map(|index| {
            let parent = recorded.spans[index]
                .parent
                .map(|parent| recorded.describe(parent));
            (recorded.describe(index), parent)
        })
        .collect();
    let span = |function: &str, attempt: u32| {
        format!("retry.attempt code.function.name=\"nested_attempt_spans::{function}\" attempt={attempt}")
    };
    assert_eq!(
        described,
        [
            (span("outer", 1), None),
            (span("middle", 1), Some(span("outer", 1))),
            (span("inner", 1), Some(span("middle", 1))),
            (span("inner", 2), Some(span("middle", 1))),
            (span("middle", 2), Some(span("outer", 1))),
            (span("inner", 1), Some(span("middle", 2))),
            (span("inner", 2), Some(span("middle", 2))),
        ],
        "{recorded:#?}"
    );
    // The parents are the very spans that ran, not others of the same name.
    assert_eq!(recorded.spans[2].parent, Some(1));
    assert_eq!(recorded.spans[3].parent, Some(1));
    assert_eq!(recorded.spans[5].parent, Some(4));
    assert_eq!(recorded.spans[6].parent, Some(4));
    assert!(
        recorded.spans.iter().all(|span| span.closed),
        "{recorded:#?}"
    );
    // Each inner event is emitted inside the outer attempt that ran it.
    let inner_retries: Vec<_> = recorded
        .events
        .iter()
        .filter(|event| event.is_runtime() && event.fields.contains("::inner\""))
        .collect();
    assert_eq!(inner_retries.len(), 2, "{recorded:#?}");
    assert!(inner_retries[0].scope.contains(&1), "{recorded:#?}");
    assert!(inner_retries[1].scope.contains(&4), "{recorded:#?}");
    assert!(tracing::Span::current().is_none());

    // A blocking retried function inside an async one.
    assert_eq!(calls_blocking().await, Ok(()));
    let recorded = tree.take();
    assert_eq!(recorded.spans.len(), 2, "{recorded:#?}");
    assert_eq!(recorded.spans[1].parent, Some(0), "{recorded:#?}");
    assert!(recorded.spans.iter().all(|span| span.closed));
    assert!(recorded.runtime_events().is_empty());
}
