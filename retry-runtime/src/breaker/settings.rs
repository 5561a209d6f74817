//! How a breaker is set: its defaults, and the `with_*` setters, each of
//! which saturates or clamps what it is given rather than failing, so that
//! a breaker can be a `static` made in a `const`.

use core::time::Duration;
use std::sync::Arc;

use super::word::{StateCell, Word, COUNT_MAX};
use super::CircuitBreaker;
use crate::budget::milli;
use crate::circuit::{Name, Transition};
use crate::ring::{AtomicU64, Ring};

/// A millisecond count from a duration, saturating.
const fn millis(d: Duration) -> u64 {
    let ms = d.as_millis();
    if ms > u64::MAX as u128 {
        u64::MAX
    } else {
        ms as u64
    }
}

/// `value` within `[low, high]`: what every setter below keeps to (a
/// ratio to `[0, 1]` in thousandths, a count to `[1, COUNT_MAX]`), since
/// `Ord::clamp` is not `const`.
const fn clamp(value: u64, low: u64, high: u64) -> u64 {
    if value < low {
        low
    } else if value > high {
        high
    } else {
        value
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new()
    }
}

/// A breaker with the defaults: one that opens and closes, or an
/// `adaptive` one, which throttles (see `CircuitBreaker::adaptive`).
macro_rules! breaker {
    ($adaptive:expr) => {
        CircuitBreaker {
            state: StateCell::new(Word::closed(0, $adaptive)),
            // A 10 s window; an adaptive breaker's, 2 s, was chosen in the
            // overload model (docs/overload.md).
            ring: Ring::new(if $adaptive { 200 } else { 1000 }),
            streak: AtomicU64::new(0),
            min_calls: 20,
            failure_ratio: 500,
            consecutive_failures: 10,
            #[cfg(not(loom))]
            epoch: crate::clock::Epoch::new(),
            #[cfg(loom)]
            now: AtomicU64::new(0),
            open_ms: 5000,
            max_open_ms: 30_000,
            probes: 3,
            close_after: 3,
            requests_per_accept: if $adaptive { ADAPTIVE_K } else { 0 },
            jitter: 500,
            name: Name::unset(),
            on_transition: None,
        }
    };
}

/// An adaptive breaker's K by default, in thousandths (the SRE book's 2).
const ADAPTIVE_K: u64 = 2000;

impl CircuitBreaker {
    /// A closed breaker with the defaults: see the table above.
    #[cfg(not(loom))]
    #[must_use]
    pub const fn new() -> Self {
        breaker!(false)
    }

    /// Under loom, whose atomics cannot be made in a `const fn`.
    #[cfg(loom)]
    #[must_use]
    pub fn new() -> Self {
        breaker!(false)
    }

    /// An adaptive throttle (the Google SRE book's, "Handling Overload"):
    /// instead of opening and closing, it refuses each new call with
    /// probability max(0, (requests - K * accepts) / (requests + 1)) over
    /// the window, where requests are the calls asked for (refused ones
    /// included) and accepts those the dependency answered with success.
    /// So it lets through about K times what the dependency has lately
    /// accepted, and refuses the rest locally, at once.
    ///
    /// K is 2 ([`with_requests_per_accept`](Self::with_requests_per_accept))
    /// and the window 2 s ([`with_window`](Self::with_window)) by default,
    /// chosen in the overload model (docs/overload.md): with the book's
    /// 2-minute window, per process at a low request rate, a fleet never
    /// recovered from a short overload; with a 10 s one it took about 40 s.
    /// A refused call fails as an open breaker's does ([`CircuitOpen`](crate::CircuitOpen), reason `open`);
    /// [`state`](Self::state) stays [`Closed`](crate::CircuitState::Closed)
    /// unless an operator forces it open. The settings of a breaker that
    /// opens (`min_calls`, `failure_ratio`, the open periods, the probes)
    /// are not used.
    ///
    /// ```
    /// use retry_runtime::{retry, CircuitBreaker};
    ///
    /// static PAYMENTS: CircuitBreaker = CircuitBreaker::adaptive().with_name("payments");
    ///
    /// #[retry(max = 3, breaker = &PAYMENTS)]
    /// async fn charge(cents: u64) -> Result<u64, std::io::Error> {
    ///     Ok(cents)
    /// }
    /// ```
    #[cfg(not(loom))]
    #[must_use]
    pub const fn adaptive() -> Self {
        breaker!(true)
    }

    /// An adaptive breaker's K: it starts refusing calls once they are more
    /// than `k` times those accepted in the window (at least 1, kept to
    /// three decimals). Lower refuses sooner. Not used by a breaker that
    /// opens and closes.
    #[must_use]
    pub const fn with_requests_per_accept(mut self, k: f32) -> Self {
        if self.requests_per_accept != 0 {
            self.requests_per_accept = clamp(milli(k), 1000, u64::MAX);
        }
        self
    }

    /// How far back outcomes count, in tenths (at least a millisecond each).
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.ring.bucket_ms = Ring::bucket_ms(window);
        self
    }

    /// The fewest finished calls in the window before the ratio is judged, so
    /// that two failures out of three do not open the circuit.
    #[must_use]
    pub const fn with_min_calls(mut self, min_calls: u32) -> Self {
        self.min_calls = clamp(min_calls as u64, 1, u64::MAX);
        self
    }

    /// The share of failed calls in the window at which the circuit opens,
    /// from 0 to 1 (kept to three decimals).
    #[must_use]
    pub const fn with_failure_ratio(mut self, failure_ratio: f32) -> Self {
        self.failure_ratio = clamp(milli(failure_ratio), 0, 1000);
        self
    }

    /// The failures in a row, while closed, that open the circuit whatever
    /// the window holds; 0 for none.
    #[must_use]
    pub const fn with_consecutive_failures(mut self, failures: u32) -> Self {
        self.consecutive_failures = if failures == 0 {
            u64::MAX
        } else {
            failures as u64
        };
        self
    }

    /// The first open period (before jitter).
    #[must_use]
    pub const fn with_open_for(mut self, open_for: Duration) -> Self {
        self.open_ms = millis(open_for);
        self
    }

    /// The longest open period: each failed probe doubles the period, up to
    /// this.
    #[must_use]
    pub const fn with_max_open_for(mut self, max_open_for: Duration) -> Self {
        self.max_open_ms = millis(max_open_for);
        self
    }

    /// The most probe calls at a time when half-open (1 to 65535).
    #[must_use]
    pub const fn with_probes(mut self, probes: u32) -> Self {
        self.probes = clamp(probes as u64, 1, COUNT_MAX);
        self
    }

    /// The probe successes that close the circuit (1 to 65535).
    #[must_use]
    pub const fn with_close_after(mut self, successes: u32) -> Self {
        self.close_after = clamp(successes as u64, 1, COUNT_MAX);
        self
    }

    /// How much of each open period is drawn at random, from 0 (exactly the
    /// period) to 1 (uniform between zero and the period).
    #[must_use]
    pub const fn with_jitter(mut self, jitter: f32) -> Self {
        self.jitter = clamp(milli(jitter), 0, 1000);
        self
    }

    /// The name `tracing` events and the metrics' `breaker` label give the
    /// breaker (`circuit` unless named), in a `const` or a `static`.
    ///
    /// Give each breaker its own name: the `retry_runtime_circuit_state`
    /// gauge has one series per name, so breakers sharing one overwrite
    /// each other's state. For a name made at run time (a host's), use
    /// [`with_owned_name`](Self::with_owned_name).
    #[must_use]
    pub const fn with_name(mut self, name: &'static str) -> Self {
        self.name.set_static(name);
        self
    }

    /// The same as [`with_name`](Self::with_name), with a name made at run
    /// time: a `String`, a `&str` (copied once, here), a `Box<str>` or an
    /// `Arc<str>` (shared, not copied). For one breaker per host, tenant or
    /// shard, each with its own series in the metrics and its own name in
    /// `tracing` events.
    ///
    /// The name is read only when the breaker changes state: calls neither
    /// touch nor copy it.
    ///
    /// ```
    /// use retry_runtime::CircuitBreaker;
    ///
    /// let host = String::from("payments.internal:443");
    /// let breaker = CircuitBreaker::new().with_owned_name(host);
    /// assert_eq!(breaker.name(), "payments.internal:443");
    /// ```
    ///
    /// A [`Registry`](crate::registry::Registry) of
    /// [`Upstream`](crate::registry::Upstream)s names a breaker its
    /// factory left unnamed after its key (the host of the tower layer's and
    /// the middleware's `per_authority`) without being asked.
    #[must_use]
    pub fn with_owned_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name.set_owned(name.into());
        self
    }

    /// Names the breaker `name` unless [`with_name`](Self::with_name) or
    /// [`with_owned_name`](Self::with_owned_name) named it.
    pub(crate) fn name_by_default(&mut self, name: &Arc<str>) {
        if !self.name.is_set() {
            self.name.set_owned(Arc::clone(name));
        }
    }

    /// Calls `callback` at every change of state, on the thread that made
    /// it, just after it is made: to log it, page someone, or export it.
    /// Keep it short; it runs inside the call that caused the change.
    ///
    /// ```
    /// use retry_runtime::{CircuitBreaker, CircuitState, Transition};
    ///
    /// fn page_when_open(breaker: &CircuitBreaker, change: Transition) {
    ///     if change.to() == CircuitState::Open {
    ///         eprintln!("{} is refusing calls", breaker.name());
    ///     }
    /// }
    ///
    /// static PAYMENTS: CircuitBreaker = CircuitBreaker::new()
    ///     .with_name("payments")
    ///     .on_transition(page_when_open);
    /// ```
    #[must_use]
    pub const fn on_transition(mut self, callback: fn(&CircuitBreaker, Transition)) -> Self {
        self.on_transition = Some(callback);
        self
    }
}
