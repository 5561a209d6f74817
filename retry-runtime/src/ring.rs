//! A sliding window of two counts: a ring of [`BUCKETS`] time buckets, each
//! one atomic word, lock-free. Below the breaker and the budget, which count
//! different things in it: a closed breaker its calls and failures
//! (`breaker/window.rs`), an adaptive one its requests and accepts, a
//! ratio budget its first attempts and retries.
//!
//! # Counting without the clock
//!
//! The ring keeps `tick`, the bucket of its latest clock reading, and
//! [`count_latest`](Ring::count_latest) counts a call into that bucket
//! without reading the clock: a load and a compare-and-swap. Whoever reads
//! the clock moves `tick` on (only forward): every [`add`](Ring::add), and
//! a `count_latest` that finds the bucket must roll over (it is new, empty,
//! cleared, or left from an earlier turn of the ring) or is at its
//! [`READ_EVERY`]th call (or full). A call counted so may sit in an earlier
//! bucket than its own, so leave the window early, never late: at most
//! `READ_EVERY - 1` of them (plus those racing a reading) since the latest
//! reading, and only when calls are sparse (fewer than `READ_EVERY` in a
//! bucket's width) or stop and start. The breaker's closed circuit counts
//! its successes so (see `breaker/window.rs` for why and what it costs).
//!
//! One more rule keeps concurrent readings apart: a count whose reading is
//! older than the tick (another thread read a later time meanwhile) goes to
//! the tick's bucket, so that no one rolls a bucket back to an older one,
//! erasing the counts of the newer (the loom model `loom_breaker.rs` checks
//! it).

use core::time::Duration;

// The atomics of the crate's lock-free counts (the ring, the breaker's
// state, the budget): loom's under its models (`tests/loom_*.rs`).
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

/// The window is a ring of this many time buckets.
pub(crate) const BUCKETS: usize = 10;

/// [`Ring::count_latest`] reads the clock at the first call of a bucket and
/// at every this many after it (a power of two, so the test is a mask).
pub(crate) const READ_EVERY: u64 = 16;

// A bucket word. Bits 40-63: the bucket's number (time / bucket width,
// truncated), so a bucket left from an earlier turn of the ring is seen as
// stale. Bits 20-39: the second count. Bits 0-19: the first. Counts
// saturate together.
const STAMP_SHIFT: u32 = 40;
const STAMP_MASK: u64 = 0xff_ffff;
const SECOND_SHIFT: u32 = 20;
const COUNT_MASK: u64 = 0xf_ffff;

// The tick: the bucket's number above SLOT_BITS, its place in the ring
// (number % BUCKETS) below; numbers past NUMBER_MAX (some 36 million years
// of 1 ms buckets) stay there.
const SLOT_BITS: u32 = 4;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const NUMBER_MAX: u64 = u64::MAX >> SLOT_BITS;

/// The first and the second count of a bucket word.
fn counts_of(bucket: u64) -> (u64, u64) {
    (bucket & COUNT_MASK, (bucket >> SECOND_SHIFT) & COUNT_MASK)
}

/// A count of milliseconds, saturating: a window's, a breaker's open
/// periods.
pub(crate) const fn millis(ms: u128) -> u64 {
    if ms > u64::MAX as u128 {
        u64::MAX
    } else {
        ms as u64
    }
}

/// `value` within `[low, high]`, since `Ord::clamp` is not `const`: what
/// the breaker's setters keep to (a ratio to `[0, 1]` in thousandths, a
/// count to `[1, COUNT_MAX]`), and a bucket's width to at least 1.
pub(crate) const fn clamp(value: u64, low: u64, high: u64) -> u64 {
    if value < low {
        low
    } else if value > high {
        high
    } else {
        value
    }
}

/// Two counts over the last [`BUCKETS`] buckets of `bucket_ms`.
#[derive(Debug)]
pub(crate) struct Ring {
    /// The width of a bucket in milliseconds, at least 1 (see
    /// [`Ring::bucket_ms`]); 0 for a ring its owner does not use (a budget
    /// on gRPC's rule).
    pub(crate) bucket_ms: u64,
    buckets: [AtomicU64; BUCKETS],
    /// The bucket of the latest clock reading, as its number shifted left
    /// by [`SLOT_BITS`] beside its place in the ring, so that
    /// [`count_latest`](Self::count_latest) finds its bucket without a
    /// division. Only ever moved forward.
    tick: AtomicU64,
}

impl Ring {
    #[cfg(not(loom))]
    pub(crate) const fn new(bucket_ms: u64) -> Self {
        Ring {
            bucket_ms,
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            tick: AtomicU64::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(bucket_ms: u64) -> Self {
        Ring {
            bucket_ms,
            buckets: core::array::from_fn(|_| AtomicU64::new(0)),
            tick: AtomicU64::new(0),
        }
    }

    /// The width of a bucket of a `window`, a tenth of it, in milliseconds
    /// (at least 1, saturating).
    pub(crate) const fn bucket_ms(window: Duration) -> u64 {
        clamp(millis(window.as_millis() / BUCKETS as u128), 1, u64::MAX)
    }

    /// Adds one to the first count of the bucket of the latest clock
    /// reading, without reading the clock. `false` when the clock must be
    /// read, and [`add`](Self::add) called, instead: the bucket is new (the
    /// window must roll over), at its [`READ_EVERY`]th call, or full.
    /// Nothing is counted then.
    #[inline]
    pub(crate) fn count_latest(&self) -> bool {
        let tick = self.tick.load(Ordering::Relaxed);
        let stamp = (tick >> SLOT_BITS) & STAMP_MASK;
        // Masked to SLOT_BITS, so the cast is exact; below BUCKETS by
        // construction, and a tick that were not would send us to the clock.
        #[allow(clippy::cast_possible_truncation)]
        let Some(slot) = self.buckets.get((tick & SLOT_MASK) as usize) else {
            return false;
        };
        let mut bucket = slot.load(Ordering::Relaxed);
        loop {
            let count = bucket & COUNT_MASK;
            // The count cannot carry into the second: it is below COUNT_MASK.
            if bucket >> STAMP_SHIFT != stamp
                || count.is_multiple_of(READ_EVERY)
                || count == COUNT_MASK
            {
                return false;
            }
            match slot.compare_exchange_weak(
                bucket,
                bucket + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => bucket = actual,
            }
        }
    }

    /// Adds `first` and `second` to the counts of the bucket of `now`
    /// (milliseconds, the time just read), or of a later reading's (see the
    /// module's comment), and returns that bucket's stamp, for
    /// [`sum`](Self::sum).
    ///
    /// Whoever writes a bucket has moved the tick to it first (release, with
    /// the bucket's write), and whoever finds a bucket that is not theirs
    /// reads the tick again (after an acquire of the bucket) before taking
    /// the bucket for older.
    pub(crate) fn add(&self, now: u64, first: u64, second: u64) -> u64 {
        let mut index = self.index(now);
        // The latest reading, as the tick of its bucket (ordered as the
        // numbers are). Read first: a write on every reading would bounce
        // the cache line for nothing.
        let number = index.min(NUMBER_MAX);
        let tick = (number << SLOT_BITS) | (number % BUCKETS as u64);
        if self.tick.load(Ordering::Relaxed) < tick {
            self.tick.fetch_max(tick, Ordering::Relaxed);
        }
        let (mut slot, mut bucket) = self.bucket(index);
        loop {
            let stamp = index & STAMP_MASK;
            let (a, b) = if bucket >> STAMP_SHIFT == stamp {
                counts_of(bucket)
            } else {
                let moved_on = self.latest();
                if moved_on > index {
                    // A later reading took the ring on since ours.
                    index = moved_on;
                    (slot, bucket) = self.bucket(index);
                    continue;
                }
                // A bucket older than ours (or emptied): rolled over.
                (0, 0)
            };
            let (a, b) = ((a + first).min(COUNT_MASK), (b + second).min(COUNT_MASK));
            let next = (stamp << STAMP_SHIFT) | (b << SECOND_SHIFT) | a;
            if next == bucket {
                break;
            }
            match slot.compare_exchange_weak(bucket, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(actual) => bucket = actual,
            }
        }
        index & STAMP_MASK
    }

    /// Both counts in the window ending with the bucket of `now`, or of the
    /// latest reading if later.
    pub(crate) fn counts(&self, now: u64) -> (u64, u64) {
        self.sum(self.index(now) & STAMP_MASK)
    }

    /// The number of the bucket of `now`, or of the latest reading if later.
    fn index(&self, now: u64) -> u64 {
        (now / self.bucket_ms.max(1)).max(self.latest())
    }

    fn latest(&self) -> u64 {
        self.tick.load(Ordering::Relaxed) >> SLOT_BITS
    }

    /// The slot of bucket number `index`, and what it holds (acquired).
    fn bucket(&self, index: u64) -> (&AtomicU64, u64) {
        // The remainder is below BUCKETS, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let slot = &self.buckets[(index % BUCKETS as u64) as usize];
        (slot, slot.load(Ordering::Acquire))
    }

    /// Both counts in the buckets of the window ending with bucket `stamp`.
    pub(crate) fn sum(&self, stamp: u64) -> (u64, u64) {
        self.buckets
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|bucket| {
                (stamp.wrapping_sub(bucket >> STAMP_SHIFT) & STAMP_MASK) < BUCKETS as u64
            })
            .map(counts_of)
            .fold((0, 0), |(a, b), (first, second)| (a + first, b + second))
    }

    /// Forgets every count. The tick stays (time did not go back); the
    /// emptied bucket it names sends the next
    /// [`count_latest`](Self::count_latest) to the clock.
    pub(crate) fn clear(&self) {
        for slot in &self.buckets {
            slot.store(0, Ordering::Relaxed);
        }
    }
}
