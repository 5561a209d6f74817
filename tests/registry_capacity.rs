//! A `Registry` never forgets an entry while it holds fewer than its
//! capacity, and once full forgets the least recently used: an upstream's
//! open breaker is not silently reset while there is room for it. (With
//! shards chosen by hash, 60 hosts in a registry of 64 lost their open
//! breakers in about a third of lookups: a shard filled on its own.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::CircuitBreaker;

/// A registry of `capacity` whose entries have a breaker each, and the
/// count of entries it has made.
fn counted(capacity: usize) -> (Arc<Registry>, Arc<AtomicUsize>) {
    let made = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&made);
    let registry = Registry::new(capacity, move |_host: &str| {
        counter.fetch_add(1, Ordering::Relaxed);
        Upstream::new().with_breaker(CircuitBreaker::new().with_consecutive_failures(5))
    });
    (Arc::new(registry), made)
}

fn is_open(registry: &Registry, host: &str) -> bool {
    registry.get(host).breaker().unwrap().acquire().is_err()
}

fn hosts(prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|n| format!("{prefix}-{n}.internal:443"))
        .collect()
}

/// The case: 60 hosts forced open in a registry of 64, looked up
/// 1,200 times, are found open every time; in 32 registries, since where
/// keys fall in a registry that hashes them changes with each.
#[test]
fn sixty_hosts_forced_open_in_a_registry_of_64_stay_open() {
    let hosts = hosts("down", 60);
    for _ in 0..32 {
        let (registry, made) = counted(64);
        for host in &hosts {
            registry.get(host).breaker().unwrap().force_open();
        }
        let mut found_closed = 0;
        for round in 0..20 {
            for n in 0..hosts.len() {
                let host = &hosts[(n * 7 + round) % hosts.len()];
                if !is_open(&registry, host) {
                    found_closed += 1;
                }
            }
        }
        assert_eq!(
            found_closed, 0,
            "of 1,200 lookups, {found_closed} found a host closed again"
        );
        assert_eq!(made.load(Ordering::Relaxed), 60);
        assert_eq!(registry.len(), 60);
    }
}

/// Under capacity, from 8 threads looking up the same hosts in different
/// orders: each host is made once (never forgotten, never made twice by a
/// race), and every forced-open breaker stays open.
#[test]
fn under_capacity_nothing_is_forgotten_from_eight_threads() {
    for (capacity, count) in [(16, 16), (64, 60), (256, 250), (1024, 1000)] {
        let (registry, made) = counted(capacity);
        let hosts = Arc::new(hosts("host", count));
        let threads: Vec<_> = (0..8_usize)
            .map(|thread| {
                let registry = Arc::clone(&registry);
                let hosts = Arc::clone(&hosts);
                std::thread::spawn(move || {
                    // Each thread opens every breaker (in an order of its
                    // own), so that any it finds closed after was made anew.
                    for n in 0..hosts.len() {
                        let host = &hosts[(n + thread * 7) % hosts.len()];
                        registry.get(host).breaker().unwrap().force_open();
                    }
                    for round in 0..10 {
                        for n in 0..hosts.len() {
                            let host = &hosts[(n * (2 * thread + 1) + round) % hosts.len()];
                            assert!(is_open(&registry, host), "{host} closed again");
                            assert!(registry.len() <= capacity);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(made.load(Ordering::Relaxed), count, "capacity {capacity}");
        assert_eq!(registry.len(), count);
        assert!(hosts.iter().all(|host| is_open(&registry, host)));
    }
}

/// Over capacity, from 8 threads each cycling through hosts of its own:
/// the registry never holds more than its capacity. Then, alone: of a full
/// registry, the least recently used entries are the ones new hosts push
/// out.
#[test]
fn over_capacity_the_count_stays_bounded_and_the_least_recent_goes() {
    let capacity = 64;
    let (registry, made) = counted(capacity);
    let threads: Vec<_> = (0..8_usize)
        .map(|thread| {
            let registry = Arc::clone(&registry);
            std::thread::spawn(move || {
                let own = hosts(&format!("thread{thread}"), 100);
                for round in 0..5 {
                    for host in &own {
                        drop(registry.get(host));
                        assert!(registry.len() <= capacity, "round {round}");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(registry.len(), capacity);

    // Fill with `old`, use the first half again, then make room for 32 new
    // hosts: the second half of `old`, used least recently, is what goes.
    let old = hosts("old", capacity);
    let new = hosts("new", capacity / 2);
    for host in &old {
        drop(registry.get(host));
    }
    for host in &old[..capacity / 2] {
        drop(registry.get(host));
    }
    for host in &new {
        drop(registry.get(host));
    }
    let before = made.load(Ordering::Relaxed);
    for host in old[..capacity / 2].iter().chain(&new) {
        drop(registry.get(host));
    }
    assert_eq!(
        made.load(Ordering::Relaxed),
        before,
        "an entry used more recently than the forgotten ones was forgotten"
    );
    assert_eq!(registry.len(), capacity);
    // And one of the second half is made anew.
    drop(registry.get(&old[capacity - 1]));
    assert_eq!(made.load(Ordering::Relaxed), before + 1);
}
