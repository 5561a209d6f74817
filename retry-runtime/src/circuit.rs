//! Where a circuit breaker stands ([`CircuitState`]), a change of it
//! ([`Transition`]), and the one place such a change is reported: the
//! process-wide counts [`metrics::snapshot`](crate::metrics::snapshot)
//! reads, the `metrics` facade and `tracing`.
//!
//! Below both the breaker, which returns its transitions and hands them
//! here, and the metrics module, which reads the counts: neither imports
//! the other.

use core::sync::atomic::{AtomicU64, Ordering};

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
    from: CircuitState,
    to: CircuitState,
}

impl Transition {
    pub(crate) const fn new(from: CircuitState, to: CircuitState) -> Self {
        Transition { from, to }
    }

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
pub const CIRCUIT_TRANSITIONS_TOTAL: &str = "retry_runtime_circuit_transitions_total";

/// The facade gauge of each circuit breaker's state, labelled `breaker`:
/// 0 closed, 1 half-open, 2 open.
#[cfg(feature = "metrics")]
pub const CIRCUIT_STATE: &str = "retry_runtime_circuit_state";

/// Transitions since the process started, by the state entered.
static OPENED: AtomicU64 = AtomicU64::new(0);
static HALF_OPENED: AtomicU64 = AtomicU64::new(0);
static CLOSED: AtomicU64 = AtomicU64::new(0);

/// The transitions so far: into open, into half-open, into closed.
pub(crate) fn counts() -> (u64, u64, u64) {
    (
        OPENED.load(Ordering::Relaxed),
        HALF_OPENED.load(Ordering::Relaxed),
        CLOSED.load(Ordering::Relaxed),
    )
}

/// What a breaker tells the outside world of a transition: `breaker` is its
/// name, `probes` its probe limit, and `open_ms` the open period just
/// started, in milliseconds, when it opened.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Report {
    pub(crate) breaker: &'static str,
    pub(crate) transition: Transition,
    pub(crate) probes: u64,
    pub(crate) open_ms: Option<u64>,
}

/// Counts a transition, and tells the facade and `tracing`.
#[cold]
pub(crate) fn report(report: Report) {
    let Report {
        breaker,
        transition,
        probes,
        open_ms,
    } = report;
    let counter = match transition.to {
        CircuitState::Open => &OPENED,
        CircuitState::HalfOpen => &HALF_OPENED,
        CircuitState::Closed => &CLOSED,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "metrics")]
    {
        ::metrics::counter!(
            CIRCUIT_TRANSITIONS_TOTAL,
            "breaker" => breaker,
            "from" => transition.from.as_str(),
            "to" => transition.to.as_str(),
        )
        .increment(1);
        ::metrics::gauge!(CIRCUIT_STATE, "breaker" => breaker).set(transition.to.gauge());
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (breaker, probes, open_ms);
    #[cfg(feature = "tracing")]
    match transition.to {
        CircuitState::Open => tracing::warn!(
            target: "retry_runtime",
            breaker,
            open_ms = open_ms.unwrap_or(0),
            "circuit opened; refusing calls"
        ),
        CircuitState::HalfOpen => tracing::info!(
            target: "retry_runtime",
            breaker,
            probes,
            "circuit half-open; probing"
        ),
        CircuitState::Closed => tracing::info!(
            target: "retry_runtime",
            breaker,
            "circuit closed"
        ),
    }
}
