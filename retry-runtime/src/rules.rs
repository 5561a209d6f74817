//! The rules of one retried function (`on`, `on_ok`, `retry_after`,
//! `retry_after_ok`, `on_retry`, `on_retry_ok`) tied to its return type, and
//! the step that applies them to an attempt's outcome.

use core::ops::ControlFlow;
use core::time::Duration;

use crate::attempt::{Attempts, Verdict};

/// What an attempt returns: a `Result`, possibly behind an alias such as
/// `io::Result<T>`. Lets the expansion name the success and error types of a
/// return type it only knows as tokens.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`#[retry]` needs a function that returns a `Result`, not `{Self}`",
    label = "this must be a `Result<T, E>` (or an alias of one, such as `io::Result<T>`)",
    note = "`#[retry]` decides whether to retry by looking at the `Err` value"
)]
pub trait Outcome {
    /// The success type.
    type Ok;
    /// The error type.
    type Error;
    /// A view of the outcome as a `Result`.
    fn as_result(&self) -> Result<&Self::Ok, &Self::Error>;
    /// The outcome of an attempt that failed with `error`.
    fn from_error(error: Self::Error) -> Self;
}

impl<T, E> Outcome for Result<T, E> {
    type Ok = T;
    type Error = E;

    #[inline]
    fn as_result(&self) -> Result<&T, &E> {
        self.as_ref()
    }

    #[inline]
    fn from_error(error: E) -> Self {
        Err(error)
    }
}

/// Which errors to retry: `Fn(&E) -> bool`. One bound, so that a mismatch is
/// one error.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{E}` and returns `bool`",
    label = "expected `Fn(&{E}) -> bool`"
)]
pub trait Classify<E>: Fn(&E) -> bool {}

impl<E, F: Fn(&E) -> bool> Classify<E> for F {}

/// The wait a server asked for: `Fn(&E) -> Option<Duration>`.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{E}` and returns `Option<Duration>`",
    label = "expected `Fn(&{E}) -> Option<Duration>`"
)]
pub trait Hint<E>: Fn(&E) -> Option<Duration> {}

impl<E, F: Fn(&E) -> Option<Duration>> Hint<E> for F {}

/// Called before each wait: `Fn(&E, u32, Duration)`, or `Fn(&T, u32,
/// Duration)` for retried `Ok` values.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure taking `&{X}`, the attempt number (`u32`) and the wait (`Duration`)",
    label = "expected `Fn(&{X}, u32, Duration)`"
)]
pub trait OnRetry<X>: Fn(&X, u32, Duration) {}

impl<X, F: Fn(&X, u32, Duration)> OnRetry<X> for F {}

/// The rules of one function: `on`, `on_ok`, `retry_after`,
/// `retry_after_ok`, `on_retry` and `on_retry_ok`.
#[doc(hidden)]
pub struct Rules<On, OnOk, Ra, RaOk, Hook, HookOk>(
    pub(crate) On,
    pub(crate) OnOk,
    pub(crate) Ra,
    pub(crate) RaOk,
    pub(crate) Hook,
    pub(crate) HookOk,
);

/// Ties the rules to the function's return type `R`, so that closures such
/// as `|e| e.is_timeout()` need no annotation.
///
/// This is the one place the expansion puts bounds on `R` and the rules:
/// when the return type is not a `Result`, or a rule does not fit it, the
/// compiler reports it here, once, and nowhere else.
#[doc(hidden)]
#[inline]
#[allow(clippy::type_complexity)]
pub fn classifier<R, On, OnOk, Ra, RaOk, Hook, HookOk>(
    on: On,
    on_ok: OnOk,
    retry_after: Ra,
    retry_after_ok: RaOk,
    on_retry: Hook,
    on_retry_ok: HookOk,
) -> Classifier<R, Rules<On, OnOk, Ra, RaOk, Hook, HookOk>>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    Classifier {
        rules: Rules(
            on,
            on_ok,
            retry_after,
            retry_after_ok,
            on_retry,
            on_retry_ok,
        ),
        step: step::<R, On, OnOk, Ra, RaOk, Hook, HookOk>,
    }
}

/// One step of the loop, for rules known to fit `R`.
fn step<R, On, OnOk, Ra, RaOk, Hook, HookOk>(
    rules: &Rules<On, OnOk, Ra, RaOk, Hook, HookOk>,
    attempts: &mut Attempts<'_>,
    outcome: R,
) -> ControlFlow<R, Duration>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    let Rules(on, on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok) = rules;
    let verdict = match outcome.as_result() {
        Ok(value) if on_ok(value) => Verdict::Transient(retry_after_ok(value)),
        Ok(_) => Verdict::Success,
        Err(error) if on(error) => Verdict::Transient(retry_after(error)),
        Err(_) => Verdict::Permanent,
    };
    match attempts.judge(verdict) {
        Ok(wait) => {
            let attempt = attempts.attempt() - 1;
            match outcome.as_result() {
                Ok(value) => on_retry_ok(value, attempt, wait),
                Err(error) => on_retry(error, attempt, wait),
            }
            ControlFlow::Continue(wait)
        }
        Err(_) => ControlFlow::Break(outcome),
    }
}

/// The rules, with the step fixed while the bounds are known to hold.
#[doc(hidden)]
pub struct Classifier<R, Rules> {
    rules: Rules,
    step: fn(&Rules, &mut Attempts<'_>, R) -> ControlFlow<R, Duration>,
}

impl<R, Rules> Classifier<R, Rules> {
    /// Judges an attempt's outcome: `Break` hands it back unchanged,
    /// `Continue` gives the wait before the next attempt. The outcome is
    /// dropped here, before the wait.
    #[inline]
    pub fn next(&self, attempts: &mut Attempts<'_>, outcome: R) -> ControlFlow<R, Duration> {
        (self.step)(&self.rules, attempts, outcome)
    }
}

/// The classifier of `on` when none is given: every error is retried.
#[doc(hidden)]
#[inline]
pub fn every_error<E>(_: &E) -> bool {
    true
}

/// The classifier of `on_ok` when none is given: no `Ok` value is retried.
#[doc(hidden)]
#[inline]
pub fn no_value<T>(_: &T) -> bool {
    false
}

/// `retry_after` when none is given.
#[doc(hidden)]
#[inline]
pub fn no_hint<T>(_: &T) -> Option<Duration> {
    None
}

/// `on_retry` and `on_retry_ok` when none is given.
#[doc(hidden)]
#[inline]
pub fn no_hook<X>(_: &X, _: u32, _: Duration) {}
