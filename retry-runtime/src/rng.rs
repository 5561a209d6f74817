//! The random numbers behind jitter: a small, fast generator per thread.
//!
//! Jitter needs numbers that differ between clients, not secrecy, so each
//! thread runs wyrand (one multiply per number) seeded once from the
//! operating system's random source, or the JS host's `crypto` on
//! `wasm32-unknown-unknown`: two processes, or two browser tabs, draw
//! different waits. Tests that want a repeatable schedule call
//! [`seed_thread_rng`] first. Idempotency keys do not come from here: see
//! [`crate::idempotency`].

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(getrandom::u64().unwrap_or_else(|_| fallback_seed()));
}

/// A seed for a platform whose random source failed (a JS host without the
/// Web Crypto API, such as node before 19): the standard library's
/// per-process hash keys, mixed with the monotonic clock, the wall clock
/// and, on a JS host, the engine's `Math.random()`. A JS host has no hash
/// keys to draw (they are the same in every client) and its monotonic
/// clock starts near zero in each, so without the last two every client
/// drew the same first seed there. Different per client; never a panic.
#[cold]
pub(crate) fn fallback_seed() -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x5265_7472_7921);
    crate::timer::real_now().hash(&mut hasher);
    crate::timer::system_now().hash(&mut hasher);
    // Two draws of the engine's `Math.random()`, which every JS engine
    // seeds from the operating system in each process: not cryptographic,
    // but different in every client.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    for _ in 0..2 {
        hasher.write_u64(js_sys::Math::random().to_bits());
    }
    hasher.finish()
}

/// Makes the jitter drawn on the current thread repeatable from now on.
///
/// Every retry loop polled on this thread draws from the same sequence, so a
/// test on a current-thread runtime (`#[tokio::test]`) that seeds first sees
/// the same waits on every run.
///
/// ```
/// retry_runtime::seed_thread_rng(7);
/// let policy = retry_runtime::Policy::new();
/// let first = policy.wait(0, policy.base());
/// retry_runtime::seed_thread_rng(7);
/// assert_eq!(policy.wait(0, policy.base()), first);
/// ```
pub fn seed_thread_rng(seed: u64) {
    STATE.with(|state| state.set(seed));
}

/// The next number from this thread's generator, uniform over all of `u64`.
pub(crate) fn next_u64() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let product = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        // The high and low halves folded together; truncation is the point.
        #[allow(clippy::cast_possible_truncation)]
        let folded = (product >> 64) as u64 ^ product as u64;
        folded
    })
}
