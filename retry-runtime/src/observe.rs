//! What a call tells the outside world: one `tracing` event (feature
//! `tracing`) and one metrics count per retry and per call that stops on a
//! failure. Off the success path: a call that succeeds at once reaches none
//! of it.

use core::time::Duration;

use crate::Stop;

/// A failed attempt is retried after `wait`.
#[cold]
#[inline(never)]
pub(crate) fn retrying(function: &'static str, attempt: u32, wait: Duration) {
    crate::metrics::record_retry(function, wait);
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "retry_runtime",
        function,
        attempt,
        wait_ms = wait.as_secs_f64() * 1000.0,
        "attempt failed; retrying"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (function, attempt, wait);
}

/// A failed attempt is returned to the caller, for `reason`.
#[cold]
#[inline(never)]
pub(crate) fn stopped(function: &'static str, attempt: u32, reason: Stop) {
    crate::metrics::record_stop(reason, function);
    #[cfg(feature = "tracing")]
    if reason == Stop::NotRetryable {
        tracing::debug!(
            target: "retry_runtime",
            function,
            attempt,
            reason = reason.as_str(),
            "attempt failed; not retrying"
        );
    } else {
        tracing::warn!(
            target: "retry_runtime",
            function,
            attempt,
            reason = reason.as_str(),
            "attempt failed; giving up"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (function, attempt);
}
