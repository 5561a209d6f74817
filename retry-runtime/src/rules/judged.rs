//! The rules as the retry loop's step takes them ([`RulesOf`]): bounded on
//! the outcome's success and error types apart from the outcome itself, so
//! that the expansion reports a return type that is not a `Result` once, on
//! the return type, and a rule of the wrong type on the rule.

use core::time::Duration;

use super::{Check, Hook, Outcome, ReadHint, RuleSet, RulesFor};
use crate::decision::Classification;

/// The rules of a [`RuleSet`] for an outcome that succeeds with `T` and
/// fails with `E`: what [`Attempts::step`](crate::__private::Attempts::step)
/// takes, so that its bound on the outcome (`R: Outcome<Ok = T, Error = E>`)
/// is apart from its bound on the rules, and the expansion can report each
/// where it belongs: a return type that is not a `Result` on the return
/// type, once, and a rule of the wrong type on the rule.
#[doc(hidden)]
pub trait RulesOf<T, E> {
    /// As [`RulesFor::verdict`].
    fn verdict_of<R: Outcome<Ok = T, Error = E>>(&self, outcome: &R) -> Classification;
    /// As [`RulesFor::before_wait`].
    fn before_wait_of<R: Outcome<Ok = T, Error = E>>(
        &self,
        outcome: &R,
        attempt: u32,
        wait: Duration,
    );
}

impl<T, E, On, OnOk, Ra, RaOk, HookE, HookOk> RulesOf<T, E>
    for RuleSet<T, E, On, OnOk, Ra, RaOk, HookE, HookOk>
where
    On: Check<E>,
    OnOk: Check<T>,
    Ra: ReadHint<E>,
    RaOk: ReadHint<T>,
    HookE: Hook<E>,
    HookOk: Hook<T>,
{
    #[inline]
    fn verdict_of<R: Outcome<Ok = T, Error = E>>(&self, outcome: &R) -> Classification {
        RulesFor::<R>::verdict(self, outcome)
    }

    #[inline]
    fn before_wait_of<R: Outcome<Ok = T, Error = E>>(
        &self,
        outcome: &R,
        attempt: u32,
        wait: Duration,
    ) {
        RulesFor::<R>::before_wait(self, outcome, attempt, wait);
    }
}

/// Rules of [`RulesOf`] as [`RulesFor`] takes them.
#[doc(hidden)]
pub struct Judged<'a, S>(pub &'a S);

impl<R, S> RulesFor<R> for Judged<'_, S>
where
    R: Outcome,
    S: RulesOf<R::Ok, R::Error>,
{
    #[inline]
    fn verdict(&self, outcome: &R) -> Classification {
        self.0.verdict_of(outcome)
    }

    #[inline]
    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration) {
        self.0.before_wait_of(outcome, attempt, wait);
    }
}
