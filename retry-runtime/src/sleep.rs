//! Waits of any length on tokio's clock.
//!
//! `tokio::time::sleep` stops a single timer at about 30 years: a longer
//! sleep ends early. A retry loop whose wait ended early would count time
//! that never passed against its deadline and make attempts the policy
//! forbids, so a long wait is slept in chunks until all of it has passed.

use core::time::Duration;

use tokio::time::Instant;

/// The longest single tokio sleep used: well inside tokio's limit of
/// 30 years (`86400 * 365 * 30` seconds), so no chunk is ever cut short.
const CHUNK: Duration = Duration::from_secs(86_400 * 365 * 10);

/// Sleeps for at least `wait` on tokio's clock, however long it is.
///
/// Like `tokio::time::sleep`, it ends on a tick of tokio's 1 ms timer, so
/// it may last up to about 1 ms longer than asked; on a paused clock a wait
/// of 1 ns moves the clock by 1 ms. It never ends sooner. Cancelling it
/// (dropping the future) cancels the wait.
pub async fn sleep(wait: Duration) {
    if wait <= CHUNK {
        // The common case: one timer, as `tokio::time::sleep` makes.
        tokio::time::sleep(wait).await;
        return;
    }
    let started = Instant::now();
    loop {
        let slept = started.elapsed();
        if slept >= wait {
            return;
        }
        tokio::time::sleep((wait - slept).min(CHUNK)).await;
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
            // At least the wait, and no more than tokio's 1 ms tick per chunk.
            let chunks = u32::try_from(wait.as_nanos() / CHUNK.as_nanos() + 1).unwrap();
            assert!(slept >= wait, "{wait:?}: slept {slept:?}");
            assert!(
                slept <= wait + Duration::from_millis(1) * chunks,
                "{wait:?}: slept {slept:?}"
            );
        }
    }
}
