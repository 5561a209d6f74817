//! The waits a policy gives: the ceiling of each retry, the jittered wait
//! drawn from it, the wait when a server gave a hint, and the longest the
//! waits of one call can add up to. The arithmetic itself is
//! `retry_core::backoff`, shared with the attribute's checks.

use core::time::Duration;

use retry_core::backoff::{self, nanos, uniform};

use super::{Jitter, Params, Policy};

/// The longest wait a gRPC pushback can ask for: `grpc-retry-pushback-ms`
/// is a signed 32-bit number of milliseconds (gRFC A6).
pub(crate) const LONGEST_PUSHBACK: Duration = Duration::from_millis(i32::MAX as u64);

impl<Timeout> Policy<Timeout> {
    /// The ceiling of the wait before retry `n` (`n = 0` before the first
    /// retry): `min(cap, base * multiplier^n)`.
    ///
    /// Exact for every whole multiplier; others go through `f64`, exact to
    /// about one part in 2^52. Any `n` and any multiplier are fine.
    #[must_use]
    pub fn ceiling(&self, n: u32) -> Duration {
        Duration::from_nanos(self.params.ceiling_nanos(n))
    }

    /// The longest the waits of one call can add up to: every retry's wait
    /// at the top of its range (for [`Jitter::Decorrelated`], the chain
    /// `min(cap, 3 * previous)`). A bound on the time a call spends waiting,
    /// before any deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::Policy;
    ///
    /// // Ceilings 200, 400, 800, 1600 and 3200 ms.
    /// let policy = Policy::new().with_max_attempts(6).with_base(Duration::from_millis(200));
    /// assert_eq!(policy.worst_case_wait(), Duration::from_millis(6200));
    /// ```
    ///
    /// For a policy read from a gRPC service config, each wait at the top of
    /// gRFC A6's range: 1.2 times its ceiling.
    #[must_use]
    pub fn worst_case_wait(&self) -> Duration {
        let params = &self.params;
        let retries = params.max_attempts.saturating_sub(1);
        if !params.follows_a6() {
            return Duration::from_nanos(backoff::worst_case_total(
                params.base_nanos,
                params.cap_nanos,
                params.multiplier,
                params.jitter == Jitter::Decorrelated,
                retries,
            ));
        }
        let shrinking = params.multiplier > 0.0 && params.multiplier < 1.0;
        let total = if !shrinking {
            // Ceilings that grow to `cap` (or stay at it, from a `base`
            // above it): as the other jitters sum them.
            let base = params.base_nanos.min(params.cap_nanos);
            backoff::worst_case_total(base, params.cap_nanos, params.multiplier, false, retries)
        } else {
            // Ceilings that shrink: summed one by one, and past 10,000
            // retries counted at the last, which bounds the rest.
            let mut total: u64 = 0;
            for n in 0..retries {
                let ceiling = params.ceiling_nanos(n);
                if ceiling == 0 || n == 10_000 {
                    let rest = u64::from(retries - n);
                    total = total.saturating_add(ceiling.saturating_mul(rest));
                    break;
                }
                total = total.saturating_add(ceiling);
            }
            total
        };
        Duration::from_nanos(total.saturating_add(total / 5))
    }

    /// A wait before retry `n`, drawn with this thread's generator (see
    /// [`seed_thread_rng`](crate::seed_thread_rng)). `previous` is the wait
    /// before the last retry, or `base` before the first; only
    /// [`Jitter::Decorrelated`] uses it.
    #[must_use]
    pub fn wait(&self, n: u32, previous: Duration) -> Duration {
        self.wait_with(n, previous, crate::rng::next_u64())
    }

    /// The wait before retry `n` for a given random `sample`: `0` gives the
    /// shortest wait the jitter allows and `u64::MAX` the longest, with the
    /// values between spread evenly. See [`Jitter`] for the formulas.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{Jitter, Policy};
    ///
    /// let policy = Policy::new().with_jitter(Jitter::Equal);
    /// let ceiling = policy.ceiling(3); // 800ms
    /// assert_eq!(policy.wait_with(3, policy.base(), 0), ceiling / 2);
    /// assert_eq!(policy.wait_with(3, policy.base(), u64::MAX), ceiling);
    ///
    /// // Halves are whole nanoseconds: an odd ceiling's longest wait is one
    /// // nanosecond short of it.
    /// let odd = policy.with_base(Duration::from_nanos(7)).with_cap(Duration::from_nanos(7));
    /// assert_eq!(odd.wait_with(0, odd.base(), 0), Duration::from_nanos(3));
    /// assert_eq!(odd.wait_with(0, odd.base(), u64::MAX), Duration::from_nanos(6));
    /// ```
    #[must_use]
    pub fn wait_with(&self, n: u32, previous: Duration, sample: u64) -> Duration {
        let params = &self.params;
        Duration::from_nanos(params.draw(params.ceiling_nanos(n), nanos(previous), sample))
    }

    /// The wait when the server asked for `hint` (a `Retry-After`): at least
    /// the hint and at least the backoff `wait`, plus a uniform share of up
    /// to a tenth of the hint drawn from `sample`, so that clients told the
    /// same hint do not come back in the same instant:
    /// `max(hint, wait) + uniform in [0, hint / 10]`.
    ///
    /// `None` when the hint is longer than `cap`: a server asking for more
    /// than the caller tolerates is not waited out. `None` too for a hint
    /// longer than `u64::MAX` nanoseconds (about 584 years, the longest wait),
    /// which could only be waited out in part.
    ///
    /// The wait is therefore at most `cap + cap / 10` (1.1 x `cap`): the
    /// spread is added on top of a hint that may be `cap` itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::Policy;
    ///
    /// let policy = Policy::new(); // cap 10s
    /// let hint = Duration::from_secs(2);
    /// let backoff = Duration::from_millis(100);
    /// assert_eq!(policy.hinted_wait(backoff, hint, 0), Some(hint));
    /// assert_eq!(policy.hinted_wait(backoff, hint, u64::MAX), Some(Duration::from_millis(2200)));
    /// assert_eq!(policy.hinted_wait(backoff, Duration::from_secs(11), 0), None);
    /// ```
    ///
    /// A policy read from a gRPC service config waits a pushback out as
    /// gRFC A6 has it: exactly the hint, whatever `cap` and the backoff
    /// (which restarts after it), for any hint a pushback can carry (up to
    /// 2^31 - 1 ms, about 24.8 days); a longer hint, which no valid
    /// pushback is (and which `classify::grpc::pushback` gives for one
    /// that says not to retry), is `None`.
    #[must_use]
    pub fn hinted_wait(&self, wait: Duration, hint: Duration, sample: u64) -> Option<Duration> {
        self.params.hinted_wait(wait, hint, sample)
    }
}

impl Params {
    fn ceiling_nanos(&self, n: u32) -> u64 {
        if self.follows_a6() && self.multiplier < 1.0 && self.multiplier > 0.0 {
            // gRFC A6 takes any multiplier above zero: the ceilings shrink,
            // from `base` (which may be above `cap`) towards zero.
            #[allow(clippy::cast_precision_loss)]
            let shrunk = self.base_nanos as f64 * self.multiplier.powf(f64::from(n));
            // Saturating float-to-int conversion, of a value at most `base`.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let shrunk = shrunk.round() as u64;
            return shrunk.min(self.cap_nanos);
        }
        backoff::ceiling(self.base_nanos, self.cap_nanos, self.multiplier, n)
    }

    /// The wait before retry `n`, in nanoseconds, and its ceiling, as
    /// [`Policy::wait_with`] gives them, from what a call kept after
    /// retry `n - 1` (`carry`, unread for `n = 0`): for
    /// [`Jitter::Decorrelated`], the wait it made; for the others, the
    /// ceiling returned then. A whole multiplier steps from that ceiling,
    /// exactly as `retry_core::backoff::ceiling` steps from `base`, instead
    /// of stepping `n` times; the others compute it afresh.
    // Inlined: once per retry, into the decision (benches/instructions.sh:
    // a call of its own cost the three-failure path about 70 instructions).
    ///
    /// Under gRFC A6 ([`Jitter::Grpc`]) the carry counts the retries since
    /// the last pushback, which restarts the backoff: the ceiling is that
    /// step's, and the call carries the next step.
    #[inline]
    pub(crate) fn next_wait(&self, n: u32, carry: u64, sample: u64) -> (u64, u64) {
        if self.jitter == Jitter::Decorrelated {
            let previous = if n == 0 { self.base_nanos } else { carry };
            return (self.draw(0, previous, sample), 0);
        }
        if self.follows_a6() {
            let step = if n == 0 { 0 } else { carry };
            let ceiling = self.ceiling_nanos(u32::try_from(step).unwrap_or(u32::MAX));
            return (self.draw(ceiling, 0, sample), step.saturating_add(1));
        }
        // A whole multiplier (2 or more) steps from the carried ceiling.
        let ceiling = if n > 0 && self.factor != 0 {
            carry.saturating_mul(self.factor).min(self.cap_nanos)
        } else {
            self.ceiling_nanos(n)
        };
        (self.draw(ceiling, 0, sample), ceiling)
    }

    /// The wait for a `ceiling` (or, for decorrelated jitter, the
    /// `previous` wait) and a random `sample`, in nanoseconds.
    fn draw(&self, ceiling: u64, previous: u64, sample: u64) -> u64 {
        match self.jitter {
            Jitter::None => ceiling,
            Jitter::Full => uniform(0, ceiling, sample),
            Jitter::Equal => {
                // `half + uniform(0, half)`, as documented: for an odd
                // ceiling the longest wait is `ceiling - 1`.
                let half = ceiling / 2;
                half + uniform(0, half, sample)
            }
            Jitter::Decorrelated => {
                let low = self.base_nanos;
                let high = previous.saturating_mul(3).max(low);
                uniform(low, high, sample).min(self.cap_nanos)
            }
            // gRFC A6 as amended: `ceiling * uniform(0.8, 1.2)`.
            Jitter::Grpc => {
                let fifth = ceiling / 5;
                uniform(ceiling - fifth, ceiling.saturating_add(fifth), sample)
            }
        }
    }

    /// [`Policy::hinted_wait`].
    pub(crate) fn hinted_wait(
        &self,
        wait: Duration,
        hint: Duration,
        sample: u64,
    ) -> Option<Duration> {
        if self.follows_a6() {
            return (hint <= LONGEST_PUSHBACK).then_some(hint);
        }
        if hint > self.cap || hint > Duration::from_nanos(u64::MAX) {
            return None;
        }
        let hint = nanos(hint);
        let spread = uniform(0, hint / 10, sample);
        Some(Duration::from_nanos(
            hint.max(nanos(wait)).saturating_add(spread),
        ))
    }
}
