//! The one place where the tower layer and the reqwest middleware reach the
//! runtime's decision: the same backoff, jitter, deadline, budget and
//! server-hint handling as `#[retry]`, through the same state.

use core::time::Duration;

use crate::attempts::Attempts;
use crate::slots::NoBreaker;
use crate::{Classification, Policy, RetryBudget, Stop};

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
        self.attempts.judge(outcome)
    }

    /// The attempt about to run or just judged, from 1.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempts.attempt()
    }
}
