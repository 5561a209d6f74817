//! The two clocks a call can run on, and the instant both count in.
//!
//! An `async fn`'s clock is tokio's inside a tokio runtime, so that a paused
//! test clock runs a schedule instantly and exactly; anywhere else (smol,
//! `futures::executor`, a JS host) it is the real one, which the waits of
//! [`crate::sleep`] follow. A plain function's clock is always the real one:
//! its waits block the thread.
//!
//! The instant type is tokio's `Instant` on native targets (a
//! `std::time::Instant` that tokio's clock may also produce), and on
//! `wasm32-unknown-unknown`, where `std::time::Instant::now` traps, the
//! host's `performance.now()` ([`crate::timer::host`]).
//!
//! Under a test's simulated clock (feature `testing`, installed on the
//! thread by `testing::VirtualClock`), both read it.

use core::time::Duration;

pub(crate) use crate::timer::Instant;

/// Which clock a call reads and waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// An `async fn`: tokio's clock in a tokio runtime, the real one
    /// elsewhere.
    Async,
    /// A plain function: the real clock.
    Blocking,
}

impl Clock {
    /// The clock of a call that blocks its thread or not.
    #[inline]
    pub(crate) const fn of(blocking: bool) -> Self {
        if blocking {
            Clock::Blocking
        } else {
            Clock::Async
        }
    }

    /// Now on this clock, or on the simulated clock a test installed on
    /// this thread (feature `testing`), which both clocks then read.
    #[inline]
    pub(crate) fn now(self) -> Instant {
        #[cfg(feature = "testing")]
        if let Some(clock) = crate::timer::simulated::current() {
            return clock.now();
        }
        match self {
            // `tokio::time::Instant::now` is both of an `async fn`'s clocks:
            // the real clock, unless tokio's `test-util` feature is on and a
            // clock was paused in the process, and then the paused clock of
            // the runtime the thread is in, or the real one outside any. So
            // it needs no test of whether the thread is in a runtime (a
            // handle cloned and dropped: about 30 instructions a reading).
            // (With `test-util`, a paused clock, and tokio's own
            // thread-locals already destroyed, tokio panics there; only a
            // test can be in that state.)
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            Clock::Async => tokio::time::Instant::now(),
            _ => crate::timer::real_now(),
        }
    }

    /// The time from now until `deadline`, zero once it has passed.
    pub(crate) fn until(self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(self.now())
    }

    /// The time from `earlier` until now, zero if `earlier` is later.
    pub(crate) fn since(self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }
}

/// A time zero taken at first use, since a `static` cannot read the clock,
/// and the milliseconds from it: what a breaker and a budget count time in.
#[derive(Debug)]
pub(crate) struct Epoch(std::sync::OnceLock<Instant>);

impl Epoch {
    pub(crate) const fn new() -> Self {
        Epoch(std::sync::OnceLock::new())
    }

    /// Milliseconds since the first reading, on `clock`, saturating.
    pub(crate) fn ms(&self, clock: Clock) -> u64 {
        let now = clock.now();
        let epoch = *self.0.get_or_init(|| now);
        u64::try_from(now.saturating_duration_since(epoch).as_millis()).unwrap_or(u64::MAX)
    }
}

/// Blocks the thread for a plain function's wait, for at least `wait`.
///
/// Never panics: on a JS host, which cannot block, it spins on the host's
/// clock (prefer an `async fn` there). On a simulated clock (feature
/// `testing`), time moves on by `wait` at once.
#[doc(hidden)]
pub fn sleep_blocking(wait: Duration) {
    #[cfg(feature = "testing")]
    if let Some(clock) = crate::timer::simulated::current() {
        clock.advance(wait);
        return;
    }
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    std::thread::sleep(wait);
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    {
        // A JS host cannot block a thread (`std::thread::sleep` panics
        // there): spin on its clock.
        let end = crate::timer::end_of(crate::timer::real_now(), wait);
        while crate::timer::real_now() < end {
            core::hint::spin_loop();
        }
    }
}

/// A deadline, or none: an instant, ordered with none last, so that the
/// nearest of two is their `min`. Kept as the instant itself (16 bytes) so
/// that a call with a deadline pays no conversion when it starts, and the
/// nearest deadline is one comparison (an encoding in 8 bytes from a
/// process-wide epoch cost some 80 instructions a call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    pub(crate) const NONE: Self = Deadline(None);

    pub(crate) const fn new(at: Option<Instant>) -> Self {
        Deadline(at)
    }

    pub(crate) const fn get(self) -> Option<Instant> {
        self.0
    }
}

impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        // `None` sorts first in an `Option`: last here.
        (self.0.is_none(), self.0).cmp(&(other.0.is_none(), other.0))
    }
}

#[cfg(test)]
mod tests {
    use super::{Deadline, Instant};
    use core::time::Duration;

    #[test]
    fn deadlines_keep_their_instant_to_the_nanosecond_for_centuries() {
        let now = Instant::now();
        for ahead in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new(5, 123_456_789),
            Duration::from_secs(86_400 * 365 * 200),
        ] {
            let at = now + ahead;
            assert_eq!(Deadline::new(Some(at)).get(), Some(at), "{ahead:?}");
        }
        assert_eq!(Deadline::new(None).get(), None);
    }

    #[test]
    fn the_nearest_deadline_is_the_min_and_none_is_last() {
        let now = Instant::now();
        let near = now + Duration::from_secs(1);
        let far = now + Duration::from_secs(86_400 * 365 * 1000);
        assert_eq!(Deadline::new(Some(far)).get(), Some(far));
        let (near, far) = (Deadline::new(Some(near)), Deadline::new(Some(far)));
        assert_eq!(far.min(near), near);
        assert_eq!(Deadline::NONE.min(far), far);
        assert_eq!(near.min(far), near);
        assert_eq!(far.min(Deadline::NONE), far);
        assert_ne!(far, Deadline::NONE);
    }
}
