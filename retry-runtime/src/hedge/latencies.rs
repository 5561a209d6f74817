//! The recent latencies of one function's successful attempts, for
//! `hedge = "p95"`: a lock-free histogram in a `static`, with the
//! percentile asked for kept ready in one atomic.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use core::time::Duration;

/// Sub-buckets per power of two: a latency is known to within 1/16 (6 %).
const SUB: u32 = 16;
const SUB_BITS: u32 = SUB.trailing_zeros();
/// Buckets of microseconds: exact below 16 µs, then 16 per power of two up
/// to 2^35 µs (9.5 hours); longer latencies count in the last bucket.
const BUCKETS: usize = 512;
/// Successes seen before the histogram's percentile replaces `base`.
pub(crate) const WARM_UP: u64 = 100;
/// Every this many successes, every count is halved: older latencies weigh
/// half as much as newer ones each time, so the estimate follows the last
/// few thousand successes.
pub(crate) const HALF_LIFE: u64 = 1024;
/// After the warm-up, the percentile is recomputed every this many
/// successes (before it, at each one): a scan of the buckets every 64
/// successes costs each about 16 atomic loads.
const REFRESH: u64 = 64;

/// Per-mille marking "no percentile computed yet" in the cache.
const NONE: u64 = 0;

/// The latencies of a function's recent successful attempts: a lock-free,
/// exponentially decaying histogram (each count halves every
/// 1,024 successes), built in a `static`.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::hedge::Latencies;
///
/// static LATENCIES: Latencies = Latencies::new();
///
/// for millis in 1..=200u64 {
///     LATENCIES.record(Duration::from_millis(millis % 20));
/// }
/// let p95 = LATENCIES.percentile(95.0).unwrap();
/// assert!(p95 >= Duration::from_millis(18) && p95 <= Duration::from_millis(20));
/// ```
///
/// Recording is two atomic additions; reading the percentile a hedged call
/// waits for is one atomic load. Every 1,024 successes one call
/// halves the counts, and every few successes one recomputes the
/// percentile, by a scan of the 512 buckets: no lock, no allocation. A
/// latency is known to within 1/16 of it, rounded up, so the hedge delay is
/// never below the percentile it stands for.
pub struct Latencies {
    buckets: [AtomicU32; BUCKETS],
    /// Successes recorded since the start.
    seen: AtomicU64,
    /// The last percentile computed: its per-mille in the top 10 bits, the
    /// latency in nanoseconds below ([`NONE`] before the first).
    cached: AtomicU64,
}

const LATENCY_BITS: u32 = 54;
const LATENCY_MASK: u64 = (1 << LATENCY_BITS) - 1;

impl Latencies {
    /// An empty histogram.
    #[must_use]
    pub const fn new() -> Self {
        Latencies {
            buckets: [const { AtomicU32::new(0) }; BUCKETS],
            seen: AtomicU64::new(0),
            cached: AtomicU64::new(NONE),
        }
    }

    /// Records the latency of a successful attempt.
    pub fn record(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if let Some(bucket) = self.buckets.get(index(micros)) {
            // Saturating, so that a count never wraps to zero.
            let _ = bucket.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                count.checked_add(1)
            });
        }
        let seen = self.seen.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if seen.is_multiple_of(HALF_LIFE) {
            for bucket in &self.buckets {
                let _ = bucket.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |count| {
                    (count > 0).then_some(count / 2)
                });
            }
        }
        if seen >= WARM_UP && (seen < 2 * WARM_UP || seen.is_multiple_of(REFRESH)) {
            let cached = self.cached.load(Ordering::Relaxed);
            if cached != NONE {
                self.refresh(cached >> LATENCY_BITS);
            }
        }
    }

    /// How many successes were recorded.
    #[must_use]
    pub fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }

    /// The `percentile` (clamped to 50 ..= 99.9) of the recent latencies,
    /// rounded up to its bucket's bound, once 100 successes were
    /// recorded; `None` before.
    #[must_use]
    pub fn percentile(&self, percentile: f64) -> Option<Duration> {
        self.delay(per_mille(percentile))
    }

    /// The percentile `per_mille` (500 ..= 999), from the cache when it
    /// holds that one: a hedged call's only read of the histogram.
    #[inline]
    pub(crate) fn delay(&self, per_mille: u64) -> Option<Duration> {
        if self.seen.load(Ordering::Relaxed) < WARM_UP {
            return None;
        }
        let cached = self.cached.load(Ordering::Relaxed);
        if cached != NONE && cached >> LATENCY_BITS == per_mille {
            return Some(Duration::from_nanos(cached & LATENCY_MASK));
        }
        self.refresh(per_mille)
    }

    /// Computes the percentile `per_mille` and caches it.
    #[cold]
    fn refresh(&self, per_mille: u64) -> Option<Duration> {
        let mut counts = self
            .buckets
            .iter()
            .map(|bucket| u64::from(bucket.load(Ordering::Relaxed)));
        let total: u64 = counts.clone().sum();
        if total == 0 {
            return None;
        }
        // The smallest latency at or above which at most 1 - p of the
        // successes lie: rank ceil(total * p).
        let rank = total.saturating_mul(per_mille).div_ceil(1000).max(1);
        let mut below = 0u64;
        let found = counts.position(|count| {
            below = below.saturating_add(count);
            below >= rank
        });
        let found = found.unwrap_or(BUCKETS - 1);
        let nanos = upper_bound_micros(found)
            .saturating_mul(1000)
            .min(LATENCY_MASK);
        self.cached
            .store((per_mille << LATENCY_BITS) | nanos, Ordering::Relaxed);
        Some(Duration::from_nanos(nanos))
    }
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Latencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latencies")
            .field("seen", &self.seen())
            .finish_non_exhaustive()
    }
}

/// A percentile as per-mille, clamped to 500 ..= 999 (`p50` .. `p99.9`).
pub(crate) fn per_mille(percentile: f64) -> u64 {
    // Saturating: NaN and anything negative are 0.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let tenths = (percentile * 10.0).round() as u64;
    tenths.clamp(500, 999)
}

/// The bucket of a latency in microseconds: the latency itself below
/// `2 * SUB` µs, above which each power of two is cut into `SUB` buckets.
fn index(micros: u64) -> usize {
    let shift = micros.checked_ilog2().unwrap_or(0).saturating_sub(SUB_BITS);
    let index = (u64::from(shift) << SUB_BITS) + (micros >> shift);
    usize::try_from(index).map_or(BUCKETS - 1, |index| index.min(BUCKETS - 1))
}

/// The first latency in microseconds past bucket `index`.
fn upper_bound_micros(index: usize) -> u64 {
    let index = index.min(BUCKETS - 1) as u64;
    let shift = (index >> SUB_BITS).saturating_sub(1);
    (index - (shift << SUB_BITS) + 1) << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_latencies_within_a_sixteenth() {
        for micros in [0, 1, 15, 16, 17, 31, 32, 100, 14_600, 1_000_000, 1 << 34] {
            let bucket = index(micros);
            let upper = upper_bound_micros(bucket);
            assert!(upper > micros, "{micros}: {upper}");
            assert!(upper - micros <= micros / 16 + 1, "{micros}: {upper}");
            if bucket > 0 {
                assert!(upper_bound_micros(bucket - 1) <= micros, "{micros}");
            }
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        assert!(upper_bound_micros(BUCKETS - 1) > 1 << 34);
    }

    #[test]
    fn nothing_before_the_warm_up_then_the_percentile() {
        let latencies = Latencies::new();
        for _ in 1..WARM_UP {
            latencies.record(Duration::from_millis(10));
        }
        assert_eq!(latencies.percentile(95.0), None);
        latencies.record(Duration::from_millis(10));
        let p95 = latencies.percentile(95.0).unwrap();
        assert!(p95 > Duration::from_millis(10) && p95 <= Duration::from_micros(10_240));
    }

    #[test]
    fn the_percentile_follows_the_ranks() {
        let latencies = Latencies::new();
        // 1 ms .. 1000 ms, once each: p50 is 500 ms, p99 990 ms.
        for millis in 1..=1000 {
            latencies.record(Duration::from_millis(millis));
        }
        for (p, millis) in [(50.0, 500), (95.0, 950), (99.0, 990), (99.9, 999)] {
            let got = latencies.percentile(p).unwrap();
            let want = Duration::from_millis(millis);
            assert!(got >= want && got <= want + want / 16, "p{p}: {got:?}");
        }
    }

    #[test]
    fn old_latencies_fade() {
        let latencies = Latencies::new();
        for _ in 0..HALF_LIFE {
            latencies.record(Duration::from_millis(100));
        }
        for _ in 0..8 * HALF_LIFE {
            latencies.record(Duration::from_millis(1));
        }
        assert!(latencies.percentile(99.0).unwrap() < Duration::from_millis(2));
    }

    #[test]
    fn percentiles_are_clamped() {
        assert_eq!(per_mille(f64::NAN), 500);
        assert_eq!(per_mille(10.0), 500);
        assert_eq!(per_mille(99.95), 999);
        assert_eq!(per_mille(95.0), 950);
        assert_eq!(per_mille(99.9), 999);
    }
}
