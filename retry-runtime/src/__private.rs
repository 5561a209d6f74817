//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::attempts::Attempts;
pub use crate::clock::sleep_blocking;
pub use crate::decision::Classification;
pub use crate::give_up::{
    gave_up, give_up_hook, give_up_path, give_up_probe, HookFits, HookMisfits, OnGiveUp, Started,
};
pub use crate::guard::{Guard, Keep};
pub use crate::hedge::private as hedge;
pub use crate::rules::{rules, Outcome, RuleSet};
pub use crate::sleep::sleep;
pub use crate::slots::{BreakerSlot, BudgetSlot, NoBreaker, NoBudget};
pub use crate::timeout::{Limit, Limited};
pub use core::ops::ControlFlow;
pub use core::option::Option::{None, Some};

use crate::{CircuitOpen, Policy, RetryBudget, TimedOut};

/// `budget = ...` as the loop takes it; a function argument, so that `&LAZY`
/// and other references that deref to a `RetryBudget` coerce.
#[must_use]
pub fn budget(budget: &RetryBudget) -> Option<&RetryBudget> {
    Some(budget)
}

/// The caller's value of a by-value `mut` argument, kept to start each
/// attempt from it: each attempt starts from the arguments as the caller
/// passed them, so changes a failed attempt made (a batch it drained) are not
/// seen by the next. Only a type known to be `Clone` where the function is
/// written can be kept; any other (a generic `F: FnMut`, a channel receiver)
/// is carried from one attempt to the next, as a `&mut` argument would be.
/// It holds the caller's value, and `T::clone`, taken where `T: Clone` is
/// known.
#[allow(clippy::type_complexity)]
pub struct Kept<T>(Option<(T, fn(&T) -> T)>);

impl<T> Kept<T> {
    /// Puts the caller's value back into `argument`, before a retry.
    pub fn restore(&self, argument: &mut T) {
        if let Some((value, copy)) = &self.0 {
            *argument = copy(value);
        }
    }
}

/// Chooses how a by-value `mut` argument is kept, by its type: written
/// `(&Probe(&argument)).kept()`, the call resolves to [`KeepClone`] when the
/// type is `Clone` with the bounds in scope, and to [`KeepCarried`]
/// otherwise (method lookup tries `Probe<T>` before `&Probe<T>`).
pub struct Probe<'a, T>(pub &'a T);

/// A `Clone` argument: a copy of the caller's value is kept.
pub trait KeepClone<T> {
    /// The caller's value, copied.
    fn kept(&self) -> Kept<T>;
}

impl<T: Clone> KeepClone<T> for Probe<'_, T> {
    fn kept(&self) -> Kept<T> {
        Kept(Some((self.0.clone(), T::clone)))
    }
}

/// Any other argument: carried across attempts.
pub trait KeepCarried<T> {
    /// Nothing kept.
    fn kept(&self) -> Kept<T>;
}

impl<T> KeepCarried<T> for &Probe<'_, T> {
    fn kept(&self) -> Kept<T> {
        Kept(None)
    }
}

/// What `policy = ...` may name, for a function failing with `Self`: a
/// [`Policy`], which has no timeout and runs with any error type, or a
/// `Policy<TimedOut>`, which may cut attempts off and so needs
/// `From<TimedOut>`. Bounded on the error type and the policy's own type
/// together, so that any mismatch is one error naming the fix.
#[diagnostic::on_unimplemented(
    message = "`policy` takes a `&Policy<TimedOut>`, whose per-attempt timeout `{Self}` cannot express (it has no `From<retry_runtime::TimedOut>`), or a `&Policy`",
    label = "a `&Policy<TimedOut>` needs an error type with `From<TimedOut>`",
    note = "say how a cut-off attempt fails with `timed_out = ...`, such as `timed_out = |_| Status::deadline_exceeded(\"attempt timed out\")` for `tonic::Status`",
    note = "if no value of `{Self}` can be built (as with `reqwest::Error`), pass a `&Policy`, which has no timeout and runs with any error type (`.without_timeout()` makes one), and bound the attempt inside the call (for reqwest, `ClientBuilder::timeout`)"
)]
pub trait Expresses<P: ?Sized>: Sized {
    /// The policy itself.
    fn policy(policy: &P) -> Policy<TimedOut>;
    /// How an attempt cut off by the policy's timeout fails.
    fn limit() -> Limit<Self>;
}

impl<Timeout, E: CutOff<Timeout>> Expresses<Policy<Timeout>> for E {
    fn policy(policy: &Policy<Timeout>) -> Policy<TimedOut> {
        Policy::of(policy.params)
    }
    fn limit() -> Limit<Self> {
        E::limit()
    }
}

/// What `policy = ...` may name when `timed_out = ...` says how a cut-off
/// attempt fails: a [`Policy`], with or without `<TimedOut>`, behind any of
/// the pointers [`Expresses`] sees through.
#[diagnostic::on_unimplemented(
    message = "`policy` takes a `&Policy` or a `&Policy<TimedOut>`, not `{Self}`",
    label = "expected a `&Policy`"
)]
pub trait PolicySource {
    /// The policy itself.
    fn policy(&self) -> Policy<TimedOut>;
}

impl<Timeout> PolicySource for Policy<Timeout> {
    fn policy(&self) -> Policy<TimedOut> {
        Policy::of(self.params)
    }
}

/// A policy behind a reference or a pointer (a `LazyLock` forced) is the
/// policy it points to, for [`Expresses`] and [`PolicySource`] alike.
macro_rules! through {
    ($([$($generics:tt)*] $pointer:ty;)*) => {$(
        impl<E: Expresses<P>, $($generics)*> Expresses<$pointer> for E {
            fn policy(policy: &$pointer) -> Policy<TimedOut> {
                <E as Expresses<P>>::policy(policy)
            }
            fn limit() -> Limit<Self> {
                <E as Expresses<P>>::limit()
            }
        }

        impl<$($generics)*> PolicySource for $pointer where P: PolicySource {
            fn policy(&self) -> Policy<TimedOut> {
                P::policy(self)
            }
        }
    )*};
}

through! {
    [P: ?Sized] &P;
    [P, F: FnOnce() -> P] std::sync::LazyLock<P, F>;
    [P: ?Sized] std::sync::Arc<P>;
    [P: ?Sized] Box<P>;
}

/// `policy = ...` next to `timed_out = ...`, copied, so that the loop does
/// not keep borrowing what the expression borrows.
#[must_use]
pub fn keyed_policy<P: PolicySource + ?Sized>(policy: &P) -> Policy<TimedOut> {
    policy.policy()
}

/// `policy = ...`, copied, so that the loop does not keep borrowing what
/// the expression borrows (`&self.policy` in a `&mut self` method), with
/// the way a cut-off attempt fails. The one place the expansion of `policy`
/// states its bounds, so that an error type that cannot express a timeout is
/// one error, on the policy.
#[must_use]
/// The error type is a parameter of its own, as in [`timeout_key`]: `R:
/// Outcome` is reported on the return type, where a return type that is not
/// a `Result` already is.
pub fn runtime_policy<R, P, E>(policy: &P) -> (Policy<TimedOut>, Limit<E>)
where
    R: Outcome<Error = E>,
    P: ?Sized,
    E: Expresses<P>,
{
    (
        <E as Expresses<P>>::policy(policy),
        <E as Expresses<P>>::limit(),
    )
}

/// An error type that can express a timed-out attempt, as `timeout = ...`
/// requires. Its own trait, so that the error says what to do instead.
#[diagnostic::on_unimplemented(
    message = "`timeout` cuts an attempt off, and `{Self}` cannot express that: it has no `From<retry_runtime::TimedOut>`",
    label = "`timeout` needs an error type with `From<TimedOut>`",
    note = "say how a cut-off attempt fails with `timed_out = ...`, such as `timed_out = |_| Status::deadline_exceeded(\"attempt timed out\")` for `tonic::Status`",
    note = "if no value of `{Self}` can be built (as with `reqwest::Error`), return an error enum of your own (`#[derive(Debug, thiserror::Error)] enum Error {{ #[error(transparent)] Http(#[from] reqwest::Error), #[error(transparent)] TimedOut(#[from] retry_runtime::TimedOut) }}`), or remove `timeout` and bound the attempt inside the call (for reqwest, `ClientBuilder::timeout`)"
)]
pub trait TimeoutKey: From<TimedOut> {}

impl<E: From<TimedOut>> TimeoutKey for E {}

/// The time limit of `timeout = ...`: a cut-off attempt fails with
/// `E::from(TimedOut)`. Bounded by [`TimeoutKey`], so that an error type
/// without the conversion is one error, on the key, saying what to do.
/// The error type is a parameter of its own, inferred from `R`, so that the
/// expansion can locate each bound apart: `R: Outcome` on the return type,
/// where a return type that is not a `Result` is already reported, and
/// `E: TimeoutKey` on the key.
#[must_use]
pub fn timeout_key<R, E>() -> Limit<E>
where
    R: Outcome<Error = E>,
    E: TimeoutKey,
{
    Limit::new(E::from)
}

/// `timeout = ...` (or `policy = ...`) with `timed_out = ...`: a cut-off
/// attempt fails with the error the key builds. The expansion writes the
/// key's conversion inside a closure that captures nothing, bound here on
/// the return type, so that a conversion of the wrong type is one error, on
/// the key, and a closure needs no annotation.
/// The error type is a parameter of its own, as in [`timeout_key`].
#[must_use]
pub fn timed_out_with<R, E>(timed_out: fn(TimedOut) -> E) -> Limit<E>
where
    R: Outcome<Error = E>,
{
    Limit::new(timed_out)
}

/// An error type that can express a call the circuit breaker refused, as
/// `breaker = ...` requires. Its own trait, so that the error says what to
/// do instead.
#[diagnostic::on_unimplemented(
    message = "`breaker` refuses calls while the circuit is open, and `{Self}` cannot express that: it has no `From<retry_runtime::CircuitOpen>`",
    label = "`breaker` needs an error type with `From<CircuitOpen>`, or `circuit_open = ...`",
    note = "say how a refused call fails with `circuit_open = ...`, such as `circuit_open = |_| Status::unavailable(\"circuit open\")` for `tonic::Status`",
    note = "if no value of `{Self}` can be built (as with `reqwest::Error`), return an error enum of your own: `#[derive(Debug, thiserror::Error)] enum Error {{ #[error(transparent)] Http(#[from] reqwest::Error), #[error(transparent)] Open(#[from] retry_runtime::CircuitOpen) }}`"
)]
pub trait BreakerKey: From<CircuitOpen> {}

impl<E: From<CircuitOpen>> BreakerKey for E {}

/// An error type the closure API's `.breaker(..)` can fail a refused call
/// with. Its own trait, so that the error names `.breaker_with(..)`.
#[diagnostic::on_unimplemented(
    message = "`.breaker(..)` refuses calls while the circuit is open, and `{Self}` cannot express that: it has no `From<retry_runtime::CircuitOpen>`",
    label = "`.breaker(..)` needs an error type with `From<CircuitOpen>`; use `.breaker_with(..)`",
    note = "say how a refused call fails with `.breaker_with(&BREAKER, |_| ...)`, such as `.breaker_with(&BREAKER, |_| Status::unavailable(\"circuit open\"))` for `tonic::Status`",
    note = "if no value of `{Self}` can be built (as with `reqwest::Error`), return an error enum of your own that holds it and `CircuitOpen`"
)]
pub trait OpenBreaker: From<CircuitOpen> {}

impl<E: From<CircuitOpen>> OpenBreaker for E {}

/// An error type a closure loop under a `Policy<Timeout>` can fail a
/// cut-off attempt with: any, under a `Policy`, which cuts no attempt off.
/// Its own trait, so that the error names `.timed_out(..)` and
/// `.without_timeout()`.
#[diagnostic::on_unimplemented(
    message = "this policy cuts attempts off (`with_timeout`), and `{Self}` cannot express that: it has no `From<retry_runtime::TimedOut>`",
    label = "a `Policy<TimedOut>` needs an error type with `From<TimedOut>`",
    note = "say how a cut-off attempt fails with `.timed_out(|_| ...)` in place of `.retrying()`, such as `policy.timed_out(|_| Status::deadline_exceeded(\"attempt timed out\"))` for `tonic::Status`",
    note = "or remove the timeout with `.without_timeout()`: a `Policy` runs with any error type (bound the attempt inside the call instead; for reqwest, `ClientBuilder::timeout`)"
)]
pub trait CutOff<Timeout>: Sized {
    /// How an attempt cut off by the policy's timeout fails.
    fn limit() -> Limit<Self>;
}

impl<E: From<TimedOut>> CutOff<TimedOut> for E {
    fn limit() -> Limit<E> {
        Limit::new(E::from)
    }
}

impl<E> CutOff<()> for E {
    fn limit() -> Limit<E> {
        Limit::untimed()
    }
}

/// The outcome of an attempt the breaker refused: `E::from(CircuitOpen)`.
/// Bounded by [`BreakerKey`], so that an error type without the conversion
/// is one error, on the `breaker` key, saying what to do.
/// The error type is a parameter of its own, as in [`timeout_key`].
pub fn circuit_open<R, E>() -> R
where
    R: Outcome<Error = E>,
    E: BreakerKey,
{
    R::from_error(CircuitOpen.into())
}

/// `breaker = ...` with `circuit_open = ...`: a refused call fails with the
/// error the key builds.
pub fn circuit_open_with<R, F>(circuit_open: F) -> R
where
    R: Outcome,
    F: FnOnce(CircuitOpen) -> R::Error,
{
    R::from_error(circuit_open(CircuitOpen))
}

/// A by-value argument of type `T` that a `move` closure among the rules
/// names, which `move` takes out of the function on the first attempt
/// unless it is `Copy`. Its own trait, so that the error says what to do
/// instead; implemented by `()` alone, so that the compiler does not suggest
/// borrowing the argument, which a `move` closure would still move.
#[diagnostic::on_unimplemented(
    message = "a `move` closure among the keys takes this argument, of type `{T}`, on the first attempt, and no retry could use it again",
    label = "moved into the closure at the first attempt",
    note = "the closure is built again for each attempt: remove `move`, and it borrows the argument instead, which every attempt can"
)]
pub trait MovedByRule<T> {}

#[diagnostic::do_not_recommend]
impl<T: Copy> MovedByRule<T> for () {}

/// A check, never run, that a by-value argument a `move` closure among the
/// rules names is `Copy`: see [`MovedByRule`].
pub fn moved_by_rule<T>(_: impl FnOnce() -> T)
where
    (): MovedByRule<T>,
{
}
