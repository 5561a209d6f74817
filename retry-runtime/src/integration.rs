//! The one place where the tower layer and the reqwest middleware reach the
//! runtime's decision: the same backoff, jitter, deadline, budget and
//! server-hint handling as `#[retry]`, through the same state.

use core::time::Duration;

use crate::attempts::{Attempts, NoBreaker};
use crate::decision::Verdict;
use crate::{Policy, RetryBudget, Stop};

/// What a classifier of a layer or middleware made of an attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "tower", feature = "reqwest-middleware")))
)]
pub enum Classification {
    /// Return it: a success, or an answer a repeat would not change.
    Done,
    /// Return it: a failure a repeat would not fix (or that must not be
    /// repeated, such as a POST without an idempotency key).
    Permanent,
    /// A failure that may succeed on a repeat, with the wait the server
    /// asked for, if any (`Retry-After`, `grpc-retry-pushback-ms`).
    Transient(Option<Duration>),
}

/// One call's retry state under a policy.
#[derive(Debug)]
pub(crate) struct Call<'p> {
    attempts: Attempts<'p, NoBreaker, Option<&'p RetryBudget>>,
}

impl<'p> Call<'p> {
    /// Starts a call: its first attempt begins now.
    pub(crate) fn start(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        name: &'static str,
    ) -> Self {
        Call {
            attempts: Attempts::start(policy, budget, name),
        }
    }

    /// Judges the attempt that just ended: the wait before the next, or why
    /// the call stops.
    pub(crate) fn judge(&mut self, outcome: Classification) -> Result<Duration, Stop> {
        self.attempts.judge(match outcome {
            Classification::Done => Verdict::Success,
            Classification::Permanent => Verdict::Permanent,
            Classification::Transient(hint) => Verdict::Transient(hint),
        })
    }

    /// Stops the call for `stop` without judging an outcome: the breaker
    /// refused the attempt, or opened on its failure.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn stop(&mut self, stop: Stop) {
        self.attempts.stop(stop);
    }

    /// The attempt about to run or just judged, from 1.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempts.attempt()
    }
}
