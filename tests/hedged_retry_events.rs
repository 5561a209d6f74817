//! The `tracing` event of a hedged call's retry after a failure names the
//! attempt that failed (as `on_retry` does), and is emitted when it failed,
//! before the wait, as the retry loop's is: not when the retry starts,
//! after the wait, naming the newest attempt. Alone in its test binary:
//! tracing caches, per call site and process-wide, whether anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/trace_tree.rs"]
mod trace_tree;

use std::cell::RefCell;
use std::time::Duration;

use retry_runtime::{current_attempt, retry};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
struct Failure(u32);

thread_local! {
    static HOOK: RefCell<Vec<(u32, Duration, Instant)>> = RefCell::default();
}

fn hook(_: &Failure, attempt: u32, wait: Duration) {
    HOOK.with(|seen| seen.borrow_mut().push((attempt, wait, Instant::now())));
}

/// Attempt 1 fails at 15 ms, while attempt 2 (the hedge, from 10 ms) still
/// runs; attempt 2 answers at 110 ms; attempt 3 (the retry of attempt 1)
/// would answer later.
#[retry(max = 3, hedge = "10ms", on_retry = hook)]
async fn first_fails_while_the_hedge_runs() -> Result<u32, Failure> {
    match current_attempt().unwrap().attempt() {
        1 => {
            tokio::time::sleep(Duration::from_millis(15)).await;
            Err(Failure(1))
        }
        2 => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(2)
        }
        attempt => {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok(attempt)
        }
    }
}

/// Attempt 1 fails at once and the server asks for 2 s; attempt 2, started
/// after that wait, answers.
#[retry(max = 2, hedge = "10s", on_retry = hook, retry_after = |_| Some(Duration::from_secs(2)))]
async fn told_to_wait() -> Result<u32, Failure> {
    match current_attempt().unwrap().attempt() {
        1 => Err(Failure(1)),
        attempt => Ok(attempt),
    }
}

fn field<'e>(event: &'e str, name: &str) -> Option<&'e str> {
    let start = event.find(&format!(" {name}="))? + name.len() + 2;
    Some(event[start..].split(' ').next().unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_hedged_retry_is_reported_for_the_attempt_that_failed_when_it_failed() {
    let (tree, _guard) = trace_tree::install();

    let start = Instant::now();
    assert_eq!(first_fails_while_the_hedge_runs().await, Ok(2));
    let recorded = tree.take();
    let events: Vec<_> = recorded
        .events
        .iter()
        .filter(|event| event.is_runtime())
        .collect();
    let hook = HOOK.with(RefCell::take);
    // The hook hears of attempt 1's failure, retried at once.
    assert_eq!(hook.len(), 1, "{hook:?}");
    assert_eq!((hook[0].0, hook[0].1), (1, Duration::ZERO));
    assert_eq!(hook[0].2 - start, Duration::from_millis(15));
    // The hedge at 10 ms, told as a hedge beside attempt 1, then the retry
    // of attempt 1 at 15 ms.
    assert_eq!(events.len(), 2, "{recorded:#?}");
    assert!(
        events[0].fields.contains("attempt slow; hedging"),
        "{recorded:#?}"
    );
    assert_eq!(field(&events[0].fields, "attempt"), Some("1"));
    let retry = &events[1].fields;
    assert!(retry.contains("error.type"), "{retry}");
    assert_eq!(field(retry, "attempt"), Some("1"), "{retry}");
    assert_eq!(field(retry, "wait_ms"), Some("0.0"), "{retry}");
    assert_eq!(events[1].at - start, Duration::from_millis(15));

    // A retry after a hint is reported when the attempt failed, with the
    // wait to come, not two seconds later.
    let start = Instant::now();
    assert_eq!(told_to_wait().await, Ok(2));
    let recorded = tree.take();
    let events: Vec<_> = recorded
        .events
        .iter()
        .filter(|event| event.is_runtime())
        .collect();
    let hook = HOOK.with(RefCell::take);
    assert_eq!(hook.len(), 1, "{hook:?}");
    let (attempt, wait, at) = hook[0];
    assert_eq!(attempt, 1);
    // The server's 2 s, with the policy's jitter above it.
    assert!(wait >= Duration::from_secs(2), "{wait:?}");
    assert_eq!(at, start);
    assert_eq!(events.len(), 1, "{recorded:#?}");
    assert_eq!(field(&events[0].fields, "attempt"), Some("1"));
    let reported = field(&events[0].fields, "wait_ms").unwrap();
    assert_eq!(
        reported.parse::<f64>().unwrap(),
        wait.as_secs_f64() * 1000.0
    );
    assert_eq!(events[0].at, start, "{recorded:#?}");
    assert!(Instant::now() - start >= wait);
}
