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
//! - A lookup of a key already present takes a read lock on one of the
//!   shards (chosen by the key's hash: one shard per 16 entries of
//!   capacity, up to 16), clones an `Arc` and releases it: readers of
//!   different keys rarely meet, and never wait for each other.
//! - At most `capacity` entries (rounded up to a multiple of the shard
//!   count) are held; from a capacity of 16 on, a shard has room for at
//!   least 16. A shard that is full forgets the least recently used of the
//!   entries no call is using (or, if every one is in use, the least
//!   recently used) before taking a new one, so an upstream still being
//!   called keeps its breaker's state while others come and go; calls
//!   holding a forgotten entry keep using it. Recency is told by the
//!   shard's new entries: entries looked up since its latest new one are
//!   more recent than it and equally recent among themselves, so that a
//!   lookup writes nothing another key's reads (at most one store to its
//!   own entry per new entry in the shard).
//! - No lock is held while a caller uses its entry, and a poisoned lock is
//!   recovered, so a panicking `make` cannot wedge the registry.

use core::any::Any;
use core::fmt;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::{CircuitBreaker, RetryBudget};

/// The most shards a registry has.
const SHARDS: usize = 16;

/// The fewest entries a shard holds room for (in a registry of at least
/// this capacity): a registry has one shard per this many entries of its
/// capacity, up to [`SHARDS`], so that two keys that hash to the same shard
/// do not evict each other while most of the capacity stands free.
const PER_SHARD: usize = 16;

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
    pub fn with_breaker(self, breaker: CircuitBreaker) -> Self {
        Upstream {
            breaker: Some(breaker),
            budget: self.budget,
        }
    }

    /// With a retry budget of its own.
    #[must_use]
    pub fn with_budget(self, budget: RetryBudget) -> Self {
        Upstream {
            breaker: self.breaker,
            budget: Some(budget),
        }
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

    /// Names its breaker after `key`, unless the factory named it, and sets
    /// its state gauge (closed), so that each key has its series from its
    /// first call.
    fn made_for(&mut self, key: &str) {
        if let Some(breaker) = &mut self.breaker {
            breaker.name_by_default(key);
            breaker.publish_state();
        }
    }
}

/// An entry just made for `key`: an [`Upstream`]'s unnamed breaker takes the
/// key as its name (see [`Upstream::made_for`]); any other type is left as
/// it is. (A stand-in for specialization: the type test is resolved at
/// compile time.)
fn made<T: 'static>(mut entry: T, key: &str) -> T {
    if let Some(upstream) = (&mut entry as &mut dyn Any).downcast_mut::<Upstream>() {
        upstream.made_for(key);
    }
    entry
}

type Make<T> = Box<dyn Fn(&str) -> T + Send + Sync>;

/// A bounded map from a key (a host, an authority, a tenant) to an entry
/// made on first use; see the [module docs](self).
pub struct Registry<T = Upstream> {
    shards: Box<[RwLock<Shard<T>>]>,
    per_shard: usize,
    hasher: RandomState,
    make: Make<T>,
}

struct Shard<T> {
    entries: HashMap<Box<str>, Entry<T>>,
    /// Entries made so far in this shard: the clock that tells the least
    /// recently used entry, moved only by a new entry, so that a lookup
    /// reads it and writes nothing shared with other keys.
    ticks: AtomicU64,
}

struct Entry<T> {
    value: Arc<T>,
    /// When the entry was made or last looked up, in the shard's ticks:
    /// `2t` for the entry made as the shard's `t`th, `2t + 1` for a lookup
    /// while that is the newest, so that a lookup ranks above the entry
    /// made before it. Written only when it moved (at most once per new
    /// entry in the shard).
    used: AtomicU64,
}

/// The `used` of an entry made as its shard's `tick`th.
fn made_at(tick: u64) -> u64 {
    tick.wrapping_mul(2)
}

/// The `used` of a lookup while the shard's newest entry is its `tick`th:
/// after that entry was made.
fn looked_up_at(tick: u64) -> u64 {
    made_at(tick) | 1
}

impl<T> Registry<T> {
    /// A registry of at most `capacity` entries (at least 1), each made by
    /// `make` from its key the first time the key is asked for. An
    /// [`Upstream`]'s breaker that `make` left unnamed is named after the
    /// key (see [Names](self#names)).
    pub fn new(capacity: usize, make: impl Fn(&str) -> T + Send + Sync + 'static) -> Self
    where
        T: 'static,
    {
        let capacity = capacity.max(1);
        let shards = (capacity / PER_SHARD).clamp(1, SHARDS);
        Registry {
            shards: (0..shards)
                .map(|_| {
                    RwLock::new(Shard {
                        entries: HashMap::new(),
                        ticks: AtomicU64::new(0),
                    })
                })
                .collect(),
            per_shard: capacity.div_ceil(shards),
            hasher: RandomState::new(),
            make: Box::new(move |key| made(make(key), key)),
        }
    }

    /// The entry for `key`, made now if there is none.
    pub fn get(&self, key: &str) -> Arc<T> {
        let shard = self.shard(key);
        {
            let shard = shard.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = shard.entries.get(key) {
                entry.touch(&shard);
                return Arc::clone(&entry.value);
            }
        }
        let mut shard = shard.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = shard.entries.get(key) {
            entry.touch(&shard);
            return Arc::clone(&entry.value);
        }
        if shard.entries.len() >= self.per_shard {
            shard.forget_one();
        }
        let value = Arc::new((self.make)(key));
        let tick = shard.ticks.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let used = AtomicU64::new(made_at(tick));
        shard.entries.insert(
            key.into(),
            Entry {
                value: Arc::clone(&value),
                used,
            },
        );
        value
    }

    /// The entries held now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                shard
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entries
                    .len()
            })
            .sum()
    }

    /// Whether no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &str) -> &RwLock<Shard<T>> {
        let hash = self.hasher.hash_one(key);
        // The shard count is at most 16, so the remainder fits in a usize.
        #[allow(clippy::cast_possible_truncation)]
        let index = (hash % self.shards.len() as u64) as usize;
        &self.shards[index]
    }
}

impl<T> Entry<T> {
    /// Marks the entry used now: a load of the shard's clock, and a store
    /// only when the entry was last used before the shard's latest new
    /// entry was made (or is that entry).
    fn touch(&self, shard: &Shard<T>) {
        let now = looked_up_at(shard.ticks.load(Ordering::Relaxed));
        if self.used.load(Ordering::Relaxed) != now {
            self.used.store(now, Ordering::Relaxed);
        }
    }
}

impl<T> Shard<T> {
    /// Forgets an entry no call holds, the least recently used of those;
    /// or, if every entry is in use, the least recently used.
    fn forget_one(&mut self) {
        let least_recent = |entries: &mut dyn Iterator<Item = (&Box<str>, &Entry<T>)>| {
            entries
                .min_by_key(|(_, entry)| entry.used.load(Ordering::Relaxed))
                .map(|(key, _)| key.clone())
        };
        let victim = least_recent(
            &mut self
                .entries
                .iter()
                .filter(|(_, entry)| Arc::strong_count(&entry.value) == 1),
        )
        .or_else(|| least_recent(&mut self.entries.iter()));
        if let Some(key) = victim {
            self.entries.remove(&key);
        }
    }
}

impl<T> fmt::Debug for Registry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("len", &self.len())
            .field(
                "capacity",
                &self.per_shard.saturating_mul(self.shards.len()),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_key_made_on_first_use() {
        let registry = Registry::new(64, |key: &str| key.len());
        let a = registry.get("a.example:80");
        assert!(Arc::ptr_eq(&a, &registry.get("a.example:80")));
        assert_eq!(*registry.get("bb"), 2);
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

    /// Half the capacity in use: no key is forgotten, however the keys
    /// hash, since a shard has room for at least 16 and these capacities
    /// have one or two shards. (With a shard per one or two entries, as
    /// when every registry of 16 or more had 16 shards, keys that hashed
    /// to the same shard evicted each other in most runs.)
    #[test]
    fn keys_within_half_the_capacity_are_all_kept() {
        use std::sync::atomic::AtomicU32;
        for capacity in [16, 17, 31, 32] {
            let made = Arc::new(AtomicU32::new(0));
            let counter = Arc::clone(&made);
            let registry = Registry::new(capacity, move |key: &str| {
                counter.fetch_add(1, Ordering::Relaxed);
                key.to_owned()
            });
            let keys: Vec<String> = (0..capacity / 2).map(|n| format!("host-{n}:443")).collect();
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
        use std::sync::atomic::AtomicU32;
        let made = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&made);
        let registry = Registry::new(3, move |key: &str| {
            counter.fetch_add(1, Ordering::Relaxed);
            key.to_owned()
        });
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

    /// An entry looked up after the shard's newest entry was made is more
    /// recent than that entry, as the module docs say: with room for two, a
    /// host called between each new host is never the one forgotten. (The
    /// two were tied, and the hash order chose: the host still being called
    /// was forgotten in about every other round.)
    #[test]
    fn an_entry_looked_up_after_the_newest_is_kept_over_it() {
        use std::sync::atomic::AtomicU32;
        // Many registries, each with a hash order of its own: which of two
        // tied entries comes first is fixed by the keys' places in one.
        for _ in 0..32 {
            let made = Arc::new(AtomicU32::new(0));
            let counter = Arc::clone(&made);
            let registry = Registry::new(2, move |key: &str| {
                if key == "called" {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                key.to_owned()
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
    }

    /// Any capacity, `usize::MAX` included, makes a registry that works and
    /// prints: the capacity it reports, rounded up to a multiple of the
    /// shard count, overflowed (a panic in a debug build).
    #[test]
    fn the_largest_capacities_work_and_print() {
        for capacity in [usize::MAX, usize::MAX - 1, usize::MAX / 2 + 1] {
            let registry = Registry::new(capacity, |key: &str| key.len());
            assert_eq!(*registry.get("a.example:80"), 12);
            assert!(format!("{registry:?}").contains("len: 1"));
        }
    }

    #[test]
    fn the_size_stays_bounded_and_entries_in_use_are_kept() {
        let registry = Registry::new(4, |key: &str| key.to_owned());
        let held = registry.get("held");
        for n in 0..100 {
            registry.get(&format!("host-{n}"));
        }
        assert!(registry.len() <= 4);
        assert!(Arc::ptr_eq(&held, &registry.get("held")));
    }
}
