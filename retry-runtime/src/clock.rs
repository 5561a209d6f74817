//! The two clocks a call can run on: tokio's for an `async fn` (so a paused
//! test clock runs a schedule instantly), the real one for a plain function,
//! whose waits block the thread.

use core::time::Duration;

use tokio::time::Instant;

/// Which clock a call reads and waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// `tokio::time`: an `async fn`.
    Tokio,
    /// `std::time`: a plain function.
    Blocking,
}

impl Clock {
    #[inline]
    pub(crate) fn now(self) -> Instant {
        match self {
            Clock::Tokio => Instant::now(),
            Clock::Blocking => Instant::from_std(std::time::Instant::now()),
        }
    }

    /// The time from now until `deadline`, zero once it has passed.
    pub(crate) fn until(self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(self.now())
    }
}

/// Blocks the thread for a plain function's wait.
#[doc(hidden)]
#[inline]
pub fn sleep_blocking(wait: Duration) {
    std::thread::sleep(wait);
}
