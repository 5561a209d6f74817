//! What one call keeps across its attempts, breaker or budget or not: its
//! policy, the context its attempts run in, and the last wait. The decision
//! itself is [`crate::decision`]; telling the outside world is
//! [`crate::observe`]. Not generic, so every retried function shares this
//! code.

use core::time::Duration;

use crate::clock::{Clock, Deadline, Instant};
use crate::context::{self, Below, Scope};
use crate::decision::{self, Classification, Failure, Stop, TimeLeft};
use crate::observe::{self, Name, Record};
use crate::policy::Params;
use crate::{CircuitBreaker, Nested, RetryBudget};

/// The state of one call across its attempts. Holds no error and no value,
/// so it never makes the caller's future `!Send`.
#[derive(Debug)]
pub(crate) struct CallState<'p> {
    policy: &'p Params,
    /// The attempt running or just judged, the call's deadline and key, as
    /// its attempts' context shows them.
    scope: Scope,
    name: Name,
    /// When the call started, for the time it took: read only when
    /// something reports it ([`observe::measures_calls`]).
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    started: Option<Instant>,
}

impl<'p> CallState<'p> {
    // Inlined: on every call's success path, and with the expansion's
    // constant policy the deadline and base fold away (benches/instructions.sh).
    #[inline(always)]
    pub(crate) fn new(policy: &'p Params, name: &'static str, clock: Clock) -> Self {
        let deadline = match policy.deadline {
            Some(deadline) => Deadline::new(clock.now().checked_add(deadline)),
            None => Deadline::NONE,
        };
        CallState {
            policy,
            scope: Scope::first(policy.max_attempts, deadline, clock),
            name: Name::new(name),
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            started: observe::measures_calls().then(|| clock.now()),
        }
    }

    /// The time since the call started, if it was read then.
    pub(crate) fn elapsed(&self) -> Option<Duration> {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        return self.started.map(|started| self.clock().since(started));
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        None
    }

    /// The attempt running or just judged, from 1.
    // Inlined: a field read, called from the generic step in the user's crate.
    #[inline]
    pub(crate) fn attempt(&self) -> u32 {
        self.scope.frame.attempt()
    }

    pub(crate) fn clock(&self) -> Clock {
        self.scope.clock()
    }

    /// Hedging runs several attempts at once: the one polled next.
    pub(crate) fn set_attempt(&mut self, attempt: u32) {
        self.scope.frame.set_attempt(attempt);
    }

    /// Hedging runs several attempts at once, each with its own retried
    /// calls inside: puts in the call's context what the attempt polled
    /// next left there (the retried calls it has in flight, and whether one
    /// gave up after retrying), and hands back what the one polled before
    /// left, so that one attempt's calls are never taken for another's.
    pub(crate) fn swap_nesting(&mut self, nesting: (u32, bool)) -> (u32, bool) {
        let scope = &mut self.scope;
        let before = (scope.in_flight, scope.inner_gave_up);
        (scope.in_flight, scope.inner_gave_up) = nesting;
        before
    }

    /// The context the call's attempts run in.
    // Inlined: a field borrow, around every poll from the user's crate.
    #[inline]
    pub(crate) fn scope(&mut self) -> &mut Scope {
        &mut self.scope
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name.get()
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the nearest deadline. `None` without a timeout.
    #[inline]
    pub(crate) fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout?;
        Some(self.time_left().map_or(timeout, |left| timeout.min(left)))
    }

    /// The time left before this call's deadline or the enclosing attempt's,
    /// whichever is nearer: the one place it is worked out, for the retry
    /// loop's waits and a hedged call's starts alike.
    #[inline]
    pub(crate) fn time_left(&self) -> Option<Duration> {
        self.nearest_deadline()
            .map(|deadline| self.clock().until(deadline))
    }

    /// This call's deadline or the enclosing attempt's, whichever is nearer.
    #[inline]
    fn nearest_deadline(&self) -> Option<Instant> {
        self.scope
            .deadline()
            .min(context::enclosing_deadline())
            .get()
    }

    /// [`time_left`](Self::time_left) for the decision, which tells a
    /// deadline reached exactly (an attempt may still start at it) from one
    /// passed (none may).
    pub(crate) fn left(&self) -> TimeLeft {
        match self.nearest_deadline() {
            None => TimeLeft::Unbounded,
            Some(deadline) => {
                let now = self.clock().now();
                if now > deadline {
                    TimeLeft::Passed
                } else {
                    TimeLeft::Until(deadline.saturating_duration_since(now))
                }
            }
        }
    }

    /// What the classifier found on the answer judged `verdict` makes of it
    /// (DESIGN §4.17), and whether the server below gave up on it. Such a
    /// failure is taken as an inner call's give-up is (§4.11): under
    /// `nested = "once"` a retryable failure whose attempt is marked, so that
    /// the call stops (`nested`) counting it against the budget and the
    /// breaker; under `nested = "retry"` an HTTP mark changes nothing, and a
    /// negative gRPC pushback is a wait no policy makes (gRFC A6).
    #[inline]
    pub(crate) fn below(&self, verdict: Classification) -> (Classification, bool) {
        let below = context::take_below();
        if below == Below::Nothing || verdict == Classification::Done {
            return (verdict, false);
        }
        match (self.policy.nested, below) {
            (Nested::Once, _) => (Classification::Transient(None), true),
            // A hint no policy waits out (`hint_too_long`), as gRFC A6
            // reads the pushback.
            (Nested::Retry, Below::Refused) => {
                (Classification::Transient(Some(Duration::MAX)), true)
            }
            _ => (verdict, false),
        }
    }

    /// A failure the rules may retry: gathers what the decision needs, and
    /// applies it; `breaker` is asked whether the failure opened it.
    #[inline(never)]
    pub(crate) fn retry(
        &mut self,
        verdict: Classification,
        budget: Option<&RetryBudget>,
        breaker: Option<&CircuitBreaker>,
    ) -> Result<Duration, Stop> {
        let (attempt, hint) = (self.scope.frame.attempt(), verdict.hint());
        let inner_gave_up = core::mem::take(&mut self.scope.inner_gave_up);
        let record = Record(Some(verdict), budget, breaker);
        match self.decide(attempt, hint, inner_gave_up, false, budget, breaker) {
            Ok((wait, carry)) => {
                observe::retrying(self.name(), attempt, wait, record);
                self.scope.set_carry(carry);
                self.scope.frame.set_attempt(attempt.saturating_add(1));
                // Retried calls the failed attempt left running (dropped
                // with it) are not part of the next.
                self.scope.in_flight = 0;
                Ok(wait)
            }
            Err(stop) => Err(self.stopped(stop, inner_gave_up, record)),
        }
    }

    /// A request the server never processed, judged `verdict`: whether it
    /// is sent again at once as the same attempt, with no budget token
    /// ([`decision::Resent::again`]). Not when a retried call inside the attempt gave
    /// up on what failed it: sending again would run that call's retries
    /// again (DESIGN §4.11); the failure is then judged as any other.
    #[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
    pub(crate) fn send_again(
        &mut self,
        verdict: crate::Classification,
        resent: &mut decision::Resent,
    ) -> bool {
        if self.scope.inner_gave_up || !resent.again(self.policy, verdict, self.left()) {
            return false;
        }
        observe::sending_again(self.name(), self.attempt());
        // Retried calls the attempt left running (dropped with it) are not
        // part of the next send.
        self.scope.in_flight = 0;
        true
    }

    /// The decision on a failure the rules retry, for the retry loop and a
    /// hedged call alike, after `attempt` attempts (the one that failed, in
    /// the loop; all those started, in a hedged call, whose retry starts
    /// `at_once`): takes the failure's budget token, weighs it
    /// ([`decision::decide_carrying`]), and stops (`Open`) when the failure
    /// found `breaker` open, since no retry would be let through. Gives the
    /// wait, and what the call carries to its next retry.
    // Inlined into `retry`, as `decide_carrying` is (benches/instructions.sh).
    #[inline(always)]
    pub(crate) fn decide(
        &self,
        attempt: u32,
        hint: Option<Duration>,
        inner_gave_up: bool,
        at_once: bool,
        budget: Option<&RetryBudget>,
        breaker: Option<&CircuitBreaker>,
    ) -> Result<(Duration, u64), Stop> {
        let failure = Failure {
            attempt,
            hint,
            // What the last retry left ([`decision::Failure::carry`]): the
            // ceiling of its wait, or for decorrelated jitter the wait;
            // unread before the first retry, and by a hedged call's.
            carry: self.scope.carry(),
            // Every retryable failure takes from the budget, the last one too.
            budget_allows: budget.is_none_or(RetryBudget::record_failure),
            inner_gave_up,
            time_left: self.left(),
            at_once,
        };
        let decision = decision::decide_carrying(self.policy, &failure, crate::rng::next_u64)?;
        let blocking = self.clock() == Clock::Blocking;
        if breaker.is_some_and(|breaker| breaker.is_open(blocking)) {
            return Err(Stop::Open);
        }
        RetryBudget::retrying(budget);
        Ok(decision)
    }

    /// A success: the budget gets its share back, and the outside world
    /// hears of it (`breaker` only for a test's record).
    // Inlined: every successful call's end (benches/instructions.sh).
    #[inline]
    pub(crate) fn succeeded(
        &mut self,
        budget: Option<&RetryBudget>,
        breaker: Option<&CircuitBreaker>,
    ) {
        if let Some(budget) = budget {
            budget.record_success();
        }
        let record = Record(Some(Classification::Done), budget, breaker);
        observe::succeeded(self.name(), self.attempt(), self.elapsed(), record);
        // The call returns: the attempt it runs inside no longer counts it
        // in flight.
        self.scope.finished();
    }

    /// A failure that is returned to the caller, judged as `record` says.
    #[cold]
    #[inline(never)]
    pub(crate) fn not_retryable(&mut self, record: Record<'_>) -> Stop {
        let inner_gave_up = core::mem::take(&mut self.scope.inner_gave_up);
        self.stopped(Stop::NotRetryable, inner_gave_up, record)
    }

    /// Tells the outside world, and the attempt this call runs inside: a
    /// failure retried here (or by a layer below) as far as the rules allow
    /// is not to be retried again around it. A call that never retries
    /// (`max = 1`, a breaker-only guard) is no retry layer: its own failure
    /// marks nothing, though it passes on the mark of a layer below.
    pub(crate) fn stopped(&mut self, stop: Stop, inner_gave_up: bool, record: Record<'_>) -> Stop {
        let attempt = self.scope.frame.attempt();
        observe::stopped_after(self.name(), attempt, attempt, stop, self.elapsed(), record);
        // The call returns: the attempt it runs inside no longer counts it
        // in flight.
        self.scope.finished();
        context::report_stop(self.policy.max_attempts, stop, inner_gave_up);
        stop
    }
}
