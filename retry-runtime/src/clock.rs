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
    pub(crate) fn of(blocking: bool) -> Self {
        if blocking {
            Clock::Blocking
        } else {
            Clock::Async
        }
    }

    #[inline]
    pub(crate) fn now(self) -> Instant {
        match self {
            Clock::Async => crate::timer::now(),
            Clock::Blocking => crate::timer::real_now(),
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

/// Blocks the thread for a plain function's wait, for at least `wait`.
///
/// Never panics: on a JS host, which cannot block, it spins on the host's
/// clock (prefer an `async fn` there).
#[doc(hidden)]
#[inline]
pub fn sleep_blocking(wait: Duration) {
    crate::timer::block_for(wait);
}

/// A deadline, or none, in 8 bytes where `Option<Instant>` takes 16: the
/// call's state is kept in the caller's future, whose size it adds to.
///
/// Nanoseconds from a process-wide epoch, exact for deadlines within
/// 292 years of it; past that, milliseconds (rounded down), up to some
/// 292 million years; past that, none, as an `Instant` that overflows is.
/// The encoding keeps the order of the deadlines, none last, so the
/// nearest of two is their `min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deadline(u64);

/// Set on a deadline counted in milliseconds.
const COARSE: u64 = 1 << 63;

impl Deadline {
    pub(crate) const NONE: Self = Deadline(u64::MAX);

    pub(crate) fn new(at: Option<Instant>) -> Self {
        let Some(at) = at else {
            return Self::NONE;
        };
        // An instant before the epoch (a paused clock started more than the
        // epoch's margin before the process first needed it) counts from
        // the epoch: a deadline already passed.
        let since = at.saturating_duration_since(epoch());
        if let Ok(nanos) = u64::try_from(since.as_nanos()) {
            if nanos < COARSE {
                return Deadline(nanos);
            }
        }
        match u64::try_from(since.as_millis()) {
            Ok(millis) if millis < COARSE - 1 => Deadline(COARSE | millis),
            _ => Self::NONE,
        }
    }

    pub(crate) fn get(self) -> Option<Instant> {
        let since = match self.0 {
            u64::MAX => return None,
            coarse if coarse & COARSE != 0 => Duration::from_millis(coarse & !COARSE),
            nanos => Duration::from_nanos(nanos),
        };
        epoch().checked_add(since)
    }
}

/// The process's time zero for deadlines: a year before it first needed
/// one, so that a paused test clock started earlier is still after it.
pub(crate) fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(|| {
        let now = crate::timer::real_now();
        now.checked_sub(Duration::from_secs(86_400 * 365))
            .unwrap_or(now)
    })
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
    fn far_deadlines_are_kept_to_the_millisecond_and_order_is_kept() {
        let now = Instant::now();
        let near = now + Duration::from_secs(1);
        let far = now + Duration::from_secs(86_400 * 365 * 1000);
        let kept = Deadline::new(Some(far)).get().unwrap();
        assert!(kept <= far && far - kept < Duration::from_millis(1));
        let (near, far) = (Deadline::new(Some(near)), Deadline::new(Some(far)));
        assert_eq!(near.min(far), near);
        assert_eq!(far.min(Deadline::NONE), far);
        assert_ne!(far, Deadline::NONE);
    }
}
