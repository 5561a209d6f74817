//! The attempt loop's one step, and the entry point every loop drives it
//! through: start a call, run each attempt with [`scoped`](Attempts::scoped)
//! (or [`call`](Attempts::call) for a plain function), and hand its outcome
//! and the rules to [`step`](Attempts::step), which says whether to wait and
//! retry or to return. The rules judge ([`crate::rules`]), the decision
//! weighs ([`crate::decision`]), this file tells the breaker, the budget and
//! the outside world ([`crate::observe`]).

use core::future::Future;
use core::ops::ControlFlow;
use core::time::Duration;

use crate::breaker::{CircuitPermit, MarkThread};
use crate::call_state::CallState;
use crate::clock::Clock;
use crate::context::{scoped_call, Scoped};
use crate::decision::{Classification, Stop};
use crate::observe::{self, Record};
use crate::policy::Params;
use crate::rules::{Outcome, RulesOf};
use crate::slots::{BreakerSlot, BudgetSlot, NoBreaker, NoBudget, Watching};
use crate::timeout::Limit;
use crate::{CircuitBreaker, Policy, RetryBudget};

/// One call across its attempts, with its circuit breaker `B` and its
/// budget `U`: [`NoBreaker`] and [`NoBudget`], which take no room, unless
/// the call names them. Holds no error and no value, so it never makes the
/// caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p, B = NoBreaker, U = NoBudget> {
    call: CallState<'p>,
    breaker: B,
    budget: U,
}

impl<'p, U: BudgetSlot> Attempts<'p, NoBreaker, U> {
    /// Call just before the first attempt of an `async fn`. `name` names the
    /// function in `tracing` events.
    #[must_use]
    #[inline(always)]
    pub fn start<Timeout>(policy: &'p Policy<Timeout>, budget: U, name: &'static str) -> Self {
        Self::new(&policy.params, budget, name, Clock::Async)
    }

    /// Call just before the first attempt of a plain function.
    #[must_use]
    pub fn start_blocking<Timeout>(
        policy: &'p Policy<Timeout>,
        budget: U,
        name: &'static str,
    ) -> Self {
        Self::new(&policy.params, budget, name, Clock::Blocking)
    }

    #[inline(always)]
    pub(crate) fn new(policy: &'p Params, budget: U, name: &'static str, clock: Clock) -> Self {
        RetryBudget::first_attempt(budget.budget());
        Attempts {
            call: CallState::new(policy, name, clock),
            breaker: NoBreaker,
            budget,
        }
    }

    /// Asks `breaker` before every attempt and tells it every outcome.
    #[must_use]
    pub fn with_breaker(self, breaker: &'p CircuitBreaker) -> Attempts<'p, CircuitPermit<'p>, U> {
        self.with_slot(CircuitPermit::new(breaker))
    }

    /// Asks `breaker`, if there is one, before every attempt.
    #[must_use]
    pub(crate) fn with_breaker_if(
        self,
        breaker: Option<&'p CircuitBreaker>,
    ) -> Attempts<'p, Option<CircuitPermit<'p>>, U> {
        self.with_slot(breaker.map(CircuitPermit::new))
    }

    /// Watches `breaker`, if any, without asking it or telling it: see
    /// [`Watching`].
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    #[must_use]
    pub(crate) fn watching(
        self,
        breaker: Option<&'p CircuitBreaker>,
    ) -> Attempts<'p, Watching<'p>, U> {
        self.with_slot(Watching(breaker))
    }

    fn with_slot<B: BreakerSlot>(self, breaker: B) -> Attempts<'p, B, U> {
        let Attempts { call, budget, .. } = self;
        Attempts {
            call,
            breaker,
            budget,
        }
    }
}

impl<B: BreakerSlot, U: BudgetSlot> Attempts<'_, B, U> {
    /// The attempt running or just judged, from 1.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.call.attempt()
    }

    /// Call before each attempt: whether the breaker lets it be made. When
    /// it does not, the attempt's outcome is `E::from(CircuitOpen)` and
    /// [`step`](Self::step) stops with [`Stop::Open`].
    pub fn acquire(&mut self) -> bool {
        let blocking = self.call.clock() == Clock::Blocking;
        self.breaker.acquire(blocking)
    }

    /// Polls an attempt's future with its context set, so the body can read
    /// it and retried functions it calls know what they are part of.
    ///
    /// While it holds a breaker's permit, the attempt marks its thread, so
    /// that a retried function it calls with the same breaker runs under
    /// this permit instead of asking for another.
    // Inlined: around every attempt (benches/instructions.sh).
    #[inline]
    pub fn scoped<F: Future>(&mut self, attempt: F) -> Scoped<'_, F, B::Mark<'_>> {
        let span = observe::attempt_span(self.call.name(), self.attempt());
        self.scoped_in(attempt, span)
    }

    /// As [`scoped`](Self::scoped), in a span of the caller's making: the
    /// HTTP driver's attempts carry the request's method and URL.
    pub(crate) fn scoped_in<F: Future>(
        &mut self,
        attempt: F,
        span: observe::AttemptSpan,
    ) -> Scoped<'_, F, B::Mark<'_>> {
        Scoped::new(self.call.scope(), self.breaker.mark(), attempt, span)
    }

    /// What the attempt about to be sent tells the service it calls: its
    /// number, and the time it has left, the policy's timeout shortened to
    /// the nearest deadline (DESIGN §4.17).
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn stamp(&self) -> crate::propagate::Stamp {
        crate::propagate::Stamp {
            attempt: self.attempt(),
            left: self.attempt_timeout().or_else(|| self.call.time_left()),
        }
    }

    /// The call stops before its attempt was made, for a reason of the
    /// caller's side (a tower service that failed to become ready): not
    /// retryable, and the breaker hears nothing.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn unsent(&mut self) {
        let record = Record(None, self.budget.budget(), self.breaker.breaker());
        let _ = self.call.not_retryable(record);
    }

    /// Call before the wait for the next attempt: while it lasts, the call
    /// counts as in flight in the attempt it runs inside, if any. (Counted
    /// here rather than by a wrapper around the wait, which would copy the
    /// timer once more.)
    pub fn waiting(&mut self) {
        self.call.scope().pending();
    }

    /// Makes an attempt's future with its context set, so that the
    /// synchronous part of a closure (where a request, and its idempotency
    /// key, is built) sees the attempt. No span: the attempt's span is
    /// entered each time its future is polled.
    // Inlined: the closure API makes every attempt's future through it
    // (benches/instructions.sh).
    #[inline]
    pub(crate) fn make<R>(&mut self, make: impl FnOnce() -> R) -> R {
        let mut mark = self.breaker.mark();
        let _hold = mark.hold();
        scoped_call(self.call.scope(), make)
    }

    /// Runs a plain function's attempt with its context set.
    pub fn call<R>(&mut self, attempt: impl FnOnce() -> R) -> R {
        let span = observe::attempt_span(self.call.name(), self.attempt());
        let _span = span.enter();
        self.make(attempt)
    }

    /// Runs a plain function's attempt with its context set, under `limit`:
    /// a blocking call cannot be interrupted, so an attempt that returns
    /// after the policy's timeout fails as one cut off would, its late
    /// outcome dropped.
    /// The outcome and its error are parameters of their own, which the
    /// expansion names, so that a return type that is not a `Result` is
    /// reported on it, where it already is, and not again on the call.
    pub fn call_limited<R, E, F>(&mut self, limit: Limit<E>, attempt: F) -> R
    where
        R: Outcome<Error = E>,
        F: FnOnce() -> R,
    {
        let timeout = self.attempt_timeout();
        limit.call_blocking(timeout, || self.call(attempt))
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the nearest deadline. `None` without a timeout.
    #[must_use]
    #[inline]
    pub fn attempt_timeout(&self) -> Option<Duration> {
        self.call.attempt_timeout()
    }

    /// The step of the loop: `rules` judge the outcome of the attempt that
    /// just ended, and the call goes on. `Break`: return the outcome;
    /// `Continue` gives the wait before the next attempt, and the loop drops
    /// the outcome before it waits. Judged by reference, so that the outcome
    /// is returned from where it stands. The outcome's bound is apart from
    /// the rules' (see [`RulesOf`]), so that the expansion, which names `R`,
    /// has a return type that is not a `Result` reported on it, where it
    /// already is, and a rule of the wrong type on the rule.
    // Inlined: every call's step; a success returns at once
    // (benches/instructions.sh).
    #[inline]
    pub fn step<R, T, E, S>(&mut self, rules: &S, outcome: &R) -> ControlFlow<(), Duration>
    where
        R: Outcome<Ok = T, Error = E>,
        S: RulesOf<T, E>,
    {
        let verdict = rules.verdict_of(outcome);
        if verdict != Classification::Done {
            crate::rules::failed_with(outcome);
        }
        let failed = self.attempt();
        match self.judge(verdict) {
            Ok(wait) => {
                rules.before_wait_of(outcome, failed, wait);
                ControlFlow::Continue(wait)
            }
            Err(_) => ControlFlow::Break(()),
        }
    }

    /// Applies the rules' classification of the attempt that just ended:
    /// `Ok(wait)` to retry after `wait` (the attempt number then moves on),
    /// or the reason to stop.
    // Inlined: on every call's success path, where it is one comparison.
    #[inline]
    pub(crate) fn judge(&mut self, verdict: Classification) -> Result<Duration, Stop> {
        if verdict == Classification::Done {
            // A success: the budget gets its share back, the breaker hears
            // of it.
            self.breaker.record(true);
            self.call
                .succeeded(self.budget.budget(), self.breaker.breaker());
            return Err(Stop::Done);
        }
        self.judge_failure(verdict)
    }

    /// [`judge`](Self::judge) for an attempt that did not succeed. Not
    /// inlined, and generic only over the breaker's and the budget's slots,
    /// so that retried functions share it rather than each carrying a copy
    /// (benches/build-cost.sh); a call to it is a few instructions beside a
    /// retry's wait.
    #[inline(never)]
    fn judge_failure(&mut self, verdict: Classification) -> Result<Duration, Stop> {
        let (verdict, below) = self.call.below(verdict);
        self.call.scope().inner_gave_up |= below;
        let ran = self.breaker.record(!verdict.is_transient());
        let (budget, breaker) = (self.budget.budget(), self.breaker.breaker());
        if !ran {
            // A refused attempt never ran: stop, and do not count it.
            let record = Record(None, budget, breaker);
            return Err(self.call.stopped(Stop::Open, false, record));
        }
        // A request the server never processed, when it is not sent again
        // transparently, is a transient failure like any other.
        if verdict.retries() {
            return self.call.retry(verdict, budget, breaker);
        }
        RetryBudget::not_retried(budget, verdict);
        Err(self
            .call
            .not_retryable(Record(Some(verdict), budget, breaker)))
    }

    /// Whether a request the server never processed (`verdict`) is sent
    /// again at once, as the same attempt: see [`CallState::send_again`].
    /// The breaker hears nothing of it: the next [`acquire`](Self::acquire)
    /// frees the permit unrecorded.
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn send_again(
        &mut self,
        verdict: Classification,
        resent: &mut crate::decision::Resent,
    ) -> bool {
        self.call.send_again(verdict, resent)
    }
}
