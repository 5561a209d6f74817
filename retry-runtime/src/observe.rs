//! What a call tells the outside world: one `tracing` event (feature
//! `tracing`) and one metrics count per retry and per call that stops on a
//! failure, the time each call took (`metrics`), one span per attempt
//! (feature `attempt-spans`), and each decision to the record a test
//! installed (feature `testing`). Off the success path, but for a store to
//! a thread-local ([`crate::last_call`]), the metrics of a call, the
//! attempt's span and the test's record when those features are on.
//!
//! Fields follow OpenTelemetry's attribute names where one exists:
//! `code.function.name` for the retried function (or the name given to a
//! layer, middleware or closure loop with `named`, or `closure` for a
//! closure loop not named), `error.type` for the class of error an attempt
//! failed with, and on the spans of HTTP attempts `http.request.resend_count`
//! (the attempt number less one, on resends only). `error.type` is the type
//! name of the error an attempt failed with, for every front end (the tower
//! layer's and the middleware's transport errors included); an attempt
//! retried for its value (an HTTP response with status 503, an `Ok` value
//! `on_ok` retries) failed with no error and has none. The older
//! fields `function` and `attempt` are kept alongside until 0.2.
//!
//! | event | level | fields |
//! |---|---|---|
//! | `attempt failed; retrying` | INFO | `code.function.name`, `function`, `attempt`, `wait_ms`, `error.type` |
//! | `attempt not processed; sending again` | DEBUG | `code.function.name`, `function`, `attempt` (unchanged: not a retry), `error.type` |
//! | `attempt slow; hedging` | INFO | `code.function.name`, `function`, `attempt` (the one still running), `wait_ms` (the hedge delay) |
//! | `attempt failed; not retrying` | DEBUG | `code.function.name`, `function`, `attempt`, `attempts`, `elapsed_ms`, `reason`, `error.type` |
//! | `attempt failed; giving up` | WARN | `code.function.name`, `function`, `attempt`, `attempts`, `elapsed_ms`, `reason`, `error.type` |
//!
//! A call that returns a failure emits one of the last two, once: the
//! attempts it made, the time from its start (`elapsed_ms`, read when the
//! call started only if a WARN event of the target would be seen, or with
//! `metrics`) and why it stopped.
//!
//! The span (feature `attempt-spans`, INFO, named `retry.attempt`) wraps
//! each attempt of a retried function or closure loop, and each HTTP attempt
//! of the tower layer, the middleware and the hedge layer (each copy of a
//! request): `code.function.name`, `attempt`, and
//! `http.request.resend_count` for HTTP. It costs a span on every
//! attempt, the successful first one included, which is why it is a feature
//! of its own.

use core::time::Duration;

use crate::{CircuitBreaker, Classification, RetryBudget, Stop};

/// A call's name in events and metrics (a retried function's path, or the
/// name given to a layer, the middleware or a closure loop): kept only when
/// something reads it (feature `tracing`, `metrics` or `testing`), so that without them
/// it takes no room in the call's future, and reads as `""`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Name {
    #[cfg(any(feature = "tracing", feature = "metrics", feature = "testing"))]
    name: &'static str,
}

impl Name {
    /// A closure loop not named: `"closure"`.
    pub(crate) const CLOSURE: Name = Name::new("closure");

    #[allow(unused_variables)] // Read only with `tracing`, `metrics` or `testing`.
    pub(crate) const fn new(name: &'static str) -> Name {
        Name {
            #[cfg(any(feature = "tracing", feature = "metrics", feature = "testing"))]
            name,
        }
    }

    pub(crate) const fn get(self) -> &'static str {
        #[cfg(any(feature = "tracing", feature = "metrics", feature = "testing"))]
        return self.name;
        #[cfg(not(any(feature = "tracing", feature = "metrics", feature = "testing")))]
        ""
    }
}

/// What a decision judged and what it left, beyond the call's name and
/// attempt: the outcome as the rules judged it, and the call's budget and
/// breaker. Read only by the record a test installs (feature `testing`,
/// [`crate::testing::VirtualClock`]).
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub(crate) struct Record<'a>(
    pub(crate) Option<Classification>,
    pub(crate) Option<&'a RetryBudget>,
    pub(crate) Option<&'a CircuitBreaker>,
);

impl Record<'_> {
    /// Tells the record a test installed on this thread, if any.
    #[inline]
    #[cfg_attr(not(feature = "testing"), allow(unused_variables))]
    fn decided(
        self,
        function: &'static str,
        attempt: u32,
        wait: Option<Duration>,
        stop: Option<Stop>,
    ) {
        #[cfg(feature = "testing")]
        crate::testing::record(|at| crate::testing::Decision {
            at,
            function,
            attempt,
            outcome: self.0,
            wait,
            stop,
            budget: self.1.map(RetryBudget::tokens),
            breaker: self.2.map(CircuitBreaker::state),
        });
    }
}

/// A failed attempt is retried after `wait`.
#[cold]
#[inline(never)]
pub(crate) fn retrying(function: &'static str, attempt: u32, wait: Duration, record: Record<'_>) {
    crate::metrics::record_retry(function, wait);
    retry_decided(function, attempt, wait, record);
}

/// The event alone of [`retrying`]: a hedged call tells a retry when the
/// attempt fails, and counts it when the retry starts. Inlined: the retry
/// loop's [`retrying`] is unchanged by it.
#[inline(always)]
pub(crate) fn retry_decided(
    function: &'static str,
    attempt: u32,
    wait: Duration,
    record: Record<'_>,
) {
    record.decided(function, attempt, Some(wait), None);
    // Taken whether or not the event is enabled, so that it never reaches a
    // later event.
    #[cfg(feature = "tracing")]
    let error_type = error_type::take();
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "retry_runtime",
        function,
        "code.function.name" = function,
        attempt,
        wait_ms = wait.as_secs_f64() * 1000.0,
        "error.type" = error_type,
        "attempt failed; retrying"
    );
}

/// The server never processed `attempt` (its connection was refused, or
/// its HTTP/2 stream): sent again at once, as the same attempt, and not
/// counted as a retry (gRFC A6's transparent retry).
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[cold]
#[inline(never)]
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn sending_again(function: &'static str, attempt: u32) {
    #[cfg(feature = "tracing")]
    let error_type = error_type::take();
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "retry_runtime",
        function,
        "code.function.name" = function,
        attempt,
        "error.type" = error_type,
        "attempt not processed; sending again"
    );
}

/// A hedged call sends another attempt beside `attempt`, still running
/// after `delay`: counted as a retry (as gRPC counts hedges), and told as a
/// hedge, not as a failure, since nothing failed.
#[cold]
#[inline(never)]
pub(crate) fn hedging(function: &'static str, attempt: u32, delay: Duration, record: Record<'_>) {
    crate::metrics::record_retry(function, delay);
    record.decided(function, attempt, Some(delay), None);
    // No error to name: cleared all the same, as every event takes it, so
    // that none left behind reaches a later event.
    #[cfg(feature = "tracing")]
    let _ = error_type::take();
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "retry_runtime",
        function,
        "code.function.name" = function,
        attempt,
        wait_ms = delay.as_secs_f64() * 1000.0,
        "attempt slow; hedging"
    );
}

/// A call succeeded after `attempt` attempts, in `elapsed` if it was
/// measured: recorded for [`crate::last_call`], a store to a thread-local,
/// the only work here on the success path without `metrics` and `testing`.
#[inline]
pub(crate) fn succeeded(
    function: &'static str,
    attempt: u32,
    elapsed: Option<Duration>,
    record: Record<'_>,
) {
    crate::metrics::record_stop(Stop::Done, function, elapsed);
    crate::stopped::record(attempt, Stop::Done);
    record.decided(function, attempt, None, Some(Stop::Done));
}

/// A failed attempt, numbered `attempt`, is returned to the caller for
/// `reason`, `elapsed` after the call started if that was measured, after
/// `made` attempts in all: a hedged call's answer may come
/// from an attempt other than the newest, and [`crate::last_call`] counts
/// every attempt the call made. The one event of a call that gives up.
#[cold]
#[inline(never)]
pub(crate) fn stopped_after(
    function: &'static str,
    attempt: u32,
    made: u32,
    reason: Stop,
    elapsed: Option<Duration>,
    record: Record<'_>,
) {
    crate::stopped::record(made, reason);
    crate::metrics::record_stop(reason, function, elapsed);
    record.decided(function, attempt, None, Some(reason));
    #[cfg(feature = "tracing")]
    {
        // Taken whether or not the event is enabled, so that it never
        // reaches a later event.
        let error_type = error_type::take();
        let elapsed_ms = elapsed.map(|elapsed| elapsed.as_secs_f64() * 1000.0);
        // The same event at either level (a `tracing` event's level is part
        // of its callsite, so it cannot be chosen at run time).
        macro_rules! gave_up {
            ($level:ident, $message:literal) => {
                tracing::$level!(
                    target: "retry_runtime",
                    function,
                    "code.function.name" = function,
                    attempt,
                    attempts = made,
                    elapsed_ms,
                    reason = reason.as_str(),
                    "error.type" = error_type,
                    $message
                )
            };
        }
        if reason == Stop::NotRetryable {
            gave_up!(debug, "attempt failed; not retrying");
        } else {
            gave_up!(warn, "attempt failed; giving up");
        }
    }
}

/// Whether a call that starts now should read the clock, for the time it
/// takes: the `metrics` feature's call-duration histogram, or the give-up
/// event of `tracing` when an event of its level would be seen.
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[inline]
pub(crate) fn measures_calls() -> bool {
    #[cfg(feature = "metrics")]
    return true;
    #[cfg(not(feature = "metrics"))]
    return tracing::enabled!(target: "retry_runtime", tracing::Level::WARN);
}

/// The class of error the attempt being judged failed with, for the
/// `error.type` field: set by the generic step that holds the outcome, just
/// before it is judged, and taken by the event that follows.
#[cfg(feature = "tracing")]
pub(crate) mod error_type {
    use core::cell::Cell;

    thread_local! {
        static FAILED_WITH: Cell<Option<&'static str>> = const { Cell::new(None) };
    }

    /// The attempt being judged failed with an error of this class.
    #[allow(dead_code)]
    pub(crate) fn set(class: &'static str) {
        let _ = FAILED_WITH.try_with(|failed| failed.set(Some(class)));
    }

    pub(crate) fn take() -> Option<&'static str> {
        FAILED_WITH.try_with(Cell::take).ok().flatten()
    }
}

/// The outcome of an attempt of the tower layer, the middleware or
/// `tower::RetryPolicy`, about to be judged `verdict`: an error's type name
/// is the `error.type` of the event the judgment emits (a response, like a
/// retried `Ok` value, has none). Set only when an event follows, so that it
/// never reaches another.
#[allow(dead_code)]
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn failed_with<T, E>(result: &Result<T, E>, verdict: &crate::Classification) {
    #[cfg(feature = "tracing")]
    if result.is_err() && *verdict != crate::Classification::Done {
        error_type::set(core::any::type_name::<E>());
    }
}

/// One attempt's span, entered each time the attempt is polled (feature
/// `attempt-spans`); nothing without the feature.
#[cfg(feature = "attempt-spans")]
pub(crate) type AttemptSpan = tracing::Span;

/// One attempt's span: nothing, without the feature `attempt-spans`.
#[cfg(not(feature = "attempt-spans"))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AttemptSpan;

/// What `tracing::Span` does, as nothing, without the feature.
#[cfg(not(feature = "attempt-spans"))]
impl AttemptSpan {
    /// No span: for an attempt that is no retried call's, a request a
    /// server runs as one (`tower::ServerLayer`).
    #[cfg(feature = "tower")]
    pub(crate) fn none() -> Self {
        AttemptSpan
    }

    pub(crate) fn enter(&self) -> Self {
        *self
    }
}

/// The span of attempt `attempt` of `function`.
#[cfg_attr(not(feature = "attempt-spans"), allow(unused_variables))]
pub(crate) fn attempt_span(function: &'static str, attempt: u32) -> AttemptSpan {
    #[cfg(feature = "attempt-spans")]
    return tracing::info_span!(
        target: "retry_runtime",
        "retry.attempt",
        "code.function.name" = function,
        attempt,
    );
    #[cfg(not(feature = "attempt-spans"))]
    AttemptSpan
}

/// The span of HTTP attempt `attempt` of the layer or middleware named
/// `function`: `http.request.resend_count` is `attempt - 1`, on resends
/// only, as OpenTelemetry's HTTP conventions ask.
#[allow(dead_code)]
pub(crate) fn http_attempt_span(function: &'static str, attempt: u32) -> AttemptSpan {
    #[cfg(feature = "attempt-spans")]
    return tracing::info_span!(
        target: "retry_runtime",
        "retry.attempt",
        "code.function.name" = function,
        attempt,
        "http.request.resend_count" = (attempt > 1).then(|| attempt - 1),
    );
    #[cfg(not(feature = "attempt-spans"))]
    attempt_span(function, attempt)
}
