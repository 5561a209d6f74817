//! The [`tower::retry::Policy`] impl: one call's attempts, judged by the
//! runtime's decision.
//!
//! [`tower::retry::Policy`]: https://docs.rs/tower/0.5/tower/retry/trait.Policy.html

use crate::attempts::Attempts;
use crate::classify::http::{Classify, HttpClassifier};
use crate::decision::Resent;
use crate::slots::Watching;
use crate::{CircuitBreaker, Policy, RetryBudget};

/// The [`tower::retry::Policy`](https://docs.rs/tower/0.5/tower/retry/trait.Policy.html): one per request
/// (tower clones it for each), holding that call's attempts.
pub struct RetryPolicy<C = HttpClassifier> {
    policy: &'static Policy,
    budget: Option<&'static RetryBudget>,
    name: &'static str,
    pub(super) classifier: C,
    /// A breaker whose open circuit ends the retries: the next attempt
    /// would be refused.
    breaker: Option<&'static CircuitBreaker>,
    /// This request's retry state; started when tower clones the policy for
    /// the request, just as its first attempt begins.
    /// The breaker, if any, is asked by the breaker's own layer, which
    /// also records each attempt's outcome: here it only ends the retries
    /// while it is open.
    call: Option<Call>,
    /// What this request has sent again that the server never processed.
    resent: Resent,
}

/// One request's attempts, whose breaker, if any, is only watched.
type Call = Attempts<'static, Watching<'static>, Option<&'static RetryBudget>>;

impl RetryPolicy {
    /// Retries under `policy` with the [`HttpClassifier`].
    #[must_use]
    pub fn new(policy: &'static Policy) -> Self {
        RetryPolicy {
            policy,
            budget: None,
            name: "tower",
            classifier: HttpClassifier::new(),
            breaker: None,
            call: None,
            resent: Resent::default(),
        }
    }
}

impl<C> RetryPolicy<C> {
    /// Starts a request's call.
    fn start(&self) -> Call {
        Attempts::start(self.policy, self.budget, self.name).watching(self.breaker)
    }

    /// Draws retries from a budget shared by every request that names it.
    #[must_use]
    pub fn with_budget(mut self, budget: &'static RetryBudget) -> Self {
        self.budget = Some(budget);
        self.call = None;
        self
    }

    /// Names the calls in `tracing` events and the `function` label of
    /// metrics (default `"tower"`).
    #[must_use]
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Classifies outcomes with `classifier`.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> RetryPolicy<C2> {
        RetryPolicy {
            policy: self.policy,
            budget: self.budget,
            name: self.name,
            classifier,
            breaker: self.breaker,
            call: None,
            resent: Resent::default(),
        }
    }

    /// Stops retrying while `breaker` is open (the next attempt would be
    /// refused). [`RetryLayer::with_breaker`](super::RetryLayer::with_breaker) also puts the breaker in front
    /// of every attempt.
    #[must_use]
    pub fn with_breaker(mut self, breaker: &'static CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }
}

impl<C: Clone> Clone for RetryPolicy<C> {
    /// A policy for a new request: tower clones the policy as each request
    /// starts, so the clone's attempts start now.
    fn clone(&self) -> Self {
        RetryPolicy {
            classifier: self.classifier.clone(),
            call: Some(self.start()),
            resent: Resent::default(),
            ..*self
        }
    }
}

impl<C> core::fmt::Debug for RetryPolicy<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("policy", self.policy)
            .field("budget", &self.budget)
            .field("name", &self.name)
            .field("attempt", &self.call.as_ref().map(|call| call.attempt()))
            .finish_non_exhaustive()
    }
}

impl<C, Req, Res, E> ::tower::retry::Policy<Req, Res, E> for RetryPolicy<C>
where
    C: Classify<Req, Res, E>,
    Req: Clone,
{
    /// The wait before the next attempt.
    type Future = crate::sleep::Sleep;

    /// Judges the outcome as `#[retry]` would: the wait before the next
    /// attempt, or `None` to return this one.
    fn retry(&mut self, request: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        crate::context::judging();
        let outcome = self.classifier.classify(request, result);
        if self.call.is_none() {
            self.call = Some(self.start());
        }
        let call = self.call.as_mut()?;
        // The attempt's outcome is recorded by the breaker's own layer,
        // under this one; an open circuit would refuse the retry, so the
        // call stops (reason `open`) rather than wait for it.
        crate::observe::failed_with(result, &outcome);
        // A request the server never processed is sent again at once, as
        // the same attempt (gRFC A6), as the layer's are.
        if call.send_again(outcome, &mut self.resent) {
            return Some(crate::sleep::sleep(core::time::Duration::ZERO));
        }
        call.judge(outcome).ok().map(crate::sleep::sleep)
    }

    /// A copy of the request for the next attempt.
    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}
