//! One circuit breaker and one retry budget per upstream: per host, or per
//! any key derived from the request. An entry is made on first use, from a
//! function you give; the registry holds at most a bounded number of them.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use retry_runtime::registry::{Registry, Upstream};
//! use retry_runtime::{CircuitBreaker, RetryBudget};
//!
//! let upstreams = Arc::new(Registry::new(1024, |_host: &str| {
//!     Upstream::new()
//!         .with_breaker(CircuitBreaker::new().with_consecutive_failures(5))
//!         .with_budget(RetryBudget::new(100, 0.1))
//! }));
//!
//! let payments = upstreams.get("payments.internal:443");
//! let users = upstreams.get("users.internal:443");
//! assert!(!Arc::ptr_eq(&payments, &upstreams.get("users.internal:443")));
//! assert!(Arc::ptr_eq(&users, &upstreams.get("users.internal:443")));
//! ```
//!
//! The tower layer and the reqwest middleware key by the request's
//! authority with `per_authority(registry)`, or by a key of yours with
//! `per_key(registry, |request| ..)`. With `#[retry]` or the closure
//! API, look the entry up yourself and name its parts:
//! `policy.on(is_transient).budget(upstream.budget().unwrap())`.
//!
//! # Names
//!
//! An [`Upstream`]'s breaker that the factory left unnamed takes its key as
//! its name: `tracing` events and the metrics' `breaker` label then say
//! which host's circuit opened, and the `retry_runtime_circuit_state` gauge
//! has one series per host. To name it otherwise, name it in the factory,
//! which is given the key:
//!
//! ```
//! use retry_runtime::registry::{Registry, Upstream};
//! use retry_runtime::CircuitBreaker;
//!
//! let upstreams = Registry::new(1024, |host: &str| {
//!     Upstream::new().with_breaker(CircuitBreaker::new().with_owned_name(format!("api/{host}")))
//! });
//! let unnamed = Registry::new(1024, |_host: &str| Upstream::new().with_breaker(CircuitBreaker::new()));
//!
//! assert_eq!(upstreams.get("users.internal:443").breaker().unwrap().name(), "api/users.internal:443");
//! assert_eq!(unnamed.get("users.internal:443").breaker().unwrap().name(), "users.internal:443");
//! ```
//!
//! Every key is then a series of its own, there (at closed, with the
//! feature `metrics`) from the key's first call: keep keys to hosts, or name
//! the breakers of unbounded keys (a user id) with a fixed name of your
//! own, `with_name("users")`, to keep the metrics' cardinality down. A
//! forgotten entry's series stays at its last value.
//!
//! # Guarantees
//!
//! - An entry is never forgotten while the registry holds fewer than
//!   `capacity` entries, and at most `capacity` are held.
//! - A full registry forgets the least recently used entry that no call is
//!   using (or, if every one is in use, the least recently used) before
//!   taking a new one, so that an upstream still being called keeps its
//!   breaker's state while others come and go; calls holding a forgotten
//!   entry keep using it. (Making room looks at every entry's last use.)
//! - A lookup takes one lock for a hash lookup, the entry's last use
//!   stamped and an `Arc` clone, and allocates nothing once the entry is
//!   made. `make` runs under the lock, once per
//!   key made. No lock is held while a caller uses its entry, and a
//!   poisoned lock is recovered, so a panicking `make` cannot wedge the
//!   registry.

use core::fmt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::{CircuitBreaker, RetryBudget};

/// What a registry holds per upstream: a breaker, a budget, or both.
#[derive(Debug, Default)]
pub struct Upstream {
    breaker: Option<CircuitBreaker>,
    budget: Option<RetryBudget>,
}

impl Upstream {
    /// Neither breaker nor budget.
    #[must_use]
    pub const fn new() -> Self {
        Upstream {
            breaker: None,
            budget: None,
        }
    }

    /// With a circuit breaker of its own.
    #[must_use]
    pub fn with_breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// With a retry budget of its own.
    #[must_use]
    pub fn with_budget(mut self, budget: RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Its circuit breaker, if it has one.
    #[must_use]
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// Its retry budget, if it has one.
    #[must_use]
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }
}

/// A bounded map from a key (a host, an authority, a tenant) to an
/// [`Upstream`] made on first use; see the [module docs](self).
pub struct Registry {
    entries: Mutex<Entries>,
    capacity: usize,
    make: Box<dyn Fn(&str) -> Upstream + Send + Sync>,
}

/// The entries, each with the tick of its last use: the least recently
/// used has the smallest.
#[derive(Default)]
struct Entries {
    by_key: HashMap<Arc<str>, (Arc<Upstream>, u64)>,
    /// The tick of the latest lookup.
    now: u64,
}

impl Registry {
    /// A registry of at most `capacity` entries (at least 1), each made by
    /// `make` from its key the first time the key is asked for. A breaker
    /// that `make` left unnamed is named after the key (see
    /// [Names](self#names)).
    pub fn new(capacity: usize, make: impl Fn(&str) -> Upstream + Send + Sync + 'static) -> Self {
        Registry {
            entries: Mutex::default(),
            capacity: capacity.max(1),
            make: Box::new(make),
        }
    }

    /// The entry for `key`, made now if there is none.
    pub fn get(&self, key: &str) -> Arc<Upstream> {
        let mut guard = self.lock();
        let entries = &mut *guard;
        entries.now = entries.now.wrapping_add(1);
        if let Some((value, used)) = entries.by_key.get_mut(key) {
            *used = entries.now;
            return Arc::clone(value);
        }
        let key: Arc<str> = key.into();
        let mut upstream = (self.make)(&key);
        if let Some(breaker) = &mut upstream.breaker {
            // Named after its key unless `make` named it, and its state
            // gauge set (closed), so that each key has its series from its
            // first call.
            breaker.made_for(&key);
        }
        let value = Arc::new(upstream);
        if entries.by_key.len() >= self.capacity {
            // The least recently used entry that no call holds, or the least
            // recently used if every one is held.
            let oldest = entries
                .by_key
                .iter()
                .min_by_key(|(_, (value, used))| (Arc::strong_count(value) > 1, *used));
            if let Some(oldest) = oldest.map(|(key, _)| Arc::clone(key)) {
                entries.by_key.remove(&oldest);
            }
        }
        let entry = (Arc::clone(&value), entries.now);
        entries.by_key.insert(key, entry);
        value
    }

    /// The entries held now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The key of an upstream at `host` and `port`: `host:port` with the host
/// in lower case, or the host alone without a port, as the tower layer's
/// and the middleware's `per_authority` key their entries.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn host_key(host: &str, port: Option<impl fmt::Display>) -> String {
    // One allocation: room for `:` and a port of five digits.
    let mut key = String::with_capacity(host.len().saturating_add(6));
    key.extend(host.chars().map(|c| c.to_ascii_lowercase()));
    if let Some(port) = port {
        use fmt::Write as _;
        let _ = write!(key, ":{port}");
    }
    key
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A registry of `capacity` with entries of nothing, and the count of
    /// entries it has made.
    fn counted(capacity: usize) -> (Registry, Arc<AtomicU32>) {
        let made = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&made);
        let registry = Registry::new(capacity, move |_: &str| {
            counter.fetch_add(1, Ordering::Relaxed);
            Upstream::new()
        });
        (registry, made)
    }

    #[test]
    fn one_entry_per_key_made_on_first_use() {
        let (registry, made) = counted(64);
        let a = registry.get("a.example:80");
        assert!(Arc::ptr_eq(&a, &registry.get("a.example:80")));
        drop(registry.get("bb"));
        assert_eq!(made.load(Ordering::Relaxed), 2);
        assert_eq!(registry.len(), 2);
    }

    #[test]
    fn an_upstreams_unnamed_breaker_is_named_after_its_key() {
        let registry = Registry::new(64, |key: &str| {
            let breaker = CircuitBreaker::new();
            Upstream::new().with_breaker(if key == "named" {
                breaker.with_name("fixed")
            } else {
                breaker
            })
        });
        let name = |key| registry.get(key).breaker().unwrap().name().to_owned();
        assert_eq!(name("users.internal:443"), "users.internal:443");
        assert_eq!(name("named"), "fixed");
        let budget_only = Registry::new(4, |_: &str| {
            Upstream::new().with_budget(RetryBudget::new(10, 0.1))
        });
        assert!(budget_only.get("a").breaker().is_none());
    }

    /// Every key is kept up to the capacity, however the keys hash.
    #[test]
    fn keys_up_to_the_capacity_are_all_kept() {
        for capacity in [1, 2, 16, 17, 31, 32] {
            let (registry, made) = counted(capacity);
            let keys: Vec<String> = (0..capacity).map(|n| format!("host-{n}:443")).collect();
            for _ in 0..3 {
                for key in &keys {
                    drop(registry.get(key));
                }
            }
            assert_eq!(
                made.load(Ordering::Relaxed) as usize,
                keys.len(),
                "capacity {capacity}"
            );
        }
    }

    #[test]
    fn the_least_recently_used_entry_is_forgotten_first() {
        let (registry, made) = counted(3);
        drop((registry.get("a"), registry.get("b"), registry.get("c")));
        drop(registry.get("a")); // used again: "b" is now the least recent
        drop(registry.get("d")); // forgets "b", not "a", made first
        assert_eq!(made.load(Ordering::Relaxed), 4);
        drop((registry.get("a"), registry.get("c"), registry.get("d")));
        assert_eq!(made.load(Ordering::Relaxed), 4);
        drop(registry.get("b"));
        assert_eq!(made.load(Ordering::Relaxed), 5);
        assert_eq!(registry.len(), 3);
    }

    /// With room for two, a host called between each new host is never the
    /// one forgotten.
    #[test]
    fn an_entry_looked_up_after_the_newest_is_kept_over_it() {
        let made = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&made);
        let registry = Registry::new(2, move |key: &str| {
            if key == "called" {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Upstream::new()
        });
        drop(registry.get("called"));
        for n in 0..64 {
            drop(registry.get(&format!("passing-{n}")));
            drop(registry.get("called"));
        }
        assert_eq!(
            made.load(Ordering::Relaxed),
            1,
            "the host being called was forgotten"
        );
    }

    /// Any capacity, `usize::MAX` included, makes a registry that works and
    /// prints.
    #[test]
    fn the_largest_capacities_work_and_print() {
        for capacity in [usize::MAX, usize::MAX - 1, usize::MAX / 2 + 1] {
            let (registry, made) = counted(capacity);
            drop(registry.get("a.example:80"));
            assert_eq!(made.load(Ordering::Relaxed), 1);
            assert!(format!("{registry:?}").contains("len: 1"));
        }
    }

    #[test]
    fn the_size_stays_bounded_and_entries_in_use_are_kept() {
        let (registry, _) = counted(4);
        let held = registry.get("held");
        for n in 0..100 {
            registry.get(&format!("host-{n}"));
        }
        assert!(registry.len() <= 4);
        assert!(Arc::ptr_eq(&held, &registry.get("held")));
    }

    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    #[test]
    fn host_keys_are_host_and_port_in_lower_case() {
        assert_eq!(
            host_key("Payments.Internal", Some(443)),
            "payments.internal:443"
        );
        assert_eq!(host_key("h", Some(0)), "h:0");
        assert_eq!(host_key("h", Some(65535)), "h:65535");
        assert_eq!(host_key("h", Some("99999")), "h:99999");
        assert_eq!(host_key("[::1]", Some(8080)), "[::1]:8080");
        assert_eq!(host_key("H", None::<u16>), "h");
        let long = "a".repeat(300);
        assert_eq!(host_key(&long, Some(1)), format!("{long}:1"));
    }

    /// When every entry is in use, the least recently used goes all the
    /// same: the bound holds.
    #[test]
    fn with_every_entry_in_use_the_least_recent_goes() {
        let (registry, made) = counted(2);
        let held = [registry.get("a"), registry.get("b"), registry.get("c")];
        assert_eq!(registry.len(), 2);
        assert!(Arc::ptr_eq(&held[2], &registry.get("c")));
        assert!(Arc::ptr_eq(&held[1], &registry.get("b")));
        assert!(!Arc::ptr_eq(&held[0], &registry.get("a")));
        assert_eq!(made.load(Ordering::Relaxed), 4);
    }
}
