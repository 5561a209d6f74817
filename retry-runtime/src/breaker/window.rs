//! The closed circuit's record of recent outcomes, and the rule that opens
//! it: calls and failures in the breaker's [`Ring`] of time buckets, and
//! the failures in a row.
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
//! So a success counts into the bucket of the ring's latest clock reading
//! without reading the clock ([`Ring::count_latest`]), and every failure
//! reads it (anyway, for its bucket and for the open period). So the first
//! call in each bucket and every `READ_EVERY`th after it read the clock;
//! the others are a load and a compare-and-swap. `enter` does not move the tick when the circuit is
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
//! An outcome whose reading is older than the ring's latest counts in the
//! latest's bucket, so that no bucket is rolled back ([`Ring::add`]).
//!
//! [`Ring`]: crate::ring::Ring
//! [`Ring::add`]: crate::ring::Ring::add
//! [`Ring::count_latest`]: crate::ring::Ring::count_latest

use super::CircuitBreaker;
use crate::ring::Ordering;

impl CircuitBreaker {
    /// Counts an outcome that finished at `now` (milliseconds), the time
    /// just read, and says whether the circuit should open: after
    /// `consecutive_failures` failures in a row, or once at least
    /// `min_calls` calls in the window have finished and the share that
    /// failed reaches `failure_ratio`.
    pub(super) fn record(&self, now: u64, success: bool) -> bool {
        let stamp = self.ring.add(now, 1, u64::from(!success));
        if success {
            self.end_streak();
            return false;
        }
        // A u64 of failures does not wrap in practice; if it did, the
        // circuit would only open a little later.
        let streak = self.streak.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (calls, failures) = self.ring.sum(stamp);
        streak >= self.consecutive_failures
            || (calls >= self.min_calls && failures * 1000 >= self.failure_ratio * calls)
    }

    /// A success ends the failures in a row.
    #[inline]
    pub(super) fn end_streak(&self) {
        // Read first: a store on every success would bounce the cache line
        // between cores for nothing.
        if self.streak.load(Ordering::Relaxed) != 0 {
            self.streak.store(0, Ordering::Relaxed);
        }
    }
}
