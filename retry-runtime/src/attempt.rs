//! The whole decision of one retry, in one place: after each attempt, given
//! what the rules made of its outcome, return it or wait how long. Attempts
//! left, the retry budget, the server's hint, the backoff and the deadline
//! are weighed here, in that order.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use tokio::time::Instant;

use crate::context::{scoped_call, Scoped};
use crate::{AttemptContext, Nested, Policy, RetryBudget};
use retry_core::backoff;

/// Why a call stopped and returned what it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stop {
    /// The outcome is a success.
    Done,
    /// The error is one `on` does not accept.
    NotRetryable,
    /// That was attempt `max`.
    Exhausted,
    /// The retry budget is spent.
    Budget,
    /// The server asked for a wait longer than `cap`.
    HintTooLong,
    /// The wait would end past the deadline.
    Deadline,
    /// The call runs inside another retried function's attempt, which
    /// retries instead (`nested = "once"`).
    Nested,
}

impl Stop {
    /// A short name: `"done"`, `"not_retryable"`, `"exhausted"`, `"budget"`,
    /// `"hint_too_long"`, `"deadline"` or `"nested"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Stop::Done => "done",
            Stop::NotRetryable => "not_retryable",
            Stop::Exhausted => "exhausted",
            Stop::Budget => "budget",
            Stop::HintTooLong => "hint_too_long",
            Stop::Deadline => "deadline",
            Stop::Nested => "nested",
        }
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The state of one call across its attempts. Holds no error and no value, so
/// it never makes the caller's future `!Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempts<'p> {
    policy: &'p Policy,
    budget: Option<&'p RetryBudget>,
    /// Attempts made so far, the one being judged included.
    attempt: u32,
    /// A plain function: time is the real clock, waits are blocking.
    blocking: bool,
    /// The last wait in nanoseconds, for decorrelated jitter; `base` before
    /// the first. Nanoseconds rather than a `Duration` keep the future small.
    previous: u64,
    /// When the first attempt started; read only when there is a deadline.
    started: Option<Instant>,
    #[cfg(feature = "tracing")]
    name: &'static str,
}

impl<'p> Attempts<'p> {
    /// Call just before the first attempt of an `async fn`. `name` names the
    /// function in `tracing` events.
    #[inline]
    #[must_use]
    pub fn start(policy: &'p Policy, budget: Option<&'p RetryBudget>, name: &'static str) -> Self {
        Self::new(policy, budget, name, false)
    }

    /// Call just before the first attempt of a plain function.
    #[inline]
    #[must_use]
    pub fn start_blocking(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
    ) -> Self {
        Self::new(policy, budget, name, true)
    }

    #[inline]
    fn new(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
        blocking: bool,
    ) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = name;
        Attempts {
            policy,
            budget,
            attempt: 1,
            blocking,
            previous: backoff::nanos(policy.base()),
            started: policy.deadline().map(|_| {
                if blocking {
                    Instant::from_std(std::time::Instant::now())
                } else {
                    Instant::now()
                }
            }),
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

    /// Whether this call runs inside another retried function's attempt
    /// and leaves the retrying to it (`nested = "once"`). Read when an
    /// attempt fails, not when the call starts, to keep the thread-local
    /// off the success path: the outer attempt is still running then, since
    /// this call is part of it.
    fn is_nested(&self) -> bool {
        self.policy.nested() == Nested::Once && crate::context::in_attempt()
    }

    fn elapsed(&self, started: Instant) -> Duration {
        if self.blocking {
            started.into_std().elapsed()
        } else {
            started.elapsed()
        }
    }

    /// What the body can know of the attempt it runs.
    #[inline]
    #[must_use]
    pub fn context(&self) -> AttemptContext {
        AttemptContext {
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts().max(1),
            nested_once: self.policy.nested() == Nested::Once,
            deadline: match (self.started, self.policy.deadline()) {
                (Some(started), Some(deadline)) => started.checked_add(deadline),
                _ => None,
            },
            blocking: self.blocking,
        }
    }

    /// Polls an attempt's future with its context set, so the body can read
    /// it and nested retried functions know they are nested.
    #[inline]
    pub fn scoped<'a, F: Future>(&self, attempt: Pin<&'a mut F>) -> Scoped<'a, F> {
        Scoped::new(self.context(), attempt)
    }

    /// Runs a plain function's attempt with its context set.
    #[inline]
    pub fn call<R>(&self, attempt: impl FnOnce() -> R) -> R {
        scoped_call(self.context(), attempt)
    }

    /// Runs a plain function's attempt with its context set, and with the
    /// policy's timeout: a blocking call cannot be interrupted, so an attempt
    /// that returns after its limit is `None`, timed out, its late outcome
    /// dropped, as an async attempt cut off would be.
    #[inline]
    pub fn call_limited<R>(&self, attempt: impl FnOnce() -> R) -> Option<R> {
        let Some(limit) = self.attempt_timeout() else {
            return Some(self.call(attempt));
        };
        let started = std::time::Instant::now();
        let outcome = self.call(attempt);
        (started.elapsed() <= limit).then_some(outcome)
    }

    /// How long the next attempt may run: the policy's timeout, shortened to
    /// the time left before the deadline. `None` without a timeout.
    #[must_use]
    pub fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.policy.timeout()?;
        match (self.policy.deadline(), self.started) {
            (Some(deadline), Some(started)) => {
                Some(timeout.min(deadline.saturating_sub(self.elapsed(started))))
            }
            _ => Some(timeout),
        }
    }

    /// Judges an attempt's verdict: `Ok(wait)` to retry after `wait`, or the
    /// reason to stop.
    #[inline]
    pub fn judge(&mut self, verdict: Verdict) -> Result<Duration, Stop> {
        let decision = match verdict {
            Verdict::Success => {
                if let Some(budget) = self.budget {
                    budget.record_success();
                }
                return Err(Stop::Done);
            }
            Verdict::Permanent => Err(Stop::NotRetryable),
            Verdict::Transient(hint) => self.retry(hint),
        };
        self.observe(decision);
        decision
    }

    /// Counts and traces a retry or a give-up. Off the success path.
    #[cold]
    fn observe(&self, decision: Result<Duration, Stop>) {
        match decision {
            Ok(_wait) => {
                crate::metrics::record_retry();
                #[cfg(feature = "tracing")]
                tracing::info!(
                    target: "retry_runtime",
                    function = self.name,
                    attempt = self.attempt - 1,
                    wait_ms = _wait.as_secs_f64() * 1000.0,
                    "attempt failed; retrying"
                );
            }
            Err(stop) => {
                crate::metrics::record_stop(stop);
                #[cfg(feature = "tracing")]
                if stop == Stop::NotRetryable {
                    tracing::debug!(
                        target: "retry_runtime",
                        function = self.name,
                        attempt = self.attempt,
                        reason = stop.as_str(),
                        "attempt failed; not retrying"
                    );
                } else {
                    tracing::warn!(
                        target: "retry_runtime",
                        function = self.name,
                        attempt = self.attempt,
                        reason = stop.as_str(),
                        "attempt failed; giving up"
                    );
                }
            }
        }
    }

    /// After a failure that may be retried, with the server's hint if any:
    /// the wait before the next attempt, or why there is none.
    fn retry(&mut self, hint: Option<Duration>) -> Result<Duration, Stop> {
        // Every retryable failure takes from the budget, the last one too.
        let budget_allows = self.budget.is_none_or(RetryBudget::record_failure);
        let nested = self.is_nested();
        if nested || self.attempt >= self.policy.max_attempts() {
            return Err(if nested {
                Stop::Nested
            } else {
                Stop::Exhausted
            });
        }
        if !budget_allows {
            return Err(Stop::Budget);
        }
        let backoff = self
            .policy
            .wait(self.attempt - 1, Duration::from_nanos(self.previous));
        let wait = match hint {
            Some(hint) => self
                .policy
                .hinted_wait(backoff, hint, crate::rng::next_u64())
                .ok_or(Stop::HintTooLong)?,
            None => backoff,
        };
        if let (Some(deadline), Some(started)) = (self.policy.deadline(), self.started) {
            let end = self.elapsed(started).saturating_add(wait);
            // With a per-attempt timeout, a retry that would start exactly
            // at the deadline would get no time at all: stop instead.
            if end > deadline || (end == deadline && self.policy.timeout().is_some()) {
                return Err(Stop::Deadline);
            }
        }
        // Waits are at most `u64::MAX` nanoseconds, so this is exact.
        self.previous = backoff::nanos(wait);
        self.attempt += 1;
        Ok(wait)
    }
}

/// What a classifier makes of an outcome.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A value to return.
    Success,
    /// An error `on` rejects: return it.
    Permanent,
    /// An error `on` accepts, or an `Ok` value `on_ok` accepts, with the
    /// server's hint if there is one.
    Transient(Option<Duration>),
}

/// Blocks the thread for a plain function's wait.
#[doc(hidden)]
#[inline]
pub fn sleep_blocking(wait: Duration) {
    std::thread::sleep(wait);
}
