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

    fn as_result(&self) -> Result<&T, &E> {
        self.as_ref()
    }

    fn from_error(error: E) -> Self {
        Err(error)
    }
}

/// Which errors (or `Ok` values) to retry: `Fn(&X) -> bool`. One bound, so
/// that a mismatch is one error. (Not `tower::Classify`, which judges a
/// request's whole outcome.)
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{X}` and returns `bool`",
    label = "expected `Fn(&{X}) -> bool`"
)]
pub trait RetryIf<X>: Fn(&X) -> bool {}

impl<X, F: Fn(&X) -> bool> RetryIf<X> for F {}

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
    On: RetryIf<R::Error>,
    OnOk: RetryIf<R::Ok>,
    Ra: Hint<R::Error>,
    RaOk: Hint<R::Ok>,
    Hook: OnRetry<R::Error>,
    HookOk: OnRetry<R::Ok>,
{
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

    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration) {
        match outcome.as_result() {
            Ok(value) => (self.on_retry_ok)(value, attempt, wait),
            Err(error) => (self.on_retry)(error, attempt, wait),
        }
    }
}

/// The rules of one retried function, built key by key from its return type
/// `R`, each rule named by its key:
///
/// ```text
/// let rules = rules::<R>();
/// let rules = RuleSet::on(rules, is_transient);
/// let rules = RuleSet::retry_after(rules, |e| e.retry_after());
/// ```
///
/// A key the attribute does not write keeps its default (every error
/// retried, no `Ok` value retried, no hint, no hook). When `R` is not a
/// `Result`, the compiler reports that once, here.
#[doc(hidden)]
#[must_use]
pub fn rules<R: Outcome>() -> RuleSet<R::Ok, R::Error, (), (), (), (), (), ()> {
    RuleSet {
        on: Rule::new((), |(), _| true),
        on_ok: Rule::new((), |(), _| false),
        retry_after: Rule::new((), |(), _| None),
        retry_after_ok: Rule::new((), |(), _| None),
        on_retry: Rule::new((), |(), _, _, _| ()),
        on_retry_ok: Rule::new((), |(), _, _, _| ()),
    }
}

/// A rule, and how to call it: a function made where the rule's bound was
/// checked, so that calling it asks nothing more of the rule's type. A rule
/// of the wrong type is then one error, where it is set, and not again
/// wherever the rules are used.
#[doc(hidden)]
pub struct Rule<F, Call> {
    rule: F,
    call: Call,
}

impl<F, Call> Rule<F, Call> {
    const fn new(rule: F, call: Call) -> Self {
        Rule { rule, call }
    }
}

/// The rules of a function that succeeds with `T` and fails with `E`, as
/// [`rules`] builds them.
#[doc(hidden)]
#[allow(clippy::type_complexity)]
pub struct RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> {
    on: Rule<On, fn(&On, &E) -> bool>,
    on_ok: Rule<OnOk, fn(&OnOk, &T) -> bool>,
    retry_after: Rule<Ra, fn(&Ra, &E) -> Option<Duration>>,
    retry_after_ok: Rule<RaOk, fn(&RaOk, &T) -> Option<Duration>>,
    on_retry: Rule<Hook, fn(&Hook, &E, u32, Duration)>,
    on_retry_ok: Rule<HookOk, fn(&HookOk, &T, u32, Duration)>,
}

/// Sets one rule of a [`RuleSet`], keeping the others.
macro_rules! set_rule {
    ($self:ident, $field:ident: $rule:expr; $($keep:ident),*) => {
        RuleSet { $field: $rule, $($keep: $self.$keep),* }
    };
}

/// Each method bounds its rule by the error or value type, so that a closure
/// such as `|e| e.is_timeout()` needs no annotation (the compiler infers a
/// closure's argument type from a bound on the closure itself), and a rule
/// of the wrong type is one error, on that rule.
#[allow(clippy::type_complexity)]
impl<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk> {
    /// `on`: which errors may succeed on a repeat.
    pub fn on<F: RetryIf<E>>(self, on: F) -> RuleSet<T, E, F, OnOk, Ra, RaOk, Hook, HookOk> {
        let on: Rule<F, fn(&F, &E) -> bool> = Rule::new(on, |on, error| on(error));
        set_rule!(self, on: on; on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok)
    }

    /// `on_ok`: which `Ok` values are retried (an HTTP 503).
    pub fn on_ok<F: RetryIf<T>>(self, on_ok: F) -> RuleSet<T, E, On, F, Ra, RaOk, Hook, HookOk> {
        let on_ok: Rule<F, fn(&F, &T) -> bool> = Rule::new(on_ok, |on_ok, value| on_ok(value));
        set_rule!(self, on_ok: on_ok; on, retry_after, retry_after_ok, on_retry, on_retry_ok)
    }

    /// `retry_after`: the wait a server asked for, read from an error.
    pub fn retry_after<F: Hint<E>>(
        self,
        retry_after: F,
    ) -> RuleSet<T, E, On, OnOk, F, RaOk, Hook, HookOk> {
        let retry_after: Rule<F, fn(&F, &E) -> Option<Duration>> =
            Rule::new(retry_after, |hint, error| hint(error));
        set_rule!(self, retry_after: retry_after; on, on_ok, retry_after_ok, on_retry, on_retry_ok)
    }

    /// `retry_after_ok`: the wait a server asked for, read from an `Ok` value.
    pub fn retry_after_ok<F: Hint<T>>(
        self,
        retry_after_ok: F,
    ) -> RuleSet<T, E, On, OnOk, Ra, F, Hook, HookOk> {
        let retry_after_ok: Rule<F, fn(&F, &T) -> Option<Duration>> =
            Rule::new(retry_after_ok, |hint, value| hint(value));
        set_rule!(self, retry_after_ok: retry_after_ok; on, on_ok, retry_after, on_retry, on_retry_ok)
    }

    /// `on_retry`: called before each wait that follows an error.
    pub fn on_retry<F: OnRetry<E>>(
        self,
        on_retry: F,
    ) -> RuleSet<T, E, On, OnOk, Ra, RaOk, F, HookOk> {
        let on_retry: Rule<F, fn(&F, &E, u32, Duration)> =
            Rule::new(on_retry, |hook, error, attempt, wait| {
                hook(error, attempt, wait);
            });
        set_rule!(self, on_retry: on_retry; on, on_ok, retry_after, retry_after_ok, on_retry_ok)
    }

    /// `on_retry_ok`: called before each wait that follows a retried `Ok`
    /// value.
    pub fn on_retry_ok<F: OnRetry<T>>(
        self,
        on_retry_ok: F,
    ) -> RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, F> {
        let on_retry_ok: Rule<F, fn(&F, &T, u32, Duration)> =
            Rule::new(on_retry_ok, |hook, value, attempt, wait| {
                hook(value, attempt, wait);
            });
        set_rule!(self, on_retry_ok: on_retry_ok; on, on_ok, retry_after, retry_after_ok, on_retry)
    }
}

impl<R, On, OnOk, Ra, RaOk, Hook, HookOk> RulesFor<R>
    for RuleSet<R::Ok, R::Error, On, OnOk, Ra, RaOk, Hook, HookOk>
where
    R: Outcome,
{
    fn verdict(&self, outcome: &R) -> Classification {
        let RuleSet {
            on,
            on_ok,
            retry_after,
            retry_after_ok,
            ..
        } = self;
        match outcome.as_result() {
            Ok(value) if (on_ok.call)(&on_ok.rule, value) => {
                Classification::Transient((retry_after_ok.call)(&retry_after_ok.rule, value))
            }
            Ok(_) => Classification::Done,
            Err(error) if (on.call)(&on.rule, error) => {
                Classification::Transient((retry_after.call)(&retry_after.rule, error))
            }
            Err(_) => Classification::Permanent,
        }
    }

    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration) {
        let RuleSet {
            on_retry,
            on_retry_ok,
            ..
        } = self;
        match outcome.as_result() {
            Ok(value) => (on_retry_ok.call)(&on_retry_ok.rule, value, attempt, wait),
            Err(error) => (on_retry.call)(&on_retry.rule, error, attempt, wait),
        }
    }
}

/// The classifier of `on` when none is given: every error is retried.
#[doc(hidden)]
pub fn every_error<E>(_: &E) -> bool {
    true
}

/// The classifier of `on_ok` when none is given: no `Ok` value is retried.
#[doc(hidden)]
pub fn no_value<T>(_: &T) -> bool {
    false
}

/// `retry_after` when none is given.
#[doc(hidden)]
pub fn no_hint<T>(_: &T) -> Option<Duration> {
    None
}

/// `on_retry` and `on_retry_ok` when none is given.
#[doc(hidden)]
pub fn no_hook<X>(_: &X, _: u32, _: Duration) {}
