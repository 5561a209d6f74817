//! The rules of one retried function (`on`, `on_ok`, `retry_after`,
//! `retry_after_ok`, `on_retry`, `on_retry_ok`) tied to its return type:
//! they judge an attempt's outcome and return a verdict, which the attempt
//! loop ([`crate::attempts`]) applies.

use core::time::Duration;

use crate::decision::Classification;

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

/// The rules of one function, each defaulting to "nothing special" (every
/// error retried, no `Ok` value retried, no hint, no hook).
#[doc(hidden)]
pub struct Rules<On, OnOk, Ra, RaOk, Hook, HookOk> {
    /// Which errors may succeed on a repeat.
    pub(crate) on: On,
    /// Which `Ok` values are retried (an HTTP 503).
    pub(crate) on_ok: OnOk,
    /// The wait a server asked for, read from a retried error.
    pub(crate) retry_after: Ra,
    /// The wait a server asked for, read from a retried `Ok` value.
    pub(crate) retry_after_ok: RaOk,
    /// Called before each wait after an error.
    pub(crate) on_retry: Hook,
    /// Called before each wait after a retried `Ok` value.
    pub(crate) on_retry_ok: HookOk,
}

/// Rules that fit the outcome type `R`. The one place the bounds tying each
/// rule to `R` are written.
#[doc(hidden)]
pub trait RulesFor<R> {
    /// What the rules make of an outcome.
    fn verdict(&self, outcome: &R) -> Classification;
    /// The hook, before the wait that follows attempt `attempt`.
    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration);
}

impl<R, On, OnOk, Ra, RaOk, Hook, HookOk> RulesFor<R> for Rules<On, OnOk, Ra, RaOk, Hook, HookOk>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    #[inline]
    fn verdict(&self, outcome: &R) -> Classification {
        match outcome.as_result() {
            Ok(value) if (self.on_ok)(value) => {
                Classification::Transient((self.retry_after_ok)(value))
            }
            Ok(_) => Classification::Done,
            Err(error) if (self.on)(error) => Classification::Transient((self.retry_after)(error)),
            Err(_) => Classification::Permanent,
        }
    }

    #[inline]
    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration) {
        match outcome.as_result() {
            Ok(value) => (self.on_retry_ok)(value, attempt, wait),
            Err(error) => (self.on_retry)(error, attempt, wait),
        }
    }
}

/// Ties the rules to the function's return type `R`, so that closures such
/// as `|e| e.is_timeout()` need no annotation: the compiler infers a
/// closure's argument type only from a bound on the closure itself, so this
/// entry repeats the bounds of [`RulesFor`] for the expansion's sake. When
/// the return type is not a `Result`, or a rule does not fit it, the
/// compiler reports it here, once: the result is an opaque
/// `impl RulesFor<R>`, so the step that uses it still type-checks.
#[doc(hidden)]
#[allow(clippy::type_complexity)]
pub fn classifier<R, On, OnOk, Ra, RaOk, Hook, HookOk>(
    on: On,
    on_ok: OnOk,
    retry_after: Ra,
    retry_after_ok: RaOk,
    on_retry: Hook,
    on_retry_ok: HookOk,
) -> impl RulesFor<R>
where
    R: Outcome,
    On: Classify<R::Error>,
    OnOk: Classify<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
    Rules {
        on,
        on_ok,
        retry_after,
        retry_after_ok,
        on_retry,
        on_retry_ok,
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
