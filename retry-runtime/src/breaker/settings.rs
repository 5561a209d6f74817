//! How a breaker is set: its defaults, and the `with_*` setters, each of
//! which saturates or clamps what it is given rather than failing, so that
//! a breaker can be a `static` made in a `const`.

use core::time::Duration;
use std::sync::Arc;

use super::word::{StateCell, Word, COUNT_MAX};
use super::CircuitBreaker;
use crate::budget::milli;
use crate::circuit::{Name, Transition};
use crate::ring::{clamp, millis, AtomicU64, Ring};

/// `with_*` setters that each store what they are given, kept in range as
/// said, in one field: `name(argument: Type) => field = value;`.
macro_rules! setters {
    ($(
        $(#[$doc:meta])*
        $name:ident($arg:ident: $ty:ty) => $($field:ident).+ = $value:expr;
    )*) => {$(
        $(#[$doc])*
        #[must_use]
        pub const fn $name(mut self, $arg: $ty) -> Self {
            self.$($field).+ = $value;
            self
        }
    )*};
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
            // No name yet: reads as `Name::DEFAULT`.
            name: Name {
                fixed: None,
                owned: None,
            },
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
        self.name.fixed = None;
        self.name.owned = Some(name.into());
        self
    }

    /// A breaker a registry just made for `key`: named after it unless
    /// [`with_name`](Self::with_name) or
    /// [`with_owned_name`](Self::with_owned_name) named it, and the metrics'
    /// state gauge set to the state now, without a transition, so that its
    /// series is there (at closed) before anything goes wrong.
    pub(crate) fn made_for(&mut self, key: &Arc<str>) {
        if self.name.fixed.is_none() {
            self.name.owned.get_or_insert_with(|| Arc::clone(key));
        }
        #[cfg(feature = "metrics")]
        crate::circuit::publish(&self.name, self.state());
    }

    setters! {
        /// The name `tracing` events and the metrics' `breaker` label give the
        /// breaker (`circuit` unless named), in a `const` or a `static`.
        ///
        /// Give each breaker its own name: the `retry_runtime_circuit_state`
        /// gauge has one series per name, so breakers sharing one overwrite
        /// each other's state. For a name made at run time (a host's), use
        /// [`with_owned_name`](Self::with_owned_name).
        with_name(name: &'static str) => name.fixed = Some(name);
        /// How far back outcomes count, in tenths (at least a millisecond each).
        with_window(window: Duration) => ring.bucket_ms = Ring::bucket_ms(window);
        /// The fewest finished calls in the window before the ratio is judged, so
        /// that two failures out of three do not open the circuit.
        with_min_calls(min_calls: u32) => min_calls = clamp(min_calls as u64, 1, u64::MAX);
        /// The share of failed calls in the window at which the circuit opens,
        /// from 0 to 1 (kept to three decimals).
        with_failure_ratio(failure_ratio: f32) =>
            failure_ratio = clamp(milli(failure_ratio), 0, 1000);
        /// The failures in a row, while closed, that open the circuit whatever
        /// the window holds; 0 for none.
        with_consecutive_failures(failures: u32) => consecutive_failures = match failures {
            0 => u64::MAX,
            failures => failures as u64,
        };
        /// The first open period (before jitter).
        with_open_for(open_for: Duration) => open_ms = millis(open_for.as_millis());
        /// The longest open period: each failed probe doubles the period, up to
        /// this.
        with_max_open_for(max_open_for: Duration) =>
            max_open_ms = millis(max_open_for.as_millis());
        /// The most probe calls at a time when half-open (1 to 65535).
        with_probes(probes: u32) => probes = clamp(probes as u64, 1, COUNT_MAX);
        /// The probe successes that close the circuit (1 to 65535).
        with_close_after(successes: u32) =>
            close_after = clamp(successes as u64, 1, COUNT_MAX);
        /// How much of each open period is drawn at random, from 0 (exactly the
        /// period) to 1 (uniform between zero and the period).
        with_jitter(jitter: f32) => jitter = clamp(milli(jitter), 0, 1000);
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
        on_transition(callback: fn(&CircuitBreaker, Transition)) =>
            on_transition = Some(callback);
    }
}
