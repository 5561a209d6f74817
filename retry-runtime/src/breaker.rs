//! A circuit breaker shared by every call that names it: when most calls to
//! a dependency fail, it refuses calls at once instead of sending them, and
//! lets a few probes through now and then to learn when the dependency is
//! back.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::sync::OnceLock;

use crate::clock::Instant;

/// The error a call refused by an open [`CircuitBreaker`] fails with,
/// converted into the function's error type by `From`. The body was not run.
///
/// ```
/// use retry_runtime::{retry, CircuitBreaker, CircuitOpen};
///
/// static INVENTORY: CircuitBreaker = CircuitBreaker::new();
///
/// #[derive(Debug)]
/// enum ApiError { Unavailable, Status(u16) }
///
/// impl From<CircuitOpen> for ApiError {
///     fn from(_: CircuitOpen) -> Self { ApiError::Unavailable }
/// }
///
/// #[retry(breaker = &INVENTORY)]
/// async fn reserve() -> Result<(), ApiError> { Ok(()) }
/// ```
///
/// `std::io::Error` converts already, with the kind `Other`, which the
/// [`classify::io`](crate::classify) classifiers do not retry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CircuitOpen;

impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the circuit is open: the call was refused without being made")
    }
}

impl std::error::Error for CircuitOpen {}

impl From<CircuitOpen> for std::io::Error {
    fn from(open: CircuitOpen) -> Self {
        std::io::Error::other(open)
    }
}

/// Where a [`CircuitBreaker`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitState {
    /// Calls go through; their outcomes are counted.
    Closed,
    /// Calls are refused until the open period ends.
    Open,
    /// A few probe calls go through; the others are refused.
    HalfOpen,
}

/// The recent window is a ring of this many time buckets.
const BUCKETS: usize = 10;

// The state word. Bits 62-63: the state. Bits 56-61: trips, the times the
// circuit opened since it last closed (saturating), which sets the next open
// period. Bits 48-55: the probe round, advanced each time the circuit
// half-opens, so that a late probe of an earlier round changes nothing.
// Bits 0-47: when open, the end of the open period in milliseconds since the
// breaker's epoch; when half-open, the probes in flight (bits 0-15) and the
// probe successes (bits 16-31).
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const STATE_SHIFT: u32 = 62;
const TRIPS_SHIFT: u32 = 56;
const TRIPS_MAX: u64 = 0x3f;
const ROUND_SHIFT: u32 = 48;
const ROUND_MASK: u64 = 0xff;
const PAYLOAD_MASK: u64 = (1 << ROUND_SHIFT) - 1;
const COUNT_MASK: u64 = 0xffff;
const SUCCESS_SHIFT: u32 = 16;

fn state_of(word: u64) -> u64 {
    word >> STATE_SHIFT
}

fn trips_of(word: u64) -> u64 {
    (word >> TRIPS_SHIFT) & TRIPS_MAX
}

fn round_of(word: u64) -> u64 {
    (word >> ROUND_SHIFT) & ROUND_MASK
}

/// The probe round of a state word, as a probe keeps it.
fn round(word: u64) -> u8 {
    // Masked to 8 bits, so the cast is exact.
    #[allow(clippy::cast_possible_truncation)]
    let round = round_of(word) as u8;
    round
}

fn word(state: u64, trips: u64, round: u64, payload: u64) -> u64 {
    (state << STATE_SHIFT)
        | (trips.min(TRIPS_MAX) << TRIPS_SHIFT)
        | ((round & ROUND_MASK) << ROUND_SHIFT)
        | (payload & PAYLOAD_MASK)
}

fn half_open(trips: u64, round: u64, in_flight: u64, successes: u64) -> u64 {
    word(
        HALF_OPEN,
        trips,
        round,
        (in_flight.min(COUNT_MASK)) | (successes.min(COUNT_MASK) << SUCCESS_SHIFT),
    )
}

// A bucket word. Bits 40-63: the bucket's number (time / bucket width,
// truncated), so a bucket left from an earlier turn of the ring is seen as
// stale. Bits 20-39: failures. Bits 0-19: calls. Counts saturate together.
const STAMP_SHIFT: u32 = 40;
const STAMP_MASK: u64 = 0xff_ffff;
const FAILURE_SHIFT: u32 = 20;
const CALLS_MASK: u64 = 0xf_ffff;

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
///   before would otherwise keep the ratio low while every call fails.
/// - **Open**: every call fails at once with [`CircuitOpen`], without running
///   the body, for the open period.
/// - **Half-open**: after the open period, at most `probes` calls at a time
///   go through; the others are refused. After `close_after` probes
///   succeed, the circuit closes with an empty window. A probe that fails
///   opens it again, for twice as long as the time before, up to
///   `max_open_for`.
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
/// The loop asks the breaker before every attempt. A refused call fails with
/// `E::from(CircuitOpen)` and is never retried (reason
/// [`Stop::Open`](crate::Stop::Open)). A failed attempt is not retried
/// either when the breaker is open by then: the caller gets that attempt's
/// error at once, without the wait.
///
/// # Guarantees
///
/// The state is one atomic word, and the window ten more, updated with
/// compare-and-swap: no lock, no allocation, nothing spawned. The clock is
/// tokio's in a tokio runtime, so a paused test clock drives it; plain
/// functions read the real clock, as their waits do. Time is counted in
/// milliseconds from the breaker's first use, and every sum saturates.
pub struct CircuitBreaker {
    state: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
    /// The breaker's time zero, taken at its first use, since a `static`
    /// cannot read the clock.
    epoch: OnceLock<Instant>,
    bucket_ms: u64,
    min_calls: u64,
    /// The failure ratio, in thousandths.
    failure_ratio: u64,
    /// Failures in a row since the last success, while closed.
    streak: AtomicU64,
    consecutive_failures: u64,
    open_ms: u64,
    max_open_ms: u64,
    probes: u64,
    close_after: u64,
    /// The jitter, in thousandths.
    jitter: u64,
    name: &'static str,
}

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
    } else if count > COUNT_MASK {
        COUNT_MASK
    } else {
        count
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new()
    }
}

impl CircuitBreaker {
    /// A closed breaker with the defaults: see the table above.
    #[must_use]
    pub const fn new() -> Self {
        CircuitBreaker {
            state: AtomicU64::new(0),
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            epoch: OnceLock::new(),
            bucket_ms: 1000,
            min_calls: 20,
            failure_ratio: 500,
            streak: AtomicU64::new(0),
            consecutive_failures: 10,
            open_ms: 5000,
            max_open_ms: 30_000,
            probes: 3,
            close_after: 3,
            jitter: 500,
            name: "circuit",
        }
    }

    /// How far back outcomes count, in tenths (at least a millisecond each).
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> Self {
        let bucket = millis(window) / BUCKETS as u64;
        self.bucket_ms = if bucket == 0 { 1 } else { bucket };
        self
    }

    /// The fewest finished calls in the window before the ratio is judged, so
    /// that two failures out of three do not open the circuit.
    #[must_use]
    pub const fn with_min_calls(mut self, min_calls: u32) -> Self {
        self.min_calls = if min_calls == 0 { 1 } else { min_calls as u64 };
        self
    }

    /// The share of failed calls in the window at which the circuit opens,
    /// from 0 to 1 (kept to three decimals).
    #[must_use]
    pub const fn with_failure_ratio(mut self, failure_ratio: f32) -> Self {
        self.failure_ratio = thousandths(failure_ratio);
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

    /// The name `tracing` events give the breaker.
    #[must_use]
    pub const fn with_name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The name `tracing` events give the breaker.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Where the breaker stands now. An open breaker whose period has ended
    /// is still `Open` until a call asks to go through.
    #[must_use]
    pub fn state(&self) -> CircuitState {
        match state_of(self.state.load(Ordering::Acquire)) {
            CLOSED => CircuitState::Closed,
            OPEN => CircuitState::Open,
            _ => CircuitState::HalfOpen,
        }
    }

    /// Asks to make a call: a [`CircuitPermit`] to record its outcome with, or
    /// [`CircuitOpen`] when the call must not be made.
    ///
    /// The retry loop calls this before every attempt; call it yourself to
    /// guard a call outside the loop (a tower layer, a queue consumer).
    ///
    /// # Errors
    ///
    /// [`CircuitOpen`] while the circuit is open, or half-open with every
    /// probe slot taken.
    pub fn acquire(&self) -> Result<CircuitPermit<'_>, CircuitOpen> {
        self.admit(false)
    }

    /// [`acquire`](Self::acquire), reading the real clock when `blocking`.
    pub(crate) fn admit(&self, blocking: bool) -> Result<CircuitPermit<'_>, CircuitOpen> {
        self.leave(blocking).map(|kind| CircuitPermit {
            breaker: self,
            kind: Some(kind),
            blocking,
        })
    }

    /// The kind of call let through, or [`CircuitOpen`].
    fn leave(&self, blocking: bool) -> Result<Kind, CircuitOpen> {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let next = match state_of(current) {
                CLOSED => return Ok(Kind::Closed),
                OPEN => {
                    if self.now_ms(blocking) < current & PAYLOAD_MASK {
                        return Err(CircuitOpen);
                    }
                    half_open(trips_of(current), round_of(current).wrapping_add(1), 1, 0)
                }
                _ => {
                    if current & COUNT_MASK >= self.probes {
                        return Err(CircuitOpen);
                    }
                    current + 1
                }
            };
            match self.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if state_of(current) == OPEN {
                        self.observe(Transition::HalfOpened, 0);
                    }
                    return Ok(Kind::Probe(round(next)));
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Whether a call asking now would be refused because the circuit is
    /// open: a failed attempt then is not retried.
    pub(crate) fn is_open(&self, blocking: bool) -> bool {
        let current = self.state.load(Ordering::Acquire);
        state_of(current) == OPEN && self.now_ms(blocking) < current & PAYLOAD_MASK
    }

    /// Milliseconds since the breaker's first use, on the clock the caller's
    /// waits use.
    fn now_ms(&self, blocking: bool) -> u64 {
        let now = crate::clock::Clock::of(blocking).now();
        let epoch = *self.epoch.get_or_init(|| now);
        u64::try_from(now.saturating_duration_since(epoch).as_millis())
            .unwrap_or(u64::MAX)
            .min(PAYLOAD_MASK)
    }

    /// The open period after `trips` openings in a row, jittered, in
    /// milliseconds.
    fn open_period(&self, trips: u64) -> u64 {
        let doublings = u32::try_from(trips.saturating_sub(1)).unwrap_or(u32::MAX);
        let period = self
            .open_ms
            .saturating_mul(1u64.checked_shl(doublings).unwrap_or(u64::MAX))
            .min(self.max_open_ms.max(self.open_ms));
        let spread =
            u64::try_from(u128::from(period) * u128::from(self.jitter) / 1000).unwrap_or(period);
        let cut = match spread.checked_add(1) {
            Some(range) => crate::rng::next_u64() % range,
            None => crate::rng::next_u64(),
        };
        period - cut.min(period)
    }

    /// The state word of a circuit opening now, after `trips` openings in a
    /// row, in probe round `round`.
    fn opening(&self, trips: u64, round: u64, blocking: bool) -> u64 {
        let until = self
            .now_ms(blocking)
            .saturating_add(self.open_period(trips))
            .min(PAYLOAD_MASK);
        word(OPEN, trips, round, until)
    }

    /// Counts a call's outcome in the window, and opens the circuit when
    /// the window says so. Outcomes of calls let through while the circuit
    /// was closed but finishing after it opened are dropped.
    fn record_closed(&self, success: bool, blocking: bool) {
        let current = self.state.load(Ordering::Acquire);
        if state_of(current) != CLOSED {
            return;
        }
        let now = self.now_ms(blocking);
        let index = now / self.bucket_ms;
        let stamp = index & STAMP_MASK;
        // The remainder is below BUCKETS, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let slot = &self.buckets[(index % BUCKETS as u64) as usize];
        let failed = u64::from(!success);
        let mut bucket = slot.load(Ordering::Relaxed);
        loop {
            let (calls, failures) = if bucket >> STAMP_SHIFT == stamp {
                (bucket & CALLS_MASK, (bucket >> FAILURE_SHIFT) & CALLS_MASK)
            } else {
                (0, 0)
            };
            if calls == CALLS_MASK {
                break;
            }
            let next =
                (stamp << STAMP_SHIFT) | ((failures + failed) << FAILURE_SHIFT) | (calls + 1);
            match slot.compare_exchange_weak(bucket, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => bucket = actual,
            }
        }
        if success {
            // Read first: a store on every success would bounce the cache
            // line between cores for nothing.
            if self.streak.load(Ordering::Relaxed) != 0 {
                self.streak.store(0, Ordering::Relaxed);
            }
            return;
        }
        // A u64 of failures does not wrap in practice; if it did, the
        // circuit would only open a little later.
        let streak = self.streak.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let (calls, failures) = self.window(stamp);
        if streak >= self.consecutive_failures
            || (calls >= self.min_calls && failures * 1000 >= self.failure_ratio * calls)
        {
            let opened = self.opening(1, round_of(current), blocking);
            if self
                .state
                .compare_exchange(current, opened, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.observe(Transition::Opened, opened & PAYLOAD_MASK);
            }
        }
    }

    /// Calls and failures in the buckets of the window ending with bucket
    /// `stamp`.
    fn window(&self, stamp: u64) -> (u64, u64) {
        self.buckets
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|bucket| {
                (stamp.wrapping_sub(bucket >> STAMP_SHIFT) & STAMP_MASK) < BUCKETS as u64
            })
            .fold((0, 0), |(calls, failures), bucket| {
                (
                    calls + (bucket & CALLS_MASK),
                    failures + ((bucket >> FAILURE_SHIFT) & CALLS_MASK),
                )
            })
    }

    /// A probe's outcome, or `None` for a probe given up (its future
    /// dropped): frees its slot, and closes or reopens the circuit.
    fn record_probe(&self, round: u8, success: Option<bool>, blocking: bool) {
        let round = u64::from(round);
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            if state_of(current) != HALF_OPEN || round_of(current) != round {
                return;
            }
            let trips = trips_of(current);
            let in_flight = (current & COUNT_MASK).saturating_sub(1);
            let successes = (current >> SUCCESS_SHIFT) & COUNT_MASK;
            let next = match success {
                None => half_open(trips, round, in_flight, successes),
                Some(true) if successes + 1 >= self.close_after => word(CLOSED, 0, round, 0),
                Some(true) => half_open(trips, round, in_flight, successes + 1),
                Some(false) => self.opening(trips + 1, round, blocking),
            };
            match self.state.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    match state_of(next) {
                        CLOSED => {
                            for slot in &self.buckets {
                                slot.store(0, Ordering::Relaxed);
                            }
                            self.streak.store(0, Ordering::Relaxed);
                            self.observe(Transition::Closed, 0);
                        }
                        OPEN => self.observe(Transition::Reopened, next & PAYLOAD_MASK),
                        _ => {}
                    }
                    return;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Counts and traces a change of state; `until` is the end of the open
    /// period, in the breaker's milliseconds, when it opened.
    #[cold]
    fn observe(&self, transition: Transition, until: u64) {
        use crate::metrics::CircuitLevel::{Closed, HalfOpen, Open};
        let (from, to) = match transition {
            Transition::Opened => (Closed, Open),
            Transition::Reopened => (HalfOpen, Open),
            Transition::HalfOpened => (Open, HalfOpen),
            Transition::Closed => (HalfOpen, Closed),
        };
        crate::metrics::record_circuit_transition(self.name, from, to);
        #[cfg(not(feature = "tracing"))]
        let _ = until;
        #[cfg(feature = "tracing")]
        match transition {
            Transition::Opened | Transition::Reopened => {
                let open_ms = until.saturating_sub(self.now_ms(false));
                tracing::warn!(
                    target: "retry_runtime",
                    breaker = self.name,
                    open_ms,
                    "circuit opened; refusing calls"
                );
            }
            Transition::HalfOpened => tracing::info!(
                target: "retry_runtime",
                breaker = self.name,
                probes = self.probes,
                "circuit half-open; probing"
            ),
            Transition::Closed => tracing::info!(
                target: "retry_runtime",
                breaker = self.name,
                "circuit closed"
            ),
        }
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// A change of a breaker's state, for the metrics.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Transition {
    Opened,
    /// Opened again after a failed probe.
    Reopened,
    HalfOpened,
    Closed,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Closed,
    /// A probe of this round.
    Probe(u8),
}

impl Kind {
    /// Records the outcome of the call let through as `self`, or frees a
    /// probe's slot for `None`.
    fn settle(self, breaker: &CircuitBreaker, success: Option<bool>, blocking: bool) {
        match (self, success) {
            (Kind::Closed, Some(success)) => breaker.record_closed(success, blocking),
            (Kind::Closed, None) => {}
            (Kind::Probe(round), success) => breaker.record_probe(round, success, blocking),
        }
    }
}

/// Leave from a [`CircuitBreaker`] to make one call. Record the outcome
/// with [`record`](CircuitPermit::record); a probe permit dropped without one frees
/// its slot and counts as nothing (a cancelled call says nothing of the
/// dependency).
#[derive(Debug)]
#[must_use = "record the call's outcome with `CircuitPermit::record`"]
pub struct CircuitPermit<'a> {
    breaker: &'a CircuitBreaker,
    kind: Option<Kind>,
    blocking: bool,
}

impl CircuitPermit<'_> {
    /// Whether this call is one of the half-open breaker's probes.
    #[must_use]
    pub fn is_probe(&self) -> bool {
        matches!(self.kind, Some(Kind::Probe(_)))
    }

    /// Records the call's outcome: `false` for a failure the caller would
    /// retry.
    pub fn record(mut self, success: bool) {
        if let Some(kind) = self.kind.take() {
            kind.settle(self.breaker, Some(success), self.blocking);
        }
    }
}

impl Drop for CircuitPermit<'_> {
    fn drop(&mut self) {
        if let Some(kind) = self.kind.take() {
            kind.settle(self.breaker, None, self.blocking);
        }
    }
}

/// The breaker of a call that names one, and its leave for the attempt
/// running: a [`CircuitPermit`] without a second copy of the breaker's
/// address. A probe's leave dropped unrecorded (the call's future dropped
/// mid-attempt) frees its slot, as a dropped permit does.
#[doc(hidden)]
#[derive(Debug)]
pub struct Guarded<'p> {
    breaker: &'p CircuitBreaker,
    /// `None` when the breaker refused the attempt running, or once its
    /// outcome is recorded.
    kind: Option<Kind>,
    blocking: bool,
}

impl<'p> Guarded<'p> {
    pub(crate) fn new(breaker: &'p CircuitBreaker) -> Self {
        Guarded {
            breaker,
            kind: None,
            blocking: false,
        }
    }

    /// Asks for leave to make the next attempt.
    pub(crate) fn admit(&mut self, blocking: bool) -> bool {
        if let Some(unrecorded) = self.kind.take() {
            unrecorded.settle(self.breaker, None, self.blocking);
        }
        self.blocking = blocking;
        self.kind = self.breaker.leave(blocking).ok();
        self.kind.is_some()
    }

    /// Records the attempt's outcome; `false` when the breaker refused the
    /// attempt, which then never ran.
    pub(crate) fn record(&mut self, success: bool) -> bool {
        match self.kind.take() {
            Some(kind) => {
                kind.settle(self.breaker, Some(success), self.blocking);
                true
            }
            None => false,
        }
    }

    pub(crate) fn breaker(&self) -> &'p CircuitBreaker {
        self.breaker
    }
}

impl Drop for Guarded<'_> {
    fn drop(&mut self) {
        if let Some(kind) = self.kind.take() {
            kind.settle(self.breaker, None, self.blocking);
        }
    }
}
