//! The closed circuit's record of recent outcomes, and the rule that opens
//! it: a ring of time buckets, and the failures in a row.

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

/// The window is a ring of this many time buckets.
pub(super) const BUCKETS: usize = 10;

// A bucket word. Bits 40-63: the bucket's number (time / bucket width,
// truncated), so a bucket left from an earlier turn of the ring is seen as
// stale. Bits 20-39: failures. Bits 0-19: calls. Counts saturate together.
const STAMP_SHIFT: u32 = 40;
const STAMP_MASK: u64 = 0xff_ffff;
const FAILURE_SHIFT: u32 = 20;
const CALLS_MASK: u64 = 0xf_ffff;

/// When the circuit opens while closed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Thresholds {
    /// The width of a bucket in milliseconds, at least 1.
    pub(super) bucket_ms: u64,
    /// The fewest finished calls in the window before the ratio is judged.
    pub(super) min_calls: u64,
    /// The failure ratio, in thousandths.
    pub(super) failure_ratio: u64,
    /// Failures in a row that open the circuit whatever the window holds.
    pub(super) consecutive_failures: u64,
}

impl Thresholds {
    /// The defaults: a 10 s window, 20 calls, half of them failed, or 10
    /// failures in a row.
    pub(super) const DEFAULT: Thresholds = Thresholds {
        bucket_ms: 1000,
        min_calls: 20,
        failure_ratio: 500,
        consecutive_failures: 10,
    };
}

/// The outcomes of the last [`BUCKETS`] buckets, and the failures in a row.
#[derive(Debug)]
pub(super) struct Window {
    buckets: [AtomicU64; BUCKETS],
    /// Failures in a row since the last success.
    streak: AtomicU64,
}

impl Window {
    #[cfg(not(loom))]
    pub(super) const fn new() -> Self {
        Window {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            streak: AtomicU64::new(0),
        }
    }

    #[cfg(loom)]
    pub(super) fn new() -> Self {
        Window {
            buckets: core::array::from_fn(|_| AtomicU64::new(0)),
            streak: AtomicU64::new(0),
        }
    }

    /// Counts an outcome that finished at `now` (milliseconds), and says
    /// whether the circuit should open.
    pub(super) fn record(&self, rules: &Thresholds, now: u64, success: bool) -> bool {
        let index = now / rules.bucket_ms;
        let stamp = index & STAMP_MASK;
        // The remainder is below BUCKETS, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let slot = &self.buckets[(index % BUCKETS as u64) as usize];
        let failed = u64::from(!success);
        let mut bucket = slot.load(Ordering::Relaxed);
        loop {
            let (calls, failures) = if bucket >> STAMP_SHIFT == stamp {
                (bucket & CALLS_MASK, (bucket >> FAILURE_SHIFT) & CALLS_MASK)
            } else {
                (0, 0)
            };
            if calls == CALLS_MASK {
                break;
            }
            let next =
                (stamp << STAMP_SHIFT) | ((failures + failed) << FAILURE_SHIFT) | (calls + 1);
            match slot.compare_exchange_weak(bucket, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => bucket = actual,
            }
        }
        if success {
            // Read first: a store on every success would bounce the cache
            // line between cores for nothing.
            if self.streak.load(Ordering::Relaxed) != 0 {
                self.streak.store(0, Ordering::Relaxed);
            }
            return false;
        }
        // A u64 of failures does not wrap in practice; if it did, the
        // circuit would only open a little later.
        let streak = self.streak.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (calls, failures) = self.sum(stamp);
        streak >= rules.consecutive_failures
            || (calls >= rules.min_calls && failures * 1000 >= rules.failure_ratio * calls)
    }

    /// Calls and failures in the buckets of the window ending with bucket
    /// `stamp`.
    fn sum(&self, stamp: u64) -> (u64, u64) {
        self.buckets
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|bucket| {
                (stamp.wrapping_sub(bucket >> STAMP_SHIFT) & STAMP_MASK) < BUCKETS as u64
            })
            .fold((0, 0), |(calls, failures), bucket| {
                (
                    calls + (bucket & CALLS_MASK),
                    failures + ((bucket >> FAILURE_SHIFT) & CALLS_MASK),
                )
            })
    }

    /// Forgets every outcome: the circuit closed.
    pub(super) fn clear(&self) {
        for slot in &self.buckets {
            slot.store(0, Ordering::Relaxed);
        }
        self.streak.store(0, Ordering::Relaxed);
    }
}
