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

use crate::clock::Clock;
use crate::context::{self, scoped_call, Scoped};
use crate::decision::{self, Failure, Stop, Verdict};
use crate::{observe, AttemptContext, Policy, RetryBudget};

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
    #[cfg(feature = "tracing")]
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
        #[cfg(not(feature = "tracing"))]
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
            #[cfg(feature = "tracing")]
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

    pub(crate) fn inner_gave_up_mut(&mut self) -> &mut bool {
        &mut self.inner_gave_up
    }

    fn name(&self) -> &'static str {
        #[cfg(feature = "tracing")]
        return self.name;
        #[cfg(not(feature = "tracing"))]
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
        match decision::decide(self.policy, &failure, crate::rng::next_u64) {
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
