//! A circuit breaker shared by every call that names it: when most calls to
//! a dependency fail, it refuses calls at once instead of sending them, and
//! lets a few probes through now and then to learn when the dependency is
//! back.
//!
//! This file is the public type and its settings; [`machine`] is the state
//! machine (which returns its transitions; this file reports them),
//! [`window`] the closed circuit's record of outcomes, [`word`] the packed
//! state, [`permit`] the permits calls go through with, and [`open`] the
//! error of a refused call.

mod machine;
mod open;
mod permit;
mod settings;
#[cfg(all(test, not(loom)))]
mod tests;
mod window;
mod word;

#[cfg(not(loom))]
use crate::clock::Epoch;
use core::fmt;

use crate::circuit::{self, CircuitState, Name, Transition};
use crate::clock::Clock;
use crate::ring::{AtomicU64, Ordering, Ring};

pub use open::CircuitOpen;
pub use permit::CircuitPermit;
pub(crate) use permit::HedgedMark;
#[doc(hidden)]
pub use permit::{BreakerSlot, Mark, MarkThread};

use word::{StateCell, Word};

/// A circuit breaker shared by every call that names it.
///
/// Retries and a [`RetryBudget`](crate::RetryBudget) limit the extra calls
/// made for failures, but every request still makes its first call, and
/// waits for it to fail. When a dependency is down, a breaker stops sending
/// calls at all: callers get [`CircuitOpen`] at once, and only a few probe
/// calls test whether the dependency is back.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{retry, CircuitBreaker};
///
/// static INVENTORY: CircuitBreaker = CircuitBreaker::new()
///     .with_failure_ratio(0.5)
///     .with_min_calls(20)
///     .with_open_for(Duration::from_secs(5));
///
/// #[retry(max = 3, breaker = &INVENTORY)]
/// async fn reserve(item: u64) -> Result<u64, std::io::Error> {
///     Ok(item)
/// }
/// ```
///
/// # States
///
/// - **Closed**: calls go through; each outcome is counted in a window of
///   the last `window` (ten buckets of a tenth each, so the window slides in
///   tenths). A failure is an error `on` accepts or an `Ok` value `on_ok`
///   accepts: what the loop would retry. An error `on` rejects (a 404) shows
///   the dependency answering, and counts as a success. When at least
///   `min_calls` calls in the window have finished and the share that failed
///   reaches `failure_ratio`, the circuit opens. So it does too after
///   `consecutive_failures` failures in a row, whatever the window holds:
///   when a busy dependency goes down at once, the successes of the seconds
///   before would otherwise keep the ratio low while every call fails. A
///   failure counts at the time it finished; a success, so that the healthy
///   path reads no clock, at the breaker's latest reading of it, taken at
///   every failure and at least every 16th call of a bucket: only the
///   successes since that reading (15 at most) may leave the window early,
///   and none leaves it late.
/// - **Open**: every call fails at once with [`CircuitOpen`], without running
///   the body, for the open period.
/// - **Half-open**: after the open period, at most `probes` calls at a time
///   go through; the others are refused. After `close_after` probes
///   succeed, the circuit closes with an empty window. A probe that fails
///   opens it again, for twice as long as the time before, up to
///   `max_open_for`. A probe dropped before its outcome (a cancelled call)
///   frees its place and counts as nothing.
///
/// Each open period is drawn uniformly from `[(1 - jitter) * period,
/// period]`, so that a fleet of clients that opened together does not probe
/// together.
///
/// # Defaults
///
/// Suited to an HTTP dependency called a few times a second or more:
///
/// | setting | default |
/// |---|---|
/// | `window` | 10 s |
/// | `min_calls` | 20 |
/// | `failure_ratio` | 0.5 |
/// | `consecutive_failures` | 10 |
/// | `open_for` | 5 s |
/// | `max_open_for` | 30 s |
/// | `probes` | 3 |
/// | `close_after` | 3 |
/// | `jitter` | 0.5 |
///
/// # With retries
///
/// The loop asks the breaker for a permit before every attempt. A refused
/// first attempt fails with `E::from(CircuitOpen)` and is not retried
/// (reason [`Stop::Open`](crate::Stop::Open)). A failed attempt is not
/// retried either when the breaker is open by then: the caller gets that
/// attempt's error at once, without the wait.
///
/// # On two layers
///
/// A retried function and a retried function it calls may name the same
/// breaker (a service handler and the client it calls). The inner call then
/// runs under the permit of the outer attempt: it is not refused, its
/// outcome is not recorded (the outer attempt's is, once), and a half-open
/// circuit's probe is the outer call. A call refused by another breaker
/// inside an attempt does not count against this one: the failure it
/// causes says nothing of this breaker's dependency.
///
/// # Operators
///
/// [`on_transition`](Self::on_transition) calls a function at every change
/// of state; [`force_open`](Self::force_open),
/// [`force_closed`](Self::force_closed) and [`reset`](Self::reset) take
/// manual control. All work on a `static`.
///
/// # Guarantees
///
/// The state is one atomic word, and the window twelve more (ten buckets,
/// the bucket of the latest clock reading, the failures in a row), updated
/// with compare-and-swap: no lock, no allocation, nothing spawned. The clock
/// is tokio's in a tokio runtime, so a paused test clock drives it;
/// elsewhere (plain functions, other executors) it is the OS clock, as for
/// the waits. Time is counted in milliseconds from the breaker's first use,
/// and every sum saturates.
pub struct CircuitBreaker {
    state: StateCell,
    /// The closed circuit's calls and failures (`window.rs`); an adaptive
    /// breaker's requests and accepts.
    ring: Ring,
    /// Failures in a row since the last success.
    streak: AtomicU64,
    /// The fewest finished calls in the window before the ratio is judged.
    min_calls: u64,
    /// The failure ratio, in thousandths.
    failure_ratio: u64,
    /// Failures in a row that open the circuit whatever the window holds.
    consecutive_failures: u64,
    /// The breaker's time zero, taken at its first use, since a `static`
    /// cannot read the clock.
    #[cfg(not(loom))]
    epoch: Epoch,
    /// The model's clock, in milliseconds, moved by the model alone.
    #[cfg(loom)]
    now: AtomicU64,
    open_ms: u64,
    max_open_ms: u64,
    probes: u64,
    close_after: u64,
    /// K, in thousandths, for an adaptive breaker; 0 for one that opens
    /// and closes.
    requests_per_accept: u64,
    /// The jitter, in thousandths.
    jitter: u64,
    /// Read only when a transition is reported, never on a call's path.
    name: Name,
    on_transition: Option<fn(&CircuitBreaker, Transition)>,
}

impl CircuitBreaker {
    /// The name `tracing` events and the metrics' `breaker` label give the
    /// breaker: the one given to [`with_name`](Self::with_name) or
    /// [`with_owned_name`](Self::with_owned_name), or `circuit`.
    #[must_use]
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// Where the breaker stands now. An open breaker whose period has ended
    /// is still `Open` until a call asks to go through.
    #[must_use]
    pub fn state(&self) -> CircuitState {
        self.state.load().state()
    }

    /// The chance that a call asked for now is refused: for an
    /// [`adaptive`](Self::adaptive) breaker, max(0, (requests - K *
    /// accepts) / (requests + 1)) over its window; 1 while the circuit is
    /// open (forced, or in its open period); 0 otherwise (a half-open
    /// circuit lets its probes through). For a dashboard, or a test.
    #[must_use]
    #[allow(clippy::cast_precision_loss)] // Both counts below 2^53: exact.
    pub fn refusal_probability(&self) -> f64 {
        if self.is_open(false) {
            return 1.0;
        }
        if !self.state.load().is_adaptive() {
            return 0.0;
        }
        let (over, out_of) = self.refusal(self.now_ms(Clock::Async));
        over as f64 / out_of as f64
    }

    /// Asks to make a call: a [`CircuitPermit`] to record its outcome with, or
    /// [`CircuitOpen`] when the call must not be made.
    ///
    /// The retry loop calls this before every attempt; call it yourself to
    /// guard a call outside the loop (a tower layer, a queue consumer).
    /// Inside an attempt of a retried function that already holds a permit
    /// of this breaker, the permit is that attempt's: never refused, and its
    /// outcome is not recorded twice.
    ///
    /// # Errors
    ///
    /// [`CircuitOpen`] while the circuit is open, or half-open with every
    /// probe place taken.
    pub fn acquire(&self) -> Result<CircuitPermit<'_>, CircuitOpen> {
        let mut permit = CircuitPermit::new(self);
        BreakerSlot::acquire(&mut permit, false)
            .then_some(permit)
            .ok_or(CircuitOpen)
    }

    /// Opens the circuit until [`reset`](Self::reset) or
    /// [`force_closed`](Self::force_closed): every call is refused, and no
    /// probe is let through however long it stays open. For an operator
    /// taking a dependency out of service.
    pub fn force_open(&self) {
        self.set(|word, round| Word::open(word.trips(), round, 0).forced());
    }

    /// Closes the circuit until [`reset`](Self::reset) or
    /// [`force_open`](Self::force_open): every call goes through, and no
    /// outcome is counted, so nothing opens it. For an operator who knows
    /// better than the window (a dependency failing on purpose in a test).
    pub fn force_closed(&self) {
        self.set(|_, round| Word::closed(round, false).forced());
    }

    /// Closes the circuit with an empty window and resumes normal work:
    /// ends [`force_open`](Self::force_open) and
    /// [`force_closed`](Self::force_closed), and forgets past failures and
    /// open periods.
    pub fn reset(&self) {
        self.set(|_, round| Word::closed(round, self.is_adaptive()));
    }

    /// An operator's change: the word `next` makes of the current one and
    /// the next probe round, whatever the current one is; a closed circuit
    /// starts with an empty window.
    fn set(&self, next: impl FnOnce(Word, u8) -> Word) {
        let current = self.state.load();
        let next = next(current, current.round().wrapping_add(1));
        let before = self.state.swap(next);
        self.announce(before, next, None);
    }

    /// Whether the breaker throttles (`adaptive`) rather than opens.
    fn is_adaptive(&self) -> bool {
        self.requests_per_accept != 0
    }

    /// Whether a call asking now would be refused because the circuit is
    /// open: a failed attempt then is not retried.
    pub(crate) fn is_open(&self, blocking: bool) -> bool {
        let word = self.state.load();
        word.state() == CircuitState::Open
            && (word.is_forced() || self.now_ms(Clock::of(blocking)) < word.open_until())
    }

    /// Milliseconds since the breaker's first use, on the clock the caller's
    /// waits use.
    #[cfg(not(loom))]
    fn now_ms(&self, clock: Clock) -> u64 {
        #[cfg(test)]
        tests::count_reading();
        self.epoch.ms(clock)
    }

    /// The model's clock.
    #[cfg(loom)]
    fn now_ms(&self, _: Clock) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Moves the model's clock on by `ms`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// The calls and failures the window holds now, for the model's checks.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn window_counts(&self) -> (u64, u64) {
        self.ring.counts(self.now_ms(Clock::Async))
    }

    /// The probe round and the probes out, for the model's checks.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn probes_out(&self) -> (u8, u64) {
        let word = self.state.load();
        let half_open = word.state() == CircuitState::HalfOpen;
        (word.round(), if half_open { word.probes_out() } else { 0 })
    }

    /// The word went from `before` to `after`: a circuit that is closed
    /// now starts with an empty window, and the outside world hears of the
    /// change, if the state changed: the process-wide counts, the metrics
    /// facade, `tracing` and the callback. `now` is the time the change was
    /// made, when read.
    #[cold]
    fn announce(&self, before: Word, after: Word, now: Option<u64>) {
        let (from, to) = (before.state(), after.state());
        if to == CircuitState::Closed {
            // A closed circuit forgets every outcome.
            self.ring.clear();
            self.streak.store(0, Ordering::Relaxed);
        }
        if from == to {
            return;
        }
        let transition = Transition { from, to };
        let open_ms = (to == CircuitState::Open && !after.is_forced())
            .then(|| after.open_until().saturating_sub(now.unwrap_or(0)));
        circuit::report(&self.name, transition, self.probes, open_ms);
        if let Some(callback) = self.on_transition {
            callback(self, transition);
        }
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name())
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}
