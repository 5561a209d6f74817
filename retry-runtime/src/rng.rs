//! The random numbers behind jitter: a small, fast generator per thread.
//!
//! Jitter needs numbers that differ between clients, not secrecy, so each
//! thread runs wyrand (one multiply per number) seeded from the standard
//! library's per-process random keys. Tests that want a repeatable schedule
//! call [`seed_thread_rng`] first.

use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};

thread_local! {
    static STATE: Cell<u64> = Cell::new(fresh_seed());
}

fn fresh_seed() -> u64 {
    // `RandomState` draws its keys from the operating system once per thread
    // and varies them for every instance after that.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x5265_7472_7921);
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
