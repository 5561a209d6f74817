//! The state of one call across its attempts, and the entry point other
//! loops drive it through: start it, run each attempt with
//! [`scoped`](Attempts::scoped) (or [`call`](Attempts::call) for a plain
//! function), and [`judge`](Attempts::judge) what the rules made of the
//! outcome. The decision itself is [`crate::decision`]; telling the outside
//! world is [`crate::observe`].

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use tokio::time::Instant;

use retry_core::backoff;

use crate::breaker::CircuitPermit;
use crate::clock::Clock;
use crate::context::{self, scoped_call, Scoped};
use crate::decision::{self, Failure, Stop, Verdict};
use crate::idempotency::IdempotencyKey;
use crate::{observe, AttemptContext, CircuitBreaker, Policy, RetryBudget};

/// The state of one call across its attempts. Holds no error and no value, so
/// it never makes the caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p> {
    policy: &'p Policy,
    budget: Option<&'p RetryBudget>,
    /// When this call's own deadline passes; read only when there is one.
    deadline: Option<Instant>,
    /// The last wait in nanoseconds, for decorrelated jitter; `base` before
    /// the first. Nanoseconds rather than a `Duration` keep the future small.
    previous: u64,
    /// The attempt running or just judged, from 1.
    attempt: u32,
    clock: Clock,
    /// A retried function called by the running attempt gave up after
    /// retrying.
    inner_gave_up: bool,
    /// The call's idempotency key, drawn the first time an attempt asks
    /// for it and kept for the later ones.
    key: IdempotencyKey,
    breaker: Option<&'p CircuitBreaker>,
    /// The breaker's leave for the attempt running; `None` when it refused.
    permit: Option<CircuitPermit<'p>>,
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    name: &'static str,
}

impl<'p> Attempts<'p> {
    /// Call just before the first attempt of an `async fn`. `name` names the
    /// function in `tracing` events.
    #[inline]
    #[must_use]
    pub fn start(policy: &'p Policy, budget: Option<&'p RetryBudget>, name: &'static str) -> Self {
        Self::new(policy, budget, name, Clock::Tokio)
    }

    /// Call just before the first attempt of a plain function.
    #[inline]
    #[must_use]
    pub fn start_blocking(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
    ) -> Self {
        Self::new(policy, budget, name, Clock::Blocking)
    }

    #[inline]
    fn new(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
        clock: Clock,
    ) -> Self {
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let _ = name;
        Attempts {
            policy,
            budget,
            deadline: match policy.deadline() {
                Some(deadline) => clock.now().checked_add(deadline),
                None => None,
            },
            previous: backoff::nanos(policy.base()),
            attempt: 1,
            clock,
            inner_gave_up: false,
            key: IdempotencyKey::NIL,
            breaker: None,
            permit: None,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name,
        }
    }

    /// The attempt running or just judged, from 1.
    #[inline]
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    pub(crate) fn policy(&self) -> &Policy {
        self.policy
    }

    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// What an attempt's poll hands back to the call: whether a retried
    /// function inside it gave up, and the key if the body drew one.
    pub(crate) fn scope_slots(&mut self) -> (&mut bool, &mut IdempotencyKey) {
        (&mut self.inner_gave_up, &mut self.key)
    }

    /// Asks `breaker` before every attempt and tells it every outcome.
    #[inline]
    #[must_use]
    pub fn with_breaker(mut self, breaker: &'p CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Call before each attempt: whether the breaker lets it be made. When
    /// it does not, the attempt's outcome is `E::from(CircuitOpen)` and
    /// `judge` stops with [`Stop::Open`].
    #[inline]
    pub fn admit(&mut self) -> bool {
        let Some(breaker) = self.breaker else {
            return true;
        };
        self.permit = breaker.admit(self.clock == Clock::Blocking).ok();
        self.permit.is_some()
    }

    fn name(&self) -> &'static str {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        return self.name;
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        ""
    }

    /// What the body can know of the attempt it runs.
    #[must_use]
    pub fn context(&self) -> AttemptContext {
        AttemptContext {
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts(),
            deadline: self.deadline,
            blocking: self.clock == Clock::Blocking,
            key: self.key,
        }
    }

    /// Polls an attempt's future with its context set, so the body can read
    /// it and retried functions it calls know what they are part of.
    #[inline]
    pub fn scoped<'a, F: Future>(&'a mut self, attempt: Pin<&'a mut F>) -> Scoped<'a, 'p, F> {
        Scoped::new(self, attempt)
    }

    /// Runs a plain function's attempt with its context set.
    #[inline]
    pub fn call<R>(&mut self, attempt: impl FnOnce() -> R) -> R {
        scoped_call(self, attempt)
    }

    /// Runs a plain function's attempt with its context set, and with the
    /// policy's timeout: a blocking call cannot be interrupted, so an attempt
    /// that returns after its limit is `None`, timed out, its late outcome
    /// dropped, as an async attempt cut off would be.
    #[inline]
    pub fn call_limited<R>(&mut self, attempt: impl FnOnce() -> R) -> Option<R> {
        let limit = self.attempt_timeout();
        crate::timeout::call_limited(limit, || self.call(attempt))
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the nearest deadline. `None` without a timeout.
    #[must_use]
    pub fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout()?;
        Some(self.time_left().map_or(timeout, |left| timeout.min(left)))
    }

    /// The time left before this call's deadline or the enclosing attempt's,
    /// whichever is nearer.
    fn time_left(&self) -> Option<Duration> {
        let own = self.deadline.map(|deadline| self.clock.until(deadline));
        let enclosing = context::enclosing_deadline().map(|deadline| self.clock.until(deadline));
        match (own, enclosing) {
            (Some(own), Some(enclosing)) => Some(own.min(enclosing)),
            (own, enclosing) => own.or(enclosing),
        }
    }

    /// Judges an attempt's verdict: `Ok(wait)` to retry after `wait` (the
    /// attempt number then moves on), or the reason to stop.
    #[inline]
    pub fn judge(&mut self, verdict: Verdict) -> Result<Duration, Stop> {
        match verdict {
            Verdict::Success => {
                self.succeeded();
                Err(Stop::Done)
            }
            // A refused attempt never ran: stop, and do not count it.
            _ if self.breaker.is_some() && !self.breaker_recorded(verdict) => {
                Err(self.stopped(Stop::Open, false))
            }
            Verdict::Permanent => Err(self.not_retryable()),
            Verdict::Transient(hint) => self.retry(hint),
        }
    }

    /// A success: the budget gets its share back. The only work on the
    /// success path.
    #[inline]
    pub(crate) fn succeeded(&mut self) {
        if let Some(budget) = self.budget {
            budget.record_success();
        }
        if self.breaker.is_some() {
            self.breaker_recorded(Verdict::Success);
        }
        #[cfg(feature = "metrics")]
        crate::metrics::record_stop(Stop::Done, self.name);
    }

    fn breaker_is_open(&self) -> bool {
        self.breaker
            .is_some_and(|breaker| breaker.is_open(self.clock == Clock::Blocking))
    }

    /// Tells the breaker how the attempt went; `false` when it refused the
    /// attempt, which then never ran.
    #[cold]
    #[inline(never)]
    fn breaker_recorded(&mut self, verdict: Verdict) -> bool {
        match self.permit.take() {
            Some(permit) => {
                permit.record(!matches!(verdict, Verdict::Transient(_)));
                true
            }
            None => false,
        }
    }

    /// A failure the rules may retry: gathers what the decision needs, and
    /// applies it. Not generic, so each retried function shares it.
    #[inline(never)]
    fn retry(&mut self, hint: Option<Duration>) -> Result<Duration, Stop> {
        let failure = Failure {
            attempt: self.attempt,
            hint,
            previous: Duration::from_nanos(self.previous),
            // Every retryable failure takes from the budget, the last one too.
            budget_allows: self.budget.is_none_or(RetryBudget::record_failure),
            inner_gave_up: core::mem::take(&mut self.inner_gave_up),
            time_left: self.time_left(),
        };
        let decision = match decision::decide(self.policy, &failure, crate::rng::next_u64) {
            // The failure may have opened the breaker: no retry would be let
            // through, so do not wait for one.
            Ok(_) if self.breaker_is_open() => Err(Stop::Open),
            decision => decision,
        };
        match decision {
            Ok(wait) => {
                observe::retrying(self.name(), self.attempt, wait);
                self.previous = backoff::nanos(wait);
                self.attempt += 1;
                Ok(wait)
            }
            Err(stop) => Err(self.stopped(stop, failure.inner_gave_up)),
        }
    }

    /// A failure that is returned to the caller.
    #[cold]
    #[inline(never)]
    fn not_retryable(&mut self) -> Stop {
        let inner_gave_up = core::mem::take(&mut self.inner_gave_up);
        self.stopped(Stop::NotRetryable, inner_gave_up)
    }

    /// Tells the outside world, and the attempt this call runs inside: a
    /// failure retried here (or by a layer below) as far as the rules allow
    /// is not to be retried again around it.
    fn stopped(&self, stop: Stop, inner_gave_up: bool) -> Stop {
        observe::stopped(self.name(), self.attempt, stop);
        if stop.gave_up_retrying() || inner_gave_up {
            context::report_gave_up();
        }
        stop
    }
}
