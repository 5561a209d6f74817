//! What operators get from a breaker kept in a `static`: a callback at every
//! change of state, manual control (force open, force closed, reset), and
//! the transitions and state through the `metrics` facade
//! (`retry_runtime_circuit_transitions_total{breaker, from, to}` and the
//! gauge `retry_runtime_circuit_state{breaker}`), read back with
//! metrics-util's debugging recorder.

use std::sync::Mutex;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Transition};

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

/// The changes each breaker's callback saw, by breaker name.
static SEEN: Mutex<Vec<(String, CircuitState, CircuitState)>> = Mutex::new(Vec::new());

fn remember(breaker: &CircuitBreaker, change: Transition) {
    SEEN.lock()
        .unwrap()
        .push((breaker.name().to_owned(), change.from(), change.to()));
}

fn seen(name: &str) -> Vec<(CircuitState, CircuitState)> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|(breaker, _, _)| *breaker == name)
        .map(|&(_, from, to)| (from, to))
        .collect()
}

const fn quick(name: &'static str) -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_open_for(Duration::from_secs(1))
        .with_probes(1)
        .with_close_after(1)
        .with_jitter(0.0)
        .with_name(name)
        .on_transition(remember)
}

static INVENTORY: CircuitBreaker = quick("inventory");

#[retry(max = 1, breaker = &INVENTORY)]
async fn reserve(up: bool) -> Result<(), Failure> {
    if up {
        Ok(())
    } else {
        Err(Failure::Down)
    }
}

#[tokio::test(start_paused = true)]
async fn the_callback_sees_every_change_of_state_once() {
    use CircuitState::{Closed, HalfOpen, Open};
    assert_eq!(reserve(false).await, Err(Failure::Down));
    assert_eq!(reserve(false).await, Err(Failure::Down));
    assert_eq!(reserve(true).await, Err(Failure::Open));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(reserve(false).await, Err(Failure::Down));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(reserve(true).await, Ok(()));
    assert_eq!(
        seen("inventory"),
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed)
        ]
    );
}

static SHIPPING: CircuitBreaker = quick("shipping");

#[retry(max = 1, breaker = &SHIPPING)]
async fn ship(up: bool) -> Result<(), Failure> {
    if up {
        Ok(())
    } else {
        Err(Failure::Down)
    }
}

#[tokio::test(start_paused = true)]
async fn an_operator_can_force_the_circuit_open_or_closed_and_reset_it() {
    use CircuitState::{Closed, Open};
    SHIPPING.force_open();
    assert_eq!(SHIPPING.state(), Open);
    // Held open however long it stays: no probe is let through.
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(ship(true).await, Err(Failure::Open));

    SHIPPING.force_closed();
    assert_eq!(SHIPPING.state(), Closed);
    // Held closed: failures are not counted, so nothing opens it.
    for _ in 0..10 {
        assert_eq!(ship(false).await, Err(Failure::Down));
    }
    assert_eq!(SHIPPING.state(), Closed);

    SHIPPING.reset();
    assert_eq!(ship(false).await, Err(Failure::Down));
    assert_eq!(ship(false).await, Err(Failure::Down));
    assert_eq!(SHIPPING.state(), Open, "counted again after the reset");
    SHIPPING.reset();
    assert_eq!(SHIPPING.state(), Closed);
    assert_eq!(ship(true).await, Ok(()));
    assert_eq!(
        seen("shipping"),
        [
            (Closed, Open),
            (Open, Closed),
            (Closed, Open),
            (Open, Closed)
        ]
    );
}

static BILLING: CircuitBreaker = quick("billing");

#[retry(max = 1, breaker = &BILLING)]
async fn bill(up: bool) -> Result<(), Failure> {
    if up {
        Ok(())
    } else {
        Err(Failure::Down)
    }
}

#[test]
fn transitions_and_the_state_go_through_the_metrics_facade() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            assert_eq!(bill(false).await, Err(Failure::Down));
            assert_eq!(bill(false).await, Err(Failure::Down));
            tokio::time::advance(Duration::from_secs(1)).await;
            assert_eq!(bill(true).await, Ok(()));
        });
    });
    let recorded = snapshotter.snapshot().into_vec();
    let value = |name: &str, labels: &[(&str, &str)]| {
        recorded.iter().find_map(|(key, _, _, value)| {
            let key = key.key();
            let found: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
            (key.name() == name && found == labels).then(|| match value {
                DebugValue::Counter(count) => Some(*count as f64),
                DebugValue::Gauge(gauge) => Some(gauge.into_inner()),
                DebugValue::Histogram(_) => None,
            })
        })
    };
    let transitions = "retry_runtime_circuit_transitions_total";
    for (from, to) in [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ] {
        assert_eq!(
            value(
                transitions,
                &[("breaker", "billing"), ("from", from), ("to", to)]
            ),
            Some(Some(1.0)),
            "{from} -> {to}"
        );
    }
    assert_eq!(
        value("retry_runtime_circuit_state", &[("breaker", "billing")]),
        Some(Some(0.0)),
        "closed again"
    );
}
