//! Where a circuit breaker stands ([`CircuitState`]), a change of it
//! ([`Transition`]), and the one place such a change is reported: the
//! `metrics` facade and `tracing`.
//!
//! Below both the breaker, which returns its transitions and hands them
//! here, and the metrics module, which names the facade's metrics: neither
//! imports the other.

use std::sync::Arc;

/// Where a [`CircuitBreaker`](crate::CircuitBreaker) stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CircuitState {
    /// Calls go through; their outcomes are counted.
    Closed,
    /// Calls are refused until the open period ends.
    Open,
    /// A few probe calls go through; the others are refused.
    HalfOpen,
}

impl CircuitState {
    /// The state's name, as the metrics label it: `closed`, `open` or
    /// `half_open`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }

    /// The value of the `retry_runtime_circuit_state` gauge: 0 closed,
    /// 1 half-open, 2 open.
    #[must_use]
    pub const fn gauge(self) -> f64 {
        match self {
            CircuitState::Closed => 0.0,
            CircuitState::HalfOpen => 1.0,
            CircuitState::Open => 2.0,
        }
    }
}

/// A change of a breaker's state, as its
/// [`on_transition`](crate::CircuitBreaker::on_transition) callback sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    pub(crate) from: CircuitState,
    pub(crate) to: CircuitState,
}

impl Transition {
    /// The state before.
    #[must_use]
    pub const fn from(self) -> CircuitState {
        self.from
    }

    /// The state now.
    #[must_use]
    pub const fn to(self) -> CircuitState {
        self.to
    }
}

/// The facade counter of circuit breaker transitions, labelled `breaker`,
/// `from` and `to` (`closed`, `half_open`, `open`).
#[cfg(feature = "metrics")]
pub(crate) const CIRCUIT_TRANSITIONS_TOTAL: &str = "retry_runtime_circuit_transitions_total";

/// The facade gauge of each circuit breaker's state, labelled `breaker`
/// (one series per breaker name): 0 closed, 1 half-open, 2 open. Set at
/// every transition, and when a registry makes a breaker for a new key.
#[cfg(feature = "metrics")]
pub(crate) const CIRCUIT_STATE: &str = "retry_runtime_circuit_state";

/// A breaker's name: a `&'static str` given in a `const` (so that a breaker
/// can be a `static`), or a name made at run time (a host), shared.
///
/// Two slots rather than one enum: `const fn with_name` cannot drop an
/// `Arc` it would replace, so it sets `fixed`, and `owned` is read only
/// when `fixed` is unset. Read only when a transition is reported.
#[derive(Clone, Debug, Default)]
pub(crate) struct Name {
    /// Set by `with_name`, in a `const`: a name made at run time before is
    /// kept until the breaker drops, but no longer read.
    pub(crate) fixed: Option<&'static str>,
    /// Set by `with_owned_name` (which unsets `fixed`) or by a registry.
    pub(crate) owned: Option<Arc<str>>,
}

impl Name {
    /// The name of a breaker nobody named.
    pub(crate) const DEFAULT: &'static str = "circuit";

    pub(crate) fn as_str(&self) -> &str {
        self.fixed
            .or(self.owned.as_deref())
            .unwrap_or(Self::DEFAULT)
    }

    /// The name as a metrics label value: borrowed or shared, never copied.
    #[cfg(feature = "metrics")]
    fn label(&self) -> ::metrics::SharedString {
        match (self.fixed, &self.owned) {
            (None, Some(name)) => ::metrics::SharedString::from(Arc::clone(name)),
            (fixed, _) => ::metrics::SharedString::const_str(fixed.unwrap_or(Self::DEFAULT)),
        }
    }
}

/// Sets the state gauge of a breaker that has not changed state, so that
/// its series is there before its first transition (a registry's breaker,
/// made for a host on first use).
#[cfg(feature = "metrics")]
#[cold]
pub(crate) fn publish(breaker: &Name, state: CircuitState) {
    ::metrics::gauge!(CIRCUIT_STATE, "breaker" => breaker.label()).set(state.gauge());
}

/// Tells the facade and `tracing` of a transition of the breaker named
/// `breaker`, whose probe limit is `probes`; `open_ms` is the open period
/// just started, in milliseconds, when it opened.
#[cold]
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn report(breaker: &Name, transition: Transition, probes: u64, open_ms: Option<u64>) {
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!(
            CIRCUIT_TRANSITIONS_TOTAL,
            "breaker" => breaker.label(),
            "from" => transition.from.as_str(),
            "to" => transition.to.as_str(),
        )
        .increment(1);
        publish(breaker, transition.to);
    }
    #[cfg(feature = "tracing")]
    match transition.to {
        CircuitState::Open => tracing::warn!(
            target: "retry_runtime",
            breaker = breaker.as_str(),
            open_ms = open_ms.unwrap_or(0),
            "circuit opened; refusing calls"
        ),
        CircuitState::HalfOpen => tracing::info!(
            target: "retry_runtime",
            breaker = breaker.as_str(),
            probes,
            "circuit half-open; probing"
        ),
        CircuitState::Closed => tracing::info!(
            target: "retry_runtime",
            breaker = breaker.as_str(),
            "circuit closed"
        ),
    }
}
