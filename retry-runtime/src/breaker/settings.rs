//! How a breaker is set: its defaults, and the `with_*` setters, each of
//! which saturates or clamps what it is given rather than failing, so that
//! a breaker can be a `static` made in a `const`.

use core::time::Duration;
use std::sync::Arc;

use super::window::{Thresholds, Window};
use super::word::{StateCell, Word, COUNT_MAX};
use super::CircuitBreaker;
use crate::circuit::{Name, Transition};
use crate::ring::Ring;

/// A millisecond count from a duration, saturating.
const fn millis(d: Duration) -> u64 {
    let ms = d.as_millis();
    if ms > u64::MAX as u128 {
        u64::MAX
    } else {
        ms as u64
    }
}

/// Thousandths from a ratio in `[0, 1]`; NaN and negatives are 0, more than
/// 1 is 1.
const fn thousandths(ratio: f32) -> u64 {
    // Float-to-integer `as` saturates, and NaN becomes 0.
    let value = (ratio as f64 * 1000.0 + 0.5) as u64;
    if value > 1000 {
        1000
    } else {
        value
    }
}

const fn clamp_count(count: u32) -> u64 {
    let count = count as u64;
    if count == 0 {
        1
    } else if count > COUNT_MAX {
        COUNT_MAX
    } else {
        count
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
            window: Window::new(),
            thresholds: if $adaptive {
                Thresholds::ADAPTIVE
            } else {
                Thresholds::DEFAULT
            },
            #[cfg(not(loom))]
            epoch: crate::clock::Epoch::new(),
            #[cfg(loom)]
            now: loom::sync::atomic::AtomicU64::new(0),
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
            // Float-to-integer `as` saturates, and NaN becomes 0.
            let k = (k as f64 * 1000.0 + 0.5) as u64;
            self.requests_per_accept = if k < 1000 { 1000 } else { k };
        }
        self
    }

    /// How far back outcomes count, in tenths (at least a millisecond each).
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.thresholds.bucket_ms = Ring::bucket_ms(window);
        self
    }

    /// The fewest finished calls in the window before the ratio is judged, so
    /// that two failures out of three do not open the circuit.
    #[must_use]
    pub const fn with_min_calls(mut self, min_calls: u32) -> Self {
        self.thresholds.min_calls = if min_calls == 0 { 1 } else { min_calls as u64 };
        self
    }

    /// The share of failed calls in the window at which the circuit opens,
    /// from 0 to 1 (kept to three decimals).
    #[must_use]
    pub const fn with_failure_ratio(mut self, failure_ratio: f32) -> Self {
        self.thresholds.failure_ratio = thousandths(failure_ratio);
        self
    }

    /// The failures in a row, while closed, that open the circuit whatever
    /// the window holds; 0 for none.
    #[must_use]
    pub const fn with_consecutive_failures(mut self, failures: u32) -> Self {
        self.thresholds.consecutive_failures = if failures == 0 {
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
        self.probes = clamp_count(probes);
        self
    }

    /// The probe successes that close the circuit (1 to 65535).
    #[must_use]
    pub const fn with_close_after(mut self, successes: u32) -> Self {
        self.close_after = clamp_count(successes);
        self
    }

    /// How much of each open period is drawn at random, from 0 (exactly the
    /// period) to 1 (uniform between zero and the period).
    #[must_use]
    pub const fn with_jitter(mut self, jitter: f32) -> Self {
        self.jitter = thousandths(jitter);
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
