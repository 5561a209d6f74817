//! Retries, calls that ended and circuit transitions through the
//! [`metrics`](https://docs.rs/metrics) facade (feature `metrics`), for any
//! exporter.
//!
//! Named in Prometheus style with the prefix `retry_runtime_`, so that
//! nothing collides with other retry crates' metrics (tower-resilience's
//! `retry_calls_total`). `function` is the retried function's path
//! (`my_crate::fetch_user`), the name given to a tower layer
//! (`RetryLayer::named`), middleware or closure loop (`Retry::named`), or
//! `closure` for a loop of the closure API not named; `breaker` is the
//! breaker's name:
//! the one given with `CircuitBreaker::with_name` or `with_owned_name`, the
//! key of a breaker a `Registry` made (the host, for `per_authority`), or
//! `circuit`. The breaker metrics have one series per name, so give each
//! breaker its own.
//!
//! | metric | kind | labels | counts |
//! |---|---|---|---|
//! | `retry_runtime_calls_total` | counter | `function`, `outcome`, `reason` | calls that ended: `outcome` is `success` or `failure`; `reason` is why the call stopped, one of `done` (a success), `not_retryable`, `exhausted`, `deadline`, `budget`, `hint_too_long` (the server asked for a wait above `cap`), `open` (the circuit breaker is open) or `nested` (an inner retried function already gave up) |
//! | `retry_runtime_retries_total` | counter | `function` | retries made: attempts after the first |
//! | `retry_runtime_wait_seconds` | histogram | `function` | each wait before a retry, in seconds |
//! | `retry_runtime_call_duration_seconds` | histogram | `function`, `outcome` | each call that ended, from the start of its first attempt to its return, waits included, in seconds |
//! | `retry_runtime_circuit_transitions_total` | counter | `breaker`, `from`, `to` | circuit breaker state changes; states `closed`, `half_open`, `open` |
//! | `retry_runtime_circuit_state` | gauge | `breaker` | the breaker's state: 0 closed, 1 half-open, 2 open |
//!
//! A retried `Ok` value returned when no retry is left (an HTTP 503 after
//! `max` attempts) counts as `outcome="failure"`, with its reason.
//!
//! `retry_retries_total`, the counter's name on `main` before the metric
//! names took the `retry_runtime_` prefix, is still emitted alongside
//! `retry_runtime_retries_total`, until 0.2.
//! `retry_calls_total{reason="done"}` is gone without an alias: its name is
//! the one that collided, and emitting both would double the facade's work
//! on the success path. Count `retry_runtime_calls_total` instead.
//!
//! Call [`describe`] once after installing a recorder to give exporters
//! the metrics' descriptions and units.
//!
// The facade's items exist with the feature only: linked here when it is on,
// to the crate's table of Cargo features otherwise, so that no build shows an
// unresolved link or links to a page that does not exist.
#![cfg_attr(feature = "metrics", doc = "[`describe`]: describe")]
#![cfg_attr(not(feature = "metrics"), doc = "[`describe`]: crate#cargo-features")]

use core::time::Duration;

use crate::Stop;

/// The facade counter of calls that ended, labelled `function`, `outcome`
/// (`success` or `failure`) and `reason` (see [the module](self)).
#[cfg(feature = "metrics")]
pub(crate) const CALLS_TOTAL: &str = "retry_runtime_calls_total";

/// The facade counter of retries made (attempts after the first),
/// labelled `function`.
#[cfg(feature = "metrics")]
pub(crate) const RETRIES_TOTAL: &str = "retry_runtime_retries_total";

/// The facade histogram of the waits before retries, in seconds, labelled
/// `function`.
#[cfg(feature = "metrics")]
pub(crate) const WAIT_SECONDS: &str = "retry_runtime_wait_seconds";

/// The facade histogram of the time each call took, from the start of its
/// first attempt to its return, in seconds, labelled `function` and
/// `outcome`.
#[cfg(feature = "metrics")]
pub(crate) const CALL_DURATION_SECONDS: &str = "retry_runtime_call_duration_seconds";

// The breaker's names live with the one place its transitions are
// reported (below the breaker and this module, so neither imports the
// other).
#[cfg(feature = "metrics")]
pub(crate) use crate::circuit::{CIRCUIT_STATE, CIRCUIT_TRANSITIONS_TOTAL};

/// The name `RETRIES_TOTAL` had before it took the `retry_runtime_`
/// prefix, still emitted alongside it (same label, same counts) until 0.2,
/// so that dashboards can move over. Costs one more counter on the retry path only.
#[cfg(feature = "metrics")]
pub(crate) const RETRIES_TOTAL_BEFORE_0_2: &str = "retry_retries_total";

/// Describes the facade's metrics to the installed recorder: call it once,
/// after installing it (a recorder installed later hears no descriptions).
///
/// ```
/// // Install your exporter's recorder first, e.g.
/// // `metrics_exporter_prometheus::PrometheusBuilder::new().install()?`.
/// retry_runtime::metrics::describe();
/// ```
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe() {
    ::metrics::describe_counter!(
        CALLS_TOTAL,
        ::metrics::Unit::Count,
        "Retried calls that ended, by function, outcome and stop reason."
    );
    ::metrics::describe_counter!(
        RETRIES_TOTAL,
        ::metrics::Unit::Count,
        "Retries made (attempts after the first), by function."
    );
    ::metrics::describe_histogram!(
        WAIT_SECONDS,
        ::metrics::Unit::Seconds,
        "Waits before retries, by function."
    );
    ::metrics::describe_histogram!(
        CALL_DURATION_SECONDS,
        ::metrics::Unit::Seconds,
        "Time each retried call took, its attempts and waits together, by function and outcome."
    );
    ::metrics::describe_counter!(
        CIRCUIT_TRANSITIONS_TOTAL,
        ::metrics::Unit::Count,
        "Circuit breaker state changes, by breaker, from and to."
    );
    ::metrics::describe_gauge!(
        CIRCUIT_STATE,
        "Circuit breaker state, by breaker: 0 closed, 1 half-open, 2 open."
    );
    ::metrics::describe_counter!(
        RETRIES_TOTAL_BEFORE_0_2,
        ::metrics::Unit::Count,
        "Deprecated: use retry_runtime_retries_total. Removed in 0.2."
    );
}

/// A retry is made after `wait`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_retry(function: &'static str, wait: Duration) {
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!(RETRIES_TOTAL, "function" => function).increment(1);
        ::metrics::counter!(RETRIES_TOTAL_BEFORE_0_2, "function" => function).increment(1);
        ::metrics::histogram!(WAIT_SECONDS, "function" => function).record(wait.as_secs_f64());
    }
}

/// A call ended for `stop` ([`Stop::Done`]: a success), `elapsed` after it
/// started.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn record_stop(stop: Stop, function: &'static str, elapsed: Option<Duration>) {
    #[cfg(feature = "metrics")]
    {
        // `success` only for `Stop::Done`: a retried `Ok` value returned
        // when no retry is left (an HTTP 503 after `max` attempts) is a
        // `failure`.
        let outcome = if stop == Stop::Done {
            "success"
        } else {
            "failure"
        };
        ::metrics::counter!(
            CALLS_TOTAL,
            "function" => function,
            "outcome" => outcome,
            "reason" => stop.as_str(),
        )
        .increment(1);
        if let Some(elapsed) = elapsed {
            ::metrics::histogram!(CALL_DURATION_SECONDS, "function" => function, "outcome" => outcome)
                .record(elapsed.as_secs_f64());
        }
    }
}
