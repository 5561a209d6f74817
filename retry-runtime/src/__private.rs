//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::attempts::Attempts;
pub use crate::breaker::AttemptPermit;
pub use crate::clock::sleep_blocking;
pub use crate::decision::Classification;
pub use crate::give_up::{gave_up, give_up_hook, OnGiveUp, Started};
pub use crate::hedge::private as hedge;
pub use crate::rules::{classifier, every_error, no_hint, no_hook, no_value, Outcome};
pub use crate::sleep::sleep;
pub use crate::slots::{BreakerSlot, BudgetSlot, NoBreaker, NoBudget};
pub use crate::timeout::{Limit, Limited};
pub use core::ops::ControlFlow;
pub use core::option::Option::{None, Some};

use crate::{CircuitOpen, Policy, RetryBudget, TimedOut, UntimedPolicy};

/// `budget = ...` as the loop takes it; a function argument, so that `&LAZY`
/// and other references that deref to a `RetryBudget` coerce.
#[inline]
#[must_use]
pub fn budget(budget: &RetryBudget) -> Option<&RetryBudget> {
    Some(budget)
}

/// `policy = ...`, copied, so that the loop does not keep borrowing what
/// the expression borrows (`&self.policy` in a `&mut self` method).
#[inline]
#[must_use]
pub fn policy(policy: &Policy) -> Policy {
    *policy
}

/// A `mut` argument as the caller passed it, for one attempt: each attempt
/// starts from the caller's value, so changes a failed attempt made (a batch
/// it drained) are not seen by the next.
#[diagnostic::on_unimplemented(
    message = "`#[retry]` gives each attempt a fresh copy of a `mut` argument, so `{Self}` must be `Clone`",
    label = "`mut` argument of a type that is not `Clone`",
    note = "every attempt starts from the value the caller passed, so that what a failed attempt changed is not seen by the next; derive or implement `Clone` for `{Self}`, or take the argument without `mut` and change a local copy inside the body"
)]
pub trait Fresh {
    /// A copy for one attempt.
    fn fresh(&self) -> Self;
}

impl<T: Clone> Fresh for T {
    #[inline]
    fn fresh(&self) -> Self {
        self.clone()
    }
}

/// The caller's value of a `mut` argument, copied for one attempt.
#[inline]
#[must_use]
pub fn fresh<T: Fresh>(value: &T) -> T {
    value.fresh()
}

/// What `policy = ...` may name, for a function failing with `Self`: a
/// [`Policy`], which may carry a timeout and so needs `From<TimedOut>`, or
/// an [`UntimedPolicy`], which carries none and runs with any error type.
/// Bounded on the error type and the policy's own type together, so that
/// any mismatch is one error naming the fix.
#[diagnostic::on_unimplemented(
    message = "`policy` takes a `&Policy`, which may carry a per-attempt timeout that `{Self}` cannot express (it has no `From<retry_runtime::TimedOut>`), or a `&UntimedPolicy`",
    label = "a `&Policy` needs an error type with `From<TimedOut>`",
    note = "for an error type you cannot extend, pass `&policy.untimed()?`, an `UntimedPolicy` (refused at run time if the policy has a timeout), and bound the attempt inside the call instead (for reqwest, `ClientBuilder::timeout`)"
)]
pub trait Expresses<P: ?Sized> {
    /// The policy itself.
    fn policy(policy: &P) -> Policy;
    /// How an attempt cut off by the policy's timeout fails.
    fn limit<R: Outcome<Error = Self>>() -> Limit<R>;
}

impl<E: From<TimedOut>> Expresses<Policy> for E {
    #[inline]
    fn policy(policy: &Policy) -> Policy {
        *policy
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        timed()
    }
}

impl<E> Expresses<UntimedPolicy> for E {
    #[inline]
    fn policy(policy: &UntimedPolicy) -> Policy {
        *policy.policy()
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        Limit::untimed()
    }
}

impl<E: Expresses<P>, P: ?Sized> Expresses<&P> for E {
    #[inline]
    fn policy(policy: &&P) -> Policy {
        <E as Expresses<P>>::policy(*policy)
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        <E as Expresses<P>>::limit()
    }
}

impl<E: Expresses<P>, P, F: FnOnce() -> P> Expresses<std::sync::LazyLock<P, F>> for E {
    #[inline]
    fn policy(policy: &std::sync::LazyLock<P, F>) -> Policy {
        <E as Expresses<P>>::policy(std::sync::LazyLock::force(policy))
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        <E as Expresses<P>>::limit()
    }
}

impl<E: Expresses<P>, P: ?Sized> Expresses<std::sync::Arc<P>> for E {
    #[inline]
    fn policy(policy: &std::sync::Arc<P>) -> Policy {
        <E as Expresses<P>>::policy(policy)
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        <E as Expresses<P>>::limit()
    }
}

impl<E: Expresses<P>, P: ?Sized> Expresses<Box<P>> for E {
    #[inline]
    fn policy(policy: &Box<P>) -> Policy {
        <E as Expresses<P>>::policy(policy)
    }
    #[inline]
    fn limit<R: Outcome<Error = Self>>() -> Limit<R> {
        <E as Expresses<P>>::limit()
    }
}

/// `policy = ...`, copied, so that the loop does not keep borrowing what
/// the expression borrows (`&self.policy` in a `&mut self` method), with
/// the way a cut-off attempt fails. The one place the expansion of `policy`
/// states its bounds, so that an error type that cannot express a timeout is
/// one error, on the policy.
#[inline]
#[must_use]
pub fn runtime_policy<R, P>(policy: &P) -> (Policy, Limit<R>)
where
    R: Outcome,
    P: ?Sized,
    R::Error: Expresses<P>,
{
    (
        <R::Error as Expresses<P>>::policy(policy),
        <R::Error as Expresses<P>>::limit::<R>(),
    )
}

/// Attempts cut off fail with `E::from(TimedOut)`.
#[must_use]
pub fn timed<R>() -> Limit<R>
where
    R: Outcome,
    R::Error: From<TimedOut>,
{
    Limit::new(|timed_out| R::from_error(timed_out.into()))
}

/// An error type that can express a timed-out attempt, as `timeout = ...`
/// requires. Its own trait, so that the error says what to do instead.
#[diagnostic::on_unimplemented(
    message = "`timeout` cuts an attempt off, and `{Self}` cannot express that: it has no `From<retry_runtime::TimedOut>`",
    label = "`timeout` needs an error type with `From<TimedOut>`",
    note = "remove `timeout` and bound the attempt inside the call instead (for reqwest, `ClientBuilder::timeout`; for a database pool, its acquire and statement timeouts), or implement `From<TimedOut>` for an error type of your own"
)]
pub trait TimeoutKey: From<TimedOut> {}

impl<E: From<TimedOut>> TimeoutKey for E {}

/// The time limit of `timeout = ...`: a cut-off attempt fails with
/// `E::from(TimedOut)`. Bounded by [`TimeoutKey`], so that an error type
/// without the conversion is one error, on the key, saying what to do.
#[must_use]
pub fn timeout_key<R>() -> Limit<R>
where
    R: Outcome,
    R::Error: TimeoutKey,
{
    Limit::new(|timed_out| R::from_error(timed_out.into()))
}

/// The outcome of an attempt the breaker refused: `E::from(CircuitOpen)`.
/// The one place the expansion requires that conversion, so that a missing
/// `From` impl is one error, on the `breaker` key.
#[inline]
pub fn circuit_open<R>() -> R
where
    R: Outcome,
    R::Error: From<CircuitOpen>,
{
    R::from_error(CircuitOpen.into())
}
