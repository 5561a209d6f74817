//! Waits of any length on tokio's clock.
//!
//! `tokio::time::sleep` stops a single timer at about 30 years: a longer
//! sleep ends early. A retry loop whose wait ended early would count time
//! that never passed against its deadline and make attempts the policy
//! forbids, so a long wait is a timer set to the instant it ends
//! (`sleep_until`, which tokio does not shorten).

use core::time::Duration;

use tokio::time::{Instant, Sleep};

/// The longest wait left to `tokio::time::sleep`: well inside its limit of
/// 30 years (`86400 * 365 * 30` seconds).
const CHUNK: Duration = Duration::from_secs(86_400 * 365 * 10);

/// Sleeps for at least `wait` on tokio's clock, however long it is.
///
/// Like `tokio::time::sleep`, it ends on a tick of tokio's 1 ms timer, so
/// it may last up to about 1 ms longer than asked; on a paused clock a wait
/// of 1 ns moves the clock by 1 ms. It never ends sooner, short of waits
/// of hundreds of millions of years, which tokio's timer (and on some
/// platforms the clock) cannot count: those end at the farthest instant
/// either can. Cancelling it (dropping the future) cancels the wait.
///
/// A plain tokio `Sleep`, with no state of its own, so that a retry loop
/// waiting on it is no larger than one waiting on `tokio::time::sleep`.
// Inlined: its `Sleep` is returned by value, and a call copies it once more
// per wait (benches/instructions.sh).
#[inline]
pub fn sleep(wait: Duration) -> Sleep {
    if wait <= CHUNK {
        // The common case, as `tokio::time::sleep` makes it.
        return tokio::time::sleep(wait);
    }
    let now = Instant::now();
    let mut span = wait;
    loop {
        if let Some(end) = now.checked_add(span) {
            return tokio::time::sleep_until(end);
        }
        // Halving from `Duration::MAX` reaches a representable span within
        // a few steps; a span of zero always is.
        span /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::{sleep, CHUNK};
    use core::time::Duration;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn waits_past_tokios_thirty_years_are_slept_in_full() {
        for wait in [
            CHUNK,
            CHUNK + Duration::from_nanos(1),
            Duration::from_secs(86_400 * 365 * 31),
            Duration::from_secs(86_400 * 365 * 1000),
            Duration::from_nanos(u64::MAX),
        ] {
            let start = Instant::now();
            sleep(wait).await;
            let slept = start.elapsed();
            // At least the wait, and no more than tokio's 1 ms tick.
            assert!(slept >= wait, "{wait:?}: slept {slept:?}");
            assert!(
                slept <= wait + Duration::from_millis(1),
                "{wait:?}: slept {slept:?}"
            );
        }
    }
}
