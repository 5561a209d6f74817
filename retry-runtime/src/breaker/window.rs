//! The closed circuit's record of recent outcomes, and the rule that opens
//! it: a ring of time buckets, and the failures in a row.
//!
//! # Successes read no clock
//!
//! The team's target: a success in the closed state, with nothing to roll
//! over, reads no clock, and the breaker's success path costs at most 60
//! instructions (callgrind, `benches/instructions.sh`) over the same call
//! without a breaker. The reasoning: the success path is every call's path
//! while the dependency is healthy, which is nearly always, so it is the
//! breaker's price; reading the clock there to place each success in its
//! bucket was its largest part (some 165 of the 490 extra instructions per
//! call, more under tokio's `test-util`) and buys little: a success never
//! opens the circuit, it only dilutes the failures judged after it.
//!
//! So the window keeps `tick`, the bucket of the breaker's latest clock
//! reading, and a success counts into that bucket without reading the clock.
//! Whoever reads the clock moves `tick` on (only forward): every failure
//! (which reads it anyway, for its bucket and for the open period), and a
//! success that finds the bucket must roll over: the bucket `tick` names is
//! new (empty, cleared, or left from an earlier turn of the ring), or is at
//! its [`READ_EVERY`]th call (or full). So the first call in each bucket and
//! every `READ_EVERY`th after it read the clock; the others are a load and
//! a compare-and-swap. `enter` does not move the tick when the circuit is
//! open, though it reads the clock then: every refused call would write a
//! shared line, for a window that is not used while open and is emptied when
//! the circuit closes (and an emptied bucket sends the next success to the
//! clock anyway).
//!
//! What that keeps exactly: a failure is counted in the bucket of the time
//! it finished, and the opening rule is judged at each failure over the ten
//! buckets ending with that time, so failures older than the window are
//! forgotten on time however long only successes arrived before (no bucket
//! needs rolling for that: the judgment rolls the window itself). Min calls,
//! the ratio, the failures in a row, the open period and the probes are
//! untouched. What it bends: a success counts in the bucket of the latest
//! reading, never a later one than its own, so it may leave the window
//! early, never late. Since a reading is taken at least every
//! `READ_EVERY` calls of a bucket, at most `READ_EVERY - 1` successes (plus
//! those racing a reading) are counted since the latest reading; only they
//! can sit in an earlier bucket than their own, and only when calls are
//! sparse (fewer than `READ_EVERY` in a bucket's width) or stop and start.
//! A smaller `READ_EVERY` narrows that, at a reading's cost (some 230
//! instructions) shared among fewer successes.
//!
//! One more rule keeps concurrent readings apart: an outcome whose reading
//! is older than the tick (another thread read a later time meanwhile)
//! counts at the tick, so that no one rolls a bucket back to an older one,
//! erasing the outcomes of the newer (`record`; the loom model
//! `loom_breaker.rs` checks it).

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};

/// The window is a ring of this many time buckets.
pub(super) const BUCKETS: usize = 10;

/// A success reads the clock at the first call of a bucket and at every
/// this many after it (a power of two, so the test is a mask); see the
/// module's comment.
pub(super) const READ_EVERY: u64 = 16;

// A bucket word. Bits 40-63: the bucket's number (time / bucket width,
// truncated), so a bucket left from an earlier turn of the ring is seen as
// stale. Bits 20-39: failures. Bits 0-19: calls. Counts saturate together.
const STAMP_SHIFT: u32 = 40;
const STAMP_MASK: u64 = 0xff_ffff;
const FAILURE_SHIFT: u32 = 20;
const CALLS_MASK: u64 = 0xf_ffff;

// The tick: the bucket's number above SLOT_BITS, its place in the ring
// (number % BUCKETS) below; numbers past NUMBER_MAX (some 36 million years
// of 1 ms buckets) stay there.
const SLOT_BITS: u32 = 4;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const NUMBER_MAX: u64 = u64::MAX >> SLOT_BITS;

/// The tick of bucket number `index`; ordered as the numbers are.
fn tick_of(index: u64) -> u64 {
    let index = index.min(NUMBER_MAX);
    (index << SLOT_BITS) | (index % BUCKETS as u64)
}

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
    /// The bucket of the latest clock reading, which successes count into,
    /// as its number (time / bucket width) shifted left by [`SLOT_BITS`]
    /// beside its place in the ring, so that a success finds its bucket
    /// without a division. Only ever moved forward.
    tick: AtomicU64,
    /// Failures in a row since the last success.
    streak: AtomicU64,
}

impl Window {
    #[cfg(not(loom))]
    pub(super) const fn new() -> Self {
        Window {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            tick: AtomicU64::new(0),
            streak: AtomicU64::new(0),
        }
    }

    #[cfg(loom)]
    pub(super) fn new() -> Self {
        Window {
            buckets: core::array::from_fn(|_| AtomicU64::new(0)),
            tick: AtomicU64::new(0),
            streak: AtomicU64::new(0),
        }
    }

    /// Counts a success in the bucket of the latest clock reading, without
    /// reading the clock. `false` when the clock must be read, and
    /// [`record`](Self::record) called, instead: the bucket is new (the
    /// window must roll over), at its [`READ_EVERY`]th call, or full. Nothing
    /// is counted then.
    #[inline]
    pub(super) fn count_success(&self) -> bool {
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
            let calls = bucket & CALLS_MASK;
            // A bucket of an earlier turn of the ring (or cleared) is rolled
            // over by whoever reads the clock; so is a full one. The count
            // cannot carry into the failures: it is below CALLS_MASK.
            if bucket >> STAMP_SHIFT != stamp
                || calls.is_multiple_of(READ_EVERY)
                || calls == CALLS_MASK
            {
                return false;
            }
            match slot.compare_exchange_weak(
                bucket,
                bucket + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(actual) => bucket = actual,
            }
        }
        self.end_streak();
        true
    }

    /// Counts an outcome that finished at `now` (milliseconds), the time
    /// just read, and says whether the circuit should open.
    ///
    /// A reading older than the latest one (another thread read the clock
    /// meanwhile) counts in the latest one's bucket: the outcome is being
    /// counted after it. So a bucket is never rolled back to an older one,
    /// which would erase the outcomes of the newer: whoever writes a bucket
    /// has moved the tick to it first (release, with the bucket's write),
    /// and whoever finds a bucket that is not theirs reads the tick again
    /// (after an acquire of the bucket) before taking the bucket for older.
    pub(super) fn record(&self, rules: &Thresholds, now: u64, success: bool) -> bool {
        let latest = |window: &Window| window.tick.load(Ordering::Relaxed) >> SLOT_BITS;
        let mut index = (now / rules.bucket_ms).max(latest(self));
        // The latest reading, for the successes that follow. Read first: a
        // write on every reading would bounce the cache line for nothing.
        let tick = tick_of(index);
        if self.tick.load(Ordering::Relaxed) < tick {
            self.tick.fetch_max(tick, Ordering::Relaxed);
        }
        let failed = u64::from(!success);
        let (mut slot, mut bucket) = self.bucket(index);
        loop {
            let stamp = index & STAMP_MASK;
            let (calls, failures) = if bucket >> STAMP_SHIFT == stamp {
                (bucket & CALLS_MASK, (bucket >> FAILURE_SHIFT) & CALLS_MASK)
            } else {
                let moved_on = latest(self);
                if moved_on > index {
                    // A later reading took the ring on since ours.
                    index = moved_on;
                    (slot, bucket) = self.bucket(index);
                    continue;
                }
                // A bucket older than ours (or emptied): rolled over.
                (0, 0)
            };
            if calls == CALLS_MASK {
                break;
            }
            let next =
                (stamp << STAMP_SHIFT) | ((failures + failed) << FAILURE_SHIFT) | (calls + 1);
            match slot.compare_exchange_weak(bucket, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(actual) => bucket = actual,
            }
        }
        let stamp = index & STAMP_MASK;
        if success {
            self.end_streak();
            return false;
        }
        // A u64 of failures does not wrap in practice; if it did, the
        // circuit would only open a little later.
        let streak = self.streak.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (calls, failures) = self.sum(stamp);
        streak >= rules.consecutive_failures
            || (calls >= rules.min_calls && failures * 1000 >= rules.failure_ratio * calls)
    }

    /// The calls and failures in the window ending at `now`, for the loom
    /// model's checks.
    #[cfg(loom)]
    pub(super) fn counts(&self, rules: &Thresholds, now: u64) -> (u64, u64) {
        self.sum((now / rules.bucket_ms) & STAMP_MASK)
    }

    /// The slot of bucket number `index`, and what it holds (acquired).
    fn bucket(&self, index: u64) -> (&AtomicU64, u64) {
        // The remainder is below BUCKETS, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let slot = &self.buckets[(index % BUCKETS as u64) as usize];
        (slot, slot.load(Ordering::Acquire))
    }

    /// A success ends the failures in a row.
    #[inline]
    fn end_streak(&self) {
        // Read first: a store on every success would bounce the cache line
        // between cores for nothing.
        if self.streak.load(Ordering::Relaxed) != 0 {
            self.streak.store(0, Ordering::Relaxed);
        }
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

    /// Forgets every outcome: the circuit closed. The tick stays (time did
    /// not go back); the emptied bucket it names sends the next success to
    /// the clock.
    pub(super) fn clear(&self) {
        for slot in &self.buckets {
            slot.store(0, Ordering::Relaxed);
        }
        self.streak.store(0, Ordering::Relaxed);
    }
}
