//! The `tracing` events of per-host breakers name their host: two real axum
//! servers on 127.0.0.1 behind the tower layer with one breaker per
//! authority, which the registry names after it. Alone in its test binary:
//! tracing caches per call site whether anyone listens.

#[path = "support/servers.rs"]
mod servers;

#[path = "support/hosts.rs"]
mod hosts;

#[path = "support/events.rs"]
mod events;

use std::sync::atomic::Ordering;
use std::time::Duration;

use events::Events;
use hosts::{client, get, open, upstreams, Host};

/// The breakers' `tracing` events name their host.
#[tokio::test(start_paused = true)]
async fn the_breakers_events_name_their_host() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = tracing::subscriber::set_default(subscriber);

    let a = Host::start(false).await;
    let b = Host::start(false).await;
    let registry = upstreams();
    let mut service = client(&registry);
    open(&mut service, &b).await;
    open(&mut service, &a).await;
    b.up.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(get(&mut service, &b).await, Some(200));

    let circuit: Vec<String> = events
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|event| event.contains("message=circuit"))
        .cloned()
        .collect();
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
