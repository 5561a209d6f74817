//! The `tracing` events, checked against the attempts actually made. Alone
//! in its test binary: tracing caches, per call site and process-wide,
//! whether anyone listens, and tests running retries on other threads at the
//! same time can leave that cache saying no while this test's subscriber is
//! being set.

use retry_runtime::{current_attempt, retry};

#[derive(Debug, Clone, PartialEq)]
struct Failure(u32);

#[path = "support/events.rs"]
mod events;
use events::Events;

#[retry(max = 3, base = "100ms", jitter = "none", on = |e| e.0 != 99)]
async fn traced(failures: &[u32]) -> Result<(), Failure> {
    Err(Failure(
        failures[usize::try_from(current_attempt().unwrap().attempt() - 1).unwrap()],
    ))
}

/// Calls `traced`, which retries and gives up: this layer then returns at
/// once, for reason `nested`.
#[retry(max = 3, base = "100ms", jitter = "none")]
async fn traced_outer() -> Result<(), Failure> {
    traced(&[1, 2, 3]).await
}

#[tokio::test(start_paused = true)]
async fn tracing_reports_each_retry_and_why_the_call_stopped() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = events::capture(subscriber);

    traced(&[1, 2, 3]).await.unwrap_err();
    traced(&[1, 99, 0]).await.unwrap_err();
    traced_outer().await.unwrap_err();
    let events = events.0.lock().unwrap().clone();
    let function = "tracing_events::traced";
    // OpenTelemetry's `error.type`: the class of error the attempt failed with.
    let error = "tracing_events::Failure";
    assert_eq!(
        events,
        [
            format!("INFO message=attempt failed; retrying function=\"{function}\" code.function.name=\"{function}\" attempt=1 wait_ms=100.0 error.type=\"{error}\""),
            format!("INFO message=attempt failed; retrying function=\"{function}\" code.function.name=\"{function}\" attempt=2 wait_ms=200.0 error.type=\"{error}\""),
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=3 attempts=3 elapsed_ms=300.0 reason=\"exhausted\" error.type=\"{error}\""),
            format!("INFO message=attempt failed; retrying function=\"{function}\" code.function.name=\"{function}\" attempt=1 wait_ms=100.0 error.type=\"{error}\""),
            format!("DEBUG message=attempt failed; not retrying function=\"{function}\" code.function.name=\"{function}\" attempt=2 attempts=2 elapsed_ms=100.0 reason=\"not_retryable\" error.type=\"{error}\""),
            format!("INFO message=attempt failed; retrying function=\"{function}\" code.function.name=\"{function}\" attempt=1 wait_ms=100.0 error.type=\"{error}\""),
            format!("INFO message=attempt failed; retrying function=\"{function}\" code.function.name=\"{function}\" attempt=2 wait_ms=200.0 error.type=\"{error}\""),
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=3 attempts=3 elapsed_ms=300.0 reason=\"exhausted\" error.type=\"{error}\""),
            format!("WARN message=attempt failed; giving up function=\"{function}_outer\" code.function.name=\"{function}_outer\" attempt=1 attempts=1 elapsed_ms=300.0 reason=\"nested\" error.type=\"{error}\""),
        ]
    );

    // The class of an error no event reported (a hedged attempt failed
    // while another was still running, and that one answered) does not
    // reach the next call's events. In this one test: tracing caches per
    // call site whether anyone listens.
    let later = Events::default();
    let _guard = events::capture(tracing_subscriber::registry().with(later.clone()));
    assert_eq!(raced().await, Ok(1));
    later.0.lock().unwrap().clear();
    assert_eq!(a_value_retried_once().await, Ok(0));
    let events = later.0.lock().unwrap().clone();
    // Retrying, then giving up: neither has an error to report.
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(
        events.iter().all(|event| !event.contains("error.type")),
        "{events:#?}"
    );

    // Nor while the hedged call is still waiting: a hedged attempt fails at
    // 10 ms beside one that answers at 50 ms, and another call on the same
    // thread retries an `Ok` value at 20 ms.
    later.0.lock().unwrap().clear();
    let (hedged, value) =
        tokio::join!(hedged_second_fails_first_answers(), value_retried_at_20ms());
    assert_eq!(hedged, Ok(1));
    assert_eq!(value, Ok(0));
    let events = later.0.lock().unwrap().clone();
    let of_value: Vec<_> = events
        .iter()
        .filter(|event| event.contains("value_retried_at_20ms"))
        .collect();
    assert_eq!(of_value.len(), 2, "{events:#?}");
    assert!(
        of_value.iter().all(|event| !event.contains("error.type")),
        "{of_value:#?}"
    );

    // A hedge started after a retried failure: its event names no error,
    // the retry's names the failure's.
    later.0.lock().unwrap().clear();
    assert_eq!(fails_then_hedged().await, Ok(2));
    let events = later.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(
        events[0].contains("attempt=1") && events[0].contains("error.type"),
        "{events:#?}"
    );
    assert!(
        events[1].starts_with("INFO message=attempt slow; hedging")
            && events[1].contains("attempt=2")
            && events[1].contains("wait_ms=10.0")
            && !events[1].contains("error.type"),
        "{events:#?}"
    );
}

#[retry(max = 3, hedge = "10ms")]
async fn fails_then_hedged() -> Result<u32, Failure> {
    match current_attempt().unwrap().attempt() {
        // Retried at once.
        1 => Err(Failure(1)),
        // Hedged after 10 ms, then answers.
        2 => {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok(2)
        }
        _ => {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            Ok(3)
        }
    }
}

#[retry(max = 2, hedge = "10ms")]
async fn hedged_second_fails_first_answers() -> Result<u32, Failure> {
    if current_attempt().unwrap().attempt() == 1 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Ok(1)
    } else {
        Err(Failure(2))
    }
}

#[retry(max = 2, base = "1ms", jitter = "none", on_ok = |value: &u32| *value == 0)]
async fn value_retried_at_20ms() -> Result<u32, Failure> {
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    Ok(0)
}
static RACED_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[retry(max = 2, hedge = "10ms")]
async fn raced() -> Result<u32, Failure> {
    if RACED_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
        // Attempt 1: slow, then answers.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Ok(1)
    } else {
        // Attempt 2, the hedge: fails at once, with no attempt left to start.
        Err(Failure(1))
    }
}

/// Retries an `Ok` value once: one event, with no error to report.
#[retry(max = 2, base = "1ms", on_ok = |value: &u32| *value == 0)]
async fn a_value_retried_once() -> Result<u32, Failure> {
    Ok(0)
}
