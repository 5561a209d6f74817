//! Per-host breakers report under their host's name: two real axum servers
//! on 127.0.0.1 behind the tower layer, or the reqwest middleware, with one
//! breaker per authority, read back with metrics-util's debugging recorder (the `tracing` events are
//! checked in `per_host_breaker_events.rs`, alone in its binary). The
//! registry's factory leaves the breakers unnamed, so the registry names
//! each after its authority (`127.0.0.1:<port>`); a factory's own name wins.
//!
//! Before names made at run time, every per-host breaker reported as
//! `circuit`: one series for all hosts, whose gauge showed whichever host
//! changed last (one host open and another closing read 0).

#[path = "support/servers.rs"]
mod servers;

#[path = "support/hosts.rs"]
mod hosts;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hosts::{client, get, middleware_client, open, open_through, send, upstreams, Host};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::{CircuitBreaker, CircuitState};

const TRANSITIONS: &str = "retry_runtime_circuit_transitions_total";
const STATE: &str = "retry_runtime_circuit_state";

type Recorded = Vec<(
    metrics_util::CompositeKey,
    Option<metrics::Unit>,
    Option<metrics::SharedString>,
    DebugValue,
)>;

fn recorded(snapshotter: &Snapshotter) -> Recorded {
    snapshotter.snapshot().into_vec()
}

/// The value of the metric of `kind` named `name` with exactly `labels`.
fn value(
    recorded: &Recorded,
    kind: MetricKind,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    recorded.iter().find_map(|(key, _, _, value)| {
        let found: Vec<(&str, &str)> = key
            .key()
            .labels()
            .map(|label| (label.key(), label.value()))
            .collect();
        (key.kind() == kind && key.key().name() == name && found == labels).then(|| match value {
            DebugValue::Counter(count) => *count as f64,
            DebugValue::Gauge(gauge) => gauge.into_inner(),
            DebugValue::Histogram(_) => panic!("{name} is a histogram"),
        })
    })
}

fn gauge(recorded: &Recorded, breaker: &str) -> Option<f64> {
    value(recorded, MetricKind::Gauge, STATE, &[("breaker", breaker)])
}

fn transitions(recorded: &Recorded, breaker: &str, from: &str, to: &str) -> Option<f64> {
    value(
        recorded,
        MetricKind::Counter,
        TRANSITIONS,
        &[("breaker", breaker), ("from", from), ("to", to)],
    )
}

/// Every `breaker` label value recorded, once each.
fn breakers(recorded: &Recorded) -> Vec<String> {
    let mut names: Vec<String> = recorded
        .iter()
        .flat_map(|(key, _, _, _)| key.key().labels())
        .filter(|label| label.key() == "breaker")
        .map(|label| label.value().to_owned())
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

#[test]
fn each_host_has_its_own_series_one_open_one_closed() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let names = Arc::new(Mutex::new((String::new(), String::new())));
    let seen = Arc::clone(&names);
    let registry = upstreams();
    let probe = Arc::clone(&registry);
    run(&recorder, async move {
        let down = Host::start(false).await;
        let up = Host::start(true).await;
        *seen.lock().unwrap() = (down.authority(), up.authority());
        let mut service = client(&registry);

        open(&mut service, &down).await;
        for _ in 0..3 {
            assert_eq!(get(&mut service, &up).await, Some(200));
            assert_eq!(get(&mut service, &down).await, None);
        }
        assert_eq!(down.hits.load(Ordering::SeqCst), 2);
        assert_eq!(up.hits.load(Ordering::SeqCst), 3);
    });
    let (down, up) = names.lock().unwrap().clone();
    let breaker = |host: &str| probe.get(host).breaker().unwrap().name().to_owned();
    assert_eq!((breaker(&down), breaker(&up)), (down.clone(), up.clone()));

    let recorded = recorded(&snapshotter);
    let mut expected = vec![down.clone(), up.clone()];
    expected.sort_unstable();
    assert_eq!(breakers(&recorded), expected, "no shared `circuit` series");
    assert_eq!(gauge(&recorded, &down), Some(CircuitState::Open.gauge()));
    assert_eq!(gauge(&recorded, &up), Some(CircuitState::Closed.gauge()));
    assert_eq!(transitions(&recorded, &down, "closed", "open"), Some(1.0));
    assert_eq!(transitions(&recorded, &up, "closed", "open"), None);
}

/// The same through the reqwest middleware's `per_authority`: the registry
/// names each host's breaker after the request URL's `host:port`, and the
/// healthy host's requests all go through while the other's are refused.
#[test]
fn the_middleware_gives_each_host_its_own_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let names = Arc::new(Mutex::new((String::new(), String::new())));
    let seen = Arc::clone(&names);
    let registry = upstreams();
    let probe = Arc::clone(&registry);
    run(&recorder, async move {
        let down = Host::start(false).await;
        let up = Host::start(true).await;
        *seen.lock().unwrap() = (down.authority(), up.authority());
        let client = middleware_client(&registry);

        assert_eq!(send(&client, &up).await, Some(200));
        open_through(&client, &down).await;
        for _ in 0..3 {
            assert_eq!(send(&client, &up).await, Some(200));
            assert_eq!(send(&client, &down).await, None);
        }
        assert_eq!(down.hits.load(Ordering::SeqCst), 2);
        assert_eq!(up.hits.load(Ordering::SeqCst), 4);
    });
    let (down, up) = names.lock().unwrap().clone();
    let breaker = |host: &str| probe.get(host).breaker().unwrap().name().to_owned();
    assert_eq!((breaker(&down), breaker(&up)), (down.clone(), up.clone()));

    let recorded = recorded(&snapshotter);
    let mut expected = vec![down.clone(), up.clone()];
    expected.sort_unstable();
    assert_eq!(breakers(&recorded), expected, "no shared `circuit` series");
    assert_eq!(gauge(&recorded, &down), Some(CircuitState::Open.gauge()));
    assert_eq!(gauge(&recorded, &up), Some(CircuitState::Closed.gauge()));
    assert_eq!(transitions(&recorded, &down, "closed", "open"), Some(1.0));
    assert_eq!(transitions(&recorded, &up, "closed", "open"), None);
}

/// The audit's case: host A opens while host B, open before, recovers and
/// closes. Under one shared name the gauge read 0 with A still open.
#[test]
fn one_host_closing_does_not_hide_another_that_is_open() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let names = Arc::new(Mutex::new((String::new(), String::new())));
    let seen = Arc::clone(&names);
    run(&recorder, async move {
        let a = Host::start(false).await;
        let b = Host::start(false).await;
        *seen.lock().unwrap() = (a.authority(), b.authority());
        let registry = upstreams();
        let mut service = client(&registry);

        open(&mut service, &b).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        open(&mut service, &a).await;
        b.up.store(true, Ordering::SeqCst);
        tokio::time::advance(Duration::from_secs(31)).await;
        // B's open minute is over, A's is not: B's probe succeeds and closes it.
        assert_eq!(get(&mut service, &b).await, Some(200));
        assert_eq!(get(&mut service, &a).await, None);
        let state = |host: &Host| registry.get(&host.authority()).breaker().unwrap().state();
        assert_eq!(
            (state(&a), state(&b)),
            (CircuitState::Open, CircuitState::Closed)
        );
    });
    let (a, b) = names.lock().unwrap().clone();

    let recorded = recorded(&snapshotter);
    assert_eq!(gauge(&recorded, &a), Some(CircuitState::Open.gauge()));
    assert_eq!(gauge(&recorded, &b), Some(CircuitState::Closed.gauge()));
    assert_eq!(gauge(&recorded, "circuit"), None);
    assert_eq!(transitions(&recorded, &a, "closed", "open"), Some(1.0));
    assert_eq!(transitions(&recorded, &a, "open", "half_open"), None);
    for (from, to) in [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ] {
        assert_eq!(
            transitions(&recorded, &b, from, to),
            Some(1.0),
            "{from} -> {to}"
        );
    }
}

/// A factory that names its breakers keeps its names: the registry names
/// only those left unnamed.
#[test]
fn a_name_given_by_the_factory_is_kept() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let name = Arc::new(Mutex::new(String::new()));
    let seen = Arc::clone(&name);
    run(&recorder, async move {
        let down = Host::start(false).await;
        *seen.lock().unwrap() = format!("api/{}", down.authority());
        let registry = Arc::new(Registry::new(64, |host: &str| {
            Upstream::new().with_breaker(
                CircuitBreaker::new()
                    .with_consecutive_failures(2)
                    .with_jitter(0.0)
                    .with_owned_name(format!("api/{host}")),
            )
        }));
        let mut service = client(&registry);
        open(&mut service, &down).await;
    });
    let name = name.lock().unwrap().clone();

    let recorded = recorded(&snapshotter);
    assert_eq!(breakers(&recorded), std::slice::from_ref(&name));
    assert_eq!(gauge(&recorded, &name), Some(CircuitState::Open.gauge()));
    assert_eq!(transitions(&recorded, &name, "closed", "open"), Some(1.0));
}
