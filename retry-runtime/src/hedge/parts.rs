//! What a hedged call is made of: how each attempt is made, judged and
//! bounded in time, the slot it runs in, and what the call is given. The
//! call itself is `call.rs`.

use core::future::Future;
use core::time::Duration;

use crate::clock::Instant;

use super::Hedge;
use crate::breaker::CircuitPermit;
use crate::observe::Record;
use crate::policy::Params;
use crate::rules::Outcome;
use crate::timeout::{Limit, Limited};
use crate::{CircuitBreaker, CircuitOpen, Classification, RetryBudget};

/// Makes each attempt's future: a closure `FnMut() -> impl Future`, or a
/// type of the integration's own (whose type a tower future can name).
pub trait MakeAttempt {
    /// An attempt.
    type Attempt: Future;
    /// Starts another attempt, or `None` when none can be made (the call
    /// then starts no more; the first attempt can always be made).
    fn make(&mut self) -> Option<Self::Attempt>;

    /// Whether another attempt can be made now; asked, after the first,
    /// before a hedge takes a token from the budget. `true` unless
    /// overridden: the tower layer says `false` for a request whose body
    /// cannot be sent again.
    fn can_make(&self) -> bool {
        true
    }

    /// Whether each attempt sends an HTTP request, whose span (feature
    /// `attempt-spans`) then carries `http.request.resend_count`, as the
    /// retry layer's and the middleware's do. `false` unless overridden:
    /// the hedge layer says `true`.
    #[doc(hidden)]
    fn sends_http(&self) -> bool {
        false
    }
}

impl<F, Fut> MakeAttempt for F
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    type Attempt = Fut;

    fn make(&mut self) -> Option<Fut> {
        Some(self())
    }
}

/// How each attempt is bounded in time: by the policy's `timeout` (a
/// `Limit`, which keeps room for a timer in every slot), or not at all.
pub trait Bound<F: Future> {
    /// The attempt as it runs in its slot.
    type Attempt: Future<Output = F::Output>;
    /// `attempt`, cut off after `timeout` if there is one.
    fn bound(&self, timeout: Option<Duration>, attempt: F) -> Self::Attempt;
}

impl<F, E> Bound<F> for Limit<E>
where
    F: Future,
    F::Output: Outcome<Error = E>,
{
    type Attempt = Limited<F, E, fn(E) -> F::Output>;

    fn bound(&self, timeout: Option<Duration>, attempt: F) -> Self::Attempt {
        self.attempt(timeout, attempt)
    }
}

/// Attempts never cut off (no `timeout`): each slot holds the attempt alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unbounded;

impl<F: Future> Bound<F> for Unbounded {
    type Attempt = F;

    fn bound(&self, _: Option<Duration>, attempt: F) -> F {
        attempt
    }
}

pin_project_lite::pin_project! {
    /// An attempt in its slot: its future, cut off by `timeout` if there is
    /// one, what is known of it, and its span (feature `attempt-spans`),
    /// entered each time it is polled.
    pub struct Running<'p, A> {
        #[pin]
        pub(super) attempt: A,
        pub(super) known: Known<'p>,
        pub(super) span: crate::observe::AttemptSpan,
    }
}

/// A breaker every attempt asks, with what a refused call fails with
/// (`E::from`).
pub type Breaker<'p, E> = Option<(&'p CircuitBreaker, fn(CircuitOpen) -> E)>;

/// What a call is given, apart from its attempts and rules.
pub struct Setup<'p, R: Outcome, L = Limit<<R as Outcome>::Error>> {
    /// The policy: `max`, `base` (the percentile hedge's first delay),
    /// `cap` (for hints), `deadline`, `timeout`.
    pub(crate) policy: &'p Params,
    /// When to start the next attempt while none has answered.
    pub hedge: Hedge,
    /// The budget hedges and retries draw from.
    pub budget: Option<&'p RetryBudget>,
    /// The breaker every attempt asks, and what a refused call returns.
    pub breaker: Breaker<'p, R::Error>,
    /// How an attempt past `timeout` fails, if it can be cut off.
    pub limit: L,
    /// The function's name, for tracing and metrics.
    pub name: &'static str,
}

impl<'p, R: Outcome, L> Setup<'p, R, L> {
    /// A decision of the call on an outcome judged `outcome` (none for a
    /// hedge or a refusal), with its budget and breaker, for a test's
    /// record.
    pub(super) fn record(&self, outcome: Option<Classification>) -> Record<'p> {
        Record(outcome, self.budget, self.circuit())
    }

    /// The breaker, without what a refused call returns.
    pub(super) fn circuit(&self) -> Option<&'p CircuitBreaker> {
        self.breaker.map(|(breaker, _)| breaker)
    }
}

/// What is known of an attempt, running or ended.
#[derive(Default)]
pub(super) struct Known<'p> {
    pub(super) number: u32,
    // When it started, read only for a percentile hedge's latencies.
    pub(super) started: Option<Instant>,
    // The breaker's permit it runs under, as a retry loop's attempt does.
    pub(super) permit: Option<CircuitPermit<'p>>,
    // Without a permit: another breaker refused a call made inside this
    // attempt, whose failure then says nothing of the dependency.
    pub(super) refused_inside: bool,
    // The retried functions this attempt called that are in flight, and
    // whether one gave up after retrying (the call's context holds them
    // while the attempt is polled).
    pub(super) nesting: (u32, bool),
}
