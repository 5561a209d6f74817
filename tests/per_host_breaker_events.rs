//! The `tracing` events of per-host breakers name their host: two real axum
//! servers on 127.0.0.1 behind the tower layer or the reqwest middleware
//! with one breaker per authority, which the registry names after it. In a
//! test binary of their own, each test with its subscriber: tracing caches
//! per call site whether anyone listens.

#[path = "support/servers.rs"]
mod servers;

#[path = "support/hosts.rs"]
mod hosts;

#[path = "support/events.rs"]
mod events;

use std::sync::atomic::Ordering;
use std::time::Duration;

use events::Events;
use hosts::{client, get, middleware_client, open, open_through, send, upstreams, Host};

/// The breakers' `tracing` events name their host.
#[tokio::test(start_paused = true)]
async fn the_breakers_events_name_their_host() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = events::capture(subscriber);

    let a = Host::start(false).await;
    let b = Host::start(false).await;
    let registry = upstreams();
    let mut service = client(&registry);
    open(&mut service, &b).await;
    open(&mut service, &a).await;
    b.up.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(get(&mut service, &b).await, Some(200));

    let circuit = circuit(&events);
    let (a, b) = (a.authority(), b.authority());
    assert_eq!(
        circuit,
        [
            format!("WARN message=circuit opened; refusing calls breaker=\"{b}\" open_ms=60000"),
            format!("WARN message=circuit opened; refusing calls breaker=\"{a}\" open_ms=60000"),
            format!("INFO message=circuit half-open; probing breaker=\"{b}\" probes=1"),
            format!("INFO message=circuit closed breaker=\"{b}\""),
        ]
    );
}

/// The same through the reqwest middleware's `per_authority`: the one
/// breaker that opens names its host, and the healthy host's breaker has
/// nothing to report.
#[tokio::test(start_paused = true)]
async fn through_the_middleware_the_events_name_their_host() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = events::capture(subscriber);

    let down = Host::start(false).await;
    let up = Host::start(true).await;
    let registry = upstreams();
    let client = middleware_client(&registry);
    assert_eq!(send(&client, &up).await, Some(200));
    open_through(&client, &down).await;
    assert_eq!(send(&client, &up).await, Some(200));

    let down = down.authority();
    assert_eq!(
        circuit(&events),
        [format!(
            "WARN message=circuit opened; refusing calls breaker=\"{down}\" open_ms=60000"
        )]
    );
}

/// The breakers' events, in order.
fn circuit(events: &Events) -> Vec<String> {
    events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|event| event.contains("message=circuit"))
        .cloned()
        .collect()
}
