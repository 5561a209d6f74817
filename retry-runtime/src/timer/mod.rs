//! The timers that need no runtime, and how the clock is read.
//!
//! Inside a tokio runtime, waits are tokio's (see [`crate::sleep`]). Anywhere
//! else a wait registers with one of these:
//!
//! - [`thread`] (native targets): one timer thread for the process, started
//!   on the first wait outside tokio, that wakes each waiting task when its
//!   time comes. It works under any executor (smol, async-std,
//!   `futures::executor`, a hand-written one) and costs a tokio user nothing.
//! - [`host`] (`wasm32-unknown-unknown`): the JS host's `setTimeout`, and its
//!   `performance.now()` for the clock.
//!
//! With the feature `testing`, a test may install a simulated clock on its
//! thread instead ([`simulated`]): every clock reading and every wait, async
//! or blocking, is then on it.

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub(crate) mod host;
#[cfg(feature = "testing")]
pub(crate) mod simulated;
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub(crate) mod thread;

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

/// A point on a call's clock: tokio's `Instant` natively (a
/// `std::time::Instant` that tokio's clock may also produce), the host's
/// `performance.now()` on `wasm32-unknown-unknown`.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub(crate) type Instant = tokio::time::Instant;
/// A point on a call's clock: tokio's `Instant` natively (a
/// `std::time::Instant` that tokio's clock may also produce), the host's
/// `performance.now()` on `wasm32-unknown-unknown`.
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub(crate) type Instant = host::Instant;

/// A new ticket, from 1: what tells apart waits that end at the same
/// instant, and on a JS host finds a wait's host timer (0 there is none).
fn ticket() -> u64 {
    static TICKETS: AtomicU64 = AtomicU64::new(1);
    TICKETS.fetch_add(1, Ordering::Relaxed)
}

/// Whether this thread runs inside a tokio runtime, whose timer and clock
/// a wait then uses.
///
/// tokio 1.x cannot tell whether that runtime was built with its timer
/// enabled (`Builder::enable_time`, which `#[tokio::main]`, `#[tokio::test]`
/// and `Runtime::new` turn on) without panicking; once it can
/// (tokio-rs/tokio#8361), a runtime without one will fall back to the
/// timer thread here instead of panicking as `tokio::time::sleep` does.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[inline]
pub(crate) fn in_tokio() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// Now, on the real clock.
#[inline]
pub(crate) fn real_now() -> Instant {
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    return tokio::time::Instant::from_std(std::time::Instant::now());
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    return host::Instant::now();
}

/// The wall clock, for HTTP dates: `SystemTime::now()`, or on a JS host
/// (where that panics) `Date.now()`, the Unix epoch if the host's answer is
/// not a time.
pub(crate) fn system_now() -> std::time::SystemTime {
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    return std::time::SystemTime::now();
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    return Duration::try_from_secs_f64(js_sys::Date::now() / 1000.0)
        .ok()
        .and_then(|since| std::time::UNIX_EPOCH.checked_add(since))
        .unwrap_or(std::time::UNIX_EPOCH);
}

/// `start + wait`, or the farthest instant the clock can count short of
/// it: a wait of centuries ends when the clock can count no further, never
/// with an overflow.
pub(crate) fn end_of(start: Instant, wait: Duration) -> Instant {
    let mut span = wait;
    loop {
        if let Some(end) = start.checked_add(span) {
            return end;
        }
        // Halving from `Duration::MAX` reaches a representable span within
        // a few steps; a span of zero always is.
        span /= 2;
    }
}
