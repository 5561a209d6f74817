//! The state of one call across its attempts, and the entry point other
//! loops drive it through: start it, run each attempt with
//! [`scoped`](Attempts::scoped) (or [`call`](Attempts::call) for a plain
//! function), and [`judge`](Attempts::judge) what the rules made of the
//! outcome. The decision itself is [`crate::decision`]; telling the outside
//! world is [`crate::observe`].

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use retry_core::backoff;

use crate::breaker::{AttemptPermit, Holding, Mark};
use crate::clock::{Clock, Deadline};
use crate::context::{self, scoped_call, Scoped};
use crate::decision::{self, Failure, Stop, Verdict};
use crate::idempotency::IdempotencyKey;
use crate::{observe, AttemptContext, CircuitBreaker, Policy, RetryBudget};

/// The state of one call across its attempts, with its circuit breaker `B`
/// and its budget `U`: [`NoBreaker`] and [`NoBudget`], which take no room,
/// unless the call names them. Holds no error and no value, so it never
/// makes the caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p, B = NoBreaker, U = NoBudget> {
    state: State<'p>,
    breaker: B,
    budget: U,
}

/// What every call keeps, breaker or not; its methods are not generic, so
/// each retried function shares them.
#[derive(Debug)]
pub(crate) struct State<'p> {
    policy: &'p Policy,
    /// The call's idempotency key, drawn the first time an attempt asks
    /// for it and kept for the later ones.
    key: IdempotencyKey,
    /// When this call's own deadline passes; read only when there is one.
    deadline: Deadline,
    /// The last wait in nanoseconds, for decorrelated jitter; `base` before
    /// the first. Nanoseconds rather than a `Duration` keep the future small.
    previous: u64,
    /// The attempt running or just judged, from 1.
    attempt: u32,
    clock: Clock,
    /// A retried function called by the running attempt gave up after
    /// retrying.
    inner_gave_up: bool,
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    name: &'static str,
}

/// The retry budget a call takes from: `Option<&RetryBudget>`, or
/// [`NoBudget`].
#[doc(hidden)]
pub trait Spend<'p>: Copy {
    /// The budget, if there is one.
    fn budget(self) -> Option<&'p RetryBudget>;
}

/// The budget of a call that names none.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBudget;

impl<'p> Spend<'p> for NoBudget {
    #[inline]
    fn budget(self) -> Option<&'p RetryBudget> {
        None
    }
}

impl<'p> Spend<'p> for Option<&'p RetryBudget> {
    #[inline]
    fn budget(self) -> Option<&'p RetryBudget> {
        self
    }
}

/// The circuit breaker a call asks before each attempt and tells each
/// outcome.
#[doc(hidden)]
pub trait Guard {
    /// Whether the next attempt may be made.
    fn admit(&mut self, blocking: bool) -> bool;
    /// Records the attempt's outcome (`success`: not a failure the rules
    /// retry); `false` when the breaker refused the attempt, which then
    /// never ran.
    fn record(&mut self, success: bool) -> bool;
    /// The breaker, if there is one.
    fn breaker(&self) -> Option<&CircuitBreaker>;
    /// What the attempt running marks its thread with while it holds a
    /// permit, so that a retried function it calls with the same breaker
    /// runs under that permit.
    fn mark(&mut self) -> Option<Mark<'_>>;
}

/// The breaker of a call that names none: every attempt is made.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBreaker;

impl Guard for NoBreaker {
    #[inline]
    fn admit(&mut self, _: bool) -> bool {
        true
    }

    #[inline]
    fn record(&mut self, _: bool) -> bool {
        true
    }

    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        None
    }

    #[inline]
    fn mark(&mut self) -> Option<Mark<'_>> {
        None
    }
}

impl Guard for AttemptPermit<'_> {
    #[inline]
    fn admit(&mut self, blocking: bool) -> bool {
        AttemptPermit::acquire(self, blocking)
    }

    #[inline]
    fn record(&mut self, success: bool) -> bool {
        AttemptPermit::record(self, success)
    }

    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(AttemptPermit::breaker(self))
    }

    #[inline]
    fn mark(&mut self) -> Option<Mark<'_>> {
        AttemptPermit::mark(self)
    }
}

/// A breaker chosen at run time, as the closure API's is.
impl<G: Guard> Guard for Option<G> {
    #[inline]
    fn admit(&mut self, blocking: bool) -> bool {
        self.as_mut().is_none_or(|guard| guard.admit(blocking))
    }

    #[inline]
    fn record(&mut self, success: bool) -> bool {
        self.as_mut().is_none_or(|guard| guard.record(success))
    }

    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.as_ref().and_then(Guard::breaker)
    }

    #[inline]
    fn mark(&mut self) -> Option<Mark<'_>> {
        self.as_mut().and_then(Guard::mark)
    }
}

impl<'p, U: Spend<'p>> Attempts<'p, NoBreaker, U> {
    /// Call just before the first attempt of an `async fn`. `name` names the
    /// function in `tracing` events.
    #[inline]
    #[must_use]
    pub fn start(policy: &'p Policy, budget: U, name: &'static str) -> Self {
        Self::new(policy, budget, name, Clock::Tokio)
    }

    /// Call just before the first attempt of a plain function.
    #[inline]
    #[must_use]
    pub fn start_blocking(policy: &'p Policy, budget: U, name: &'static str) -> Self {
        Self::new(policy, budget, name, Clock::Blocking)
    }

    #[inline]
    fn new(policy: &'p Policy, budget: U, name: &'static str, clock: Clock) -> Self {
        Attempts {
            state: State::new(policy, name, clock),
            breaker: NoBreaker,
            budget,
        }
    }

    /// Asks `breaker` before every attempt and tells it every outcome.
    #[inline]
    #[must_use]
    pub fn with_breaker(self, breaker: &'p CircuitBreaker) -> Attempts<'p, AttemptPermit<'p>, U> {
        Attempts {
            state: self.state,
            breaker: AttemptPermit::new(breaker),
            budget: self.budget,
        }
    }

    /// Asks `breaker`, if there is one, before every attempt.
    #[inline]
    #[must_use]
    pub(crate) fn with_breaker_if(
        self,
        breaker: Option<&'p CircuitBreaker>,
    ) -> Attempts<'p, Option<AttemptPermit<'p>>, U> {
        Attempts {
            state: self.state,
            breaker: breaker.map(AttemptPermit::new),
            budget: self.budget,
        }
    }
}

impl<'p, B: Guard, U: Spend<'p>> Attempts<'p, B, U> {
    /// The attempt running or just judged, from 1.
    #[inline]
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.state.attempt
    }

    /// Call before each attempt: whether the breaker lets it be made. When
    /// it does not, the attempt's outcome is `E::from(CircuitOpen)` and
    /// `judge` stops with [`Stop::Open`].
    #[inline]
    pub fn admit(&mut self) -> bool {
        self.breaker.admit(self.state.clock == Clock::Blocking)
    }

    /// What the body can know of the attempt it runs.
    #[must_use]
    pub fn context(&self) -> AttemptContext {
        self.state.context()
    }

    /// Polls an attempt's future with its context set, so the body can read
    /// it and retried functions it calls know what they are part of.
    #[inline]
    pub fn scoped<'a, F: Future>(
        &'a mut self,
        attempt: Pin<&'a mut F>,
    ) -> Holding<'a, Scoped<'a, 'p, F>> {
        Holding::new(self.breaker.mark(), Scoped::new(&mut self.state, attempt))
    }

    /// Runs a plain function's attempt with its context set.
    #[inline]
    pub fn call<R>(&mut self, attempt: impl FnOnce() -> R) -> R {
        let mut mark = self.breaker.mark();
        let _hold = mark.as_mut().map(Mark::hold);
        scoped_call(&mut self.state, attempt)
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
        self.state.attempt_timeout()
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
            _ if !self
                .breaker
                .record(!matches!(verdict, Verdict::Transient(_))) =>
            {
                Err(self.state.stopped(Stop::Open, false))
            }
            Verdict::Permanent => Err(self.state.not_retryable()),
            Verdict::Transient(hint) => {
                self.state
                    .retry(hint, self.budget.budget(), self.breaker.breaker())
            }
        }
    }

    /// Stops the call for `stop`, an outcome decided outside the rules (a
    /// breaker's layer refused the attempt or opened on it).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn stop(&mut self, stop: Stop) {
        self.state.stopped(stop, false);
    }

    /// A success: the budget gets its share back. The only work on the
    /// success path.
    #[inline]
    pub(crate) fn succeeded(&mut self) {
        if let Some(budget) = self.budget.budget() {
            budget.record_success();
        }
        #[cfg(feature = "metrics")]
        crate::metrics::record_stop(Stop::Done, self.state.name);
        self.breaker.record(true);
    }
}

impl<'p> State<'p> {
    #[inline]
    fn new(policy: &'p Policy, name: &'static str, clock: Clock) -> Self {
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let _ = name;
        State {
            policy,
            key: IdempotencyKey::NIL,
            deadline: match policy.deadline() {
                Some(deadline) => Deadline::new(clock.now().checked_add(deadline)),
                None => Deadline::NONE,
            },
            previous: backoff::nanos(policy.base()),
            attempt: 1,
            clock,
            inner_gave_up: false,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name,
        }
    }

    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    pub(crate) fn policy(&self) -> &Policy {
        self.policy
    }

    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// What an attempt's poll hands back to the call: whether a retried
    /// function inside it gave up, and the key if the body drew one.
    pub(crate) fn scope_slots(&mut self) -> (&mut bool, &mut IdempotencyKey) {
        (&mut self.inner_gave_up, &mut self.key)
    }

    fn name(&self) -> &'static str {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        return self.name;
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        ""
    }

    fn context(&self) -> AttemptContext {
        AttemptContext {
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts(),
            deadline: self.deadline.get(),
            blocking: self.clock == Clock::Blocking,
            key: self.key,
        }
    }

    fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout()?;
        Some(self.time_left().map_or(timeout, |left| timeout.min(left)))
    }

    /// The time left before this call's deadline or the enclosing attempt's,
    /// whichever is nearer.
    fn time_left(&self) -> Option<Duration> {
        let nearest = self.deadline.min(context::enclosing_deadline());
        nearest.get().map(|deadline| self.clock.until(deadline))
    }

    /// A failure the rules may retry: gathers what the decision needs, and
    /// applies it. Not generic, so each retried function shares it.
    #[inline(never)]
    fn retry(
        &mut self,
        hint: Option<Duration>,
        budget: Option<&RetryBudget>,
        breaker: Option<&CircuitBreaker>,
    ) -> Result<Duration, Stop> {
        let failure = Failure {
            attempt: self.attempt,
            hint,
            previous: Duration::from_nanos(self.previous),
            // Every retryable failure takes from the budget, the last one too.
            budget_allows: budget.is_none_or(RetryBudget::record_failure),
            inner_gave_up: core::mem::take(&mut self.inner_gave_up),
            time_left: self.time_left(),
        };
        let decision = match decision::decide(self.policy, &failure, crate::rng::next_u64) {
            // The failure may have opened the breaker: no retry would be let
            // through, so do not wait for one.
            Ok(_)
                if breaker
                    .is_some_and(|breaker| breaker.is_open(self.clock == Clock::Blocking)) =>
            {
                Err(Stop::Open)
            }
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
