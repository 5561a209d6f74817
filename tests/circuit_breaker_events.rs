//! A circuit breaker's `tracing` events and counters, checked against the
//! transitions it makes. Alone in its test binary: tracing caches per call
//! site whether anyone listens.

#[path = "support/counts.rs"]
mod counts;

use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen};

#[derive(Debug, PartialEq)]
enum Failure {
    Down,
    Open,
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure::Open
    }
}

#[path = "support/events.rs"]
mod events;
use events::Events;

static INVENTORY: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(1))
    .with_probes(1)
    .with_close_after(1)
    .with_jitter(0.0)
    .with_name("inventory");

#[retry(max = 1, breaker = &INVENTORY)]
async fn reserve(up: bool) -> Result<(), Failure> {
    if up {
        Ok(())
    } else {
        Err(Failure::Down)
    }
}

#[tokio::test(start_paused = true)]
async fn opening_half_opening_and_closing_are_traced_and_counted() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = events::capture(subscriber);
    let counting = counts::Counting::on_this_thread();
    let before = counting.now();

    assert_eq!(reserve(false).await, Err(Failure::Down));
    assert_eq!(reserve(false).await, Err(Failure::Down));
    assert_eq!(reserve(true).await, Err(Failure::Open));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(reserve(false).await, Err(Failure::Down));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(reserve(true).await, Ok(()));

    let events = events.0.lock().unwrap().clone();
    let function = "circuit_breaker_events::reserve";
    let error = "circuit_breaker_events::Failure";
    assert_eq!(
        events,
        [
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=1 attempts=1 elapsed_ms=0.0 reason=\"exhausted\" error.type=\"{error}\""),
            "WARN message=circuit opened; refusing calls breaker=\"inventory\" open_ms=1000".to_owned(),
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=1 attempts=1 elapsed_ms=0.0 reason=\"exhausted\" error.type=\"{error}\""),
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=1 attempts=1 elapsed_ms=0.0 reason=\"open\" error.type=\"{error}\""),
            "INFO message=circuit half-open; probing breaker=\"inventory\" probes=1".to_owned(),
            "WARN message=circuit opened; refusing calls breaker=\"inventory\" open_ms=2000".to_owned(),
            format!("WARN message=attempt failed; giving up function=\"{function}\" code.function.name=\"{function}\" attempt=1 attempts=1 elapsed_ms=0.0 reason=\"exhausted\" error.type=\"{error}\""),
            "INFO message=circuit half-open; probing breaker=\"inventory\" probes=1".to_owned(),
            "INFO message=circuit closed breaker=\"inventory\"".to_owned(),
        ]
    );
    let after = counting.now();
    assert_eq!(after.circuit_opened - before.circuit_opened, 2);
    assert_eq!(after.circuit_half_opened - before.circuit_half_opened, 2);
    assert_eq!(after.circuit_closed - before.circuit_closed, 1);
    assert_eq!(after.open - before.open, 1);
}
