//! The rules of one retried function (`on`, `on_ok`, `retry_after`,
//! `retry_after_ok`, `on_retry`, `on_retry_ok`) tied to its return type:
//! they judge an attempt's outcome and return a verdict, which the attempt
//! loop ([`crate::attempts`]) applies.

use core::marker::PhantomData;
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

/// What `on` and `on_ok` are, `Fn(&X) -> bool` (which errors, or `Ok`
/// values, to retry), and `retry_after` and `retry_after_ok`, `Fn(&X) ->
/// Option<Duration>` (the wait a server asked for). One bound, so that a
/// mismatch is one error. (Not `tower::Classify`, which judges a request's
/// whole outcome.)
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure that takes `&{X}` and returns `{O}`",
    label = "expected `Fn(&{X}) -> {O}`"
)]
pub trait RuleFn<X, O>: Fn(&X) -> O {}

impl<X, O, F: Fn(&X) -> O> RuleFn<X, O> for F {}

/// Called before each wait: `Fn(&E, u32, Duration)`, or `Fn(&T, u32,
/// Duration)` for retried `Ok` values.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "expected a function or closure taking `&{X}`, the attempt number (`u32`) and the wait (`Duration`)",
    label = "expected `Fn(&{X}, u32, Duration)`"
)]
pub trait OnRetry<X>: Fn(&X, u32, Duration) {}

impl<X, F: Fn(&X, u32, Duration)> OnRetry<X> for F {}

/// Rules that fit the outcome type `R`. The one place the bounds tying each
/// rule to `R` are written.
#[doc(hidden)]
pub trait RulesFor<R> {
    /// What the rules make of an outcome.
    fn verdict(&self, outcome: &R) -> Classification;
    /// The hook, before the wait that follows attempt `attempt`: none
    /// unless the rules have one.
    fn before_wait(&self, _outcome: &R, _attempt: u32, _wait: Duration) {}
}

/// Hands the event about to be emitted the class of error `failure` failed
/// with, for OpenTelemetry's `error.type`: the error's type name, none for a
/// retried `Ok` value. Set just before the event, so that no other call's
/// event, interleaved on the thread while this call waits, can take it.
#[inline]
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn failed_with<R: Outcome>(failure: &R) {
    #[cfg(feature = "tracing")]
    if failure.as_result().is_err() {
        crate::observe::error_type::set(core::any::type_name::<R::Error>());
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
#[allow(clippy::type_complexity)]
// Named by the expansion as `rules::<<Ret as Outcome>::Ok, <Ret as
// Outcome>::Error>()`, the projections located at the return type: without
// a bound of its own on `Ret`, which its opaque types would carry to every
// rule the keys add, `Ret: Outcome` is reported there alone.
pub fn rules<T, E>() -> RuleSet<
    T,
    E,
    impl Reads<E, bool>,
    impl Reads<T, bool>,
    impl Reads<E, Option<Duration>>,
    impl Reads<T, Option<Duration>>,
    impl Hook<E>,
    impl Hook<T>,
> {
    RuleSet {
        on: Rule::new((), |_: &(), _: &E| true),
        on_ok: Rule::new((), |_: &(), _: &T| false),
        retry_after: Rule::new((), |_: &(), _: &E| None),
        retry_after_ok: Rule::new((), |_: &(), _: &T| None),
        on_retry: Rule::new((), |_: &(), _: &E, _, _| ()),
        on_retry_ok: Rule::new((), |_: &(), _: &T, _, _| ()),
        types: PhantomData,
    }
}

/// A rule, and how to call it: a function pointer (or, for a default, a
/// closure that captures nothing) made where the rule's bound was checked,
/// so that calling it asks nothing more of the rule's type. A rule of the
/// wrong type is then one error, where it is set, and not again wherever
/// the rules are used.
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

/// `on`, `on_ok` (`O` is `bool`), `retry_after` or `retry_after_ok` (`O`
/// is `Option<Duration>`), as a [`RuleSet`] holds it: what it reads from an
/// error or an `Ok` value.
#[doc(hidden)]
pub trait Reads<X, O> {
    fn read(&self, x: &X) -> O;
}

impl<X, O, F, Call: Fn(&F, &X) -> O> Reads<X, O> for Rule<F, Call> {
    #[inline]
    fn read(&self, x: &X) -> O {
        (self.call)(&self.rule, x)
    }
}

/// A rule as the closure API holds it: the function itself. Not hinted
/// `#[inline]` (nor the hook's twin below): the closure API's success path
/// is 13 instructions shorter without (benches/instructions.sh, 231 -> 218).
impl<X, O, F: Fn(&X) -> O> Reads<X, O> for F {
    fn read(&self, x: &X) -> O {
        self(x)
    }
}

/// `on_retry` or `on_retry_ok`, as a [`RuleSet`] holds it.
#[doc(hidden)]
pub trait Hook<X> {
    fn call(&self, x: &X, attempt: u32, wait: Duration);
}

impl<X, F, Call: Fn(&F, &X, u32, Duration)> Hook<X> for Rule<F, Call> {
    #[inline]
    fn call(&self, x: &X, attempt: u32, wait: Duration) {
        (self.call)(&self.rule, x, attempt, wait);
    }
}

impl<X, F: Fn(&X, u32, Duration)> Hook<X> for F {
    fn call(&self, x: &X, attempt: u32, wait: Duration) {
        self(x, attempt, wait);
    }
}

/// The rules of a function that succeeds with `T` and fails with `E`, as
/// [`rules`] builds them (each a [`Rule`]), or as the closure API's
/// [`Retry`](crate::Retry) holds them (each the function itself).
#[doc(hidden)]
pub struct RuleSet<T, E, On, OnOk, Ra, RaOk, HookE, HookOk> {
    /// Which errors may succeed on a repeat.
    pub(crate) on: On,
    /// Which `Ok` values are retried (an HTTP 503).
    pub(crate) on_ok: OnOk,
    /// The wait a server asked for, read from a retried error.
    pub(crate) retry_after: Ra,
    /// The wait a server asked for, read from a retried `Ok` value.
    pub(crate) retry_after_ok: RaOk,
    /// Called before each wait after an error.
    pub(crate) on_retry: HookE,
    /// Called before each wait after a retried `Ok` value.
    pub(crate) on_retry_ok: HookOk,
    pub(crate) types: PhantomData<fn(&T, &E)>,
}

/// The setters of a [`RuleSet`]'s rules (see below): each gives `self` with
/// the rule of its name set to its argument, of a type `F` with the bound
/// in brackets after the name, called through the function pointer after
/// `=`, as the `RuleSet` of the rule types after `=>`, the rules listed
/// after `keep` kept. The struct expression names every rule once, so the
/// compiler checks that none is lost or doubled. The bound's tokens are
/// kept as written, so that a rule of the wrong type is reported on the
/// bound in the table, as it was on a setter written out, and not inside
/// the macro.
macro_rules! rule_setters {
    ($(
        $(#[doc = $doc:literal])*
        $rule:ident: [$($bound:tt)+] = $call:expr => $($types:ty),+; keep $($keep:ident),+;
    )+) => {$(
        $(#[doc = $doc])*
        #[inline(always)]
        pub fn $rule<F: $($bound)+>(self, $rule: F) -> RuleSet<T, E, $($types),+> {
            RuleSet { $rule: Rule::new($rule, $call), $($keep: self.$keep,)+ types: PhantomData }
        }
    )+};
}

/// Each method bounds its rule by the error or value type, so that a closure
/// such as `|e| e.is_timeout()` needs no annotation (the compiler infers a
/// closure's argument type from a bound on the closure itself), and a rule
/// of the wrong type is one error, on that rule. Each rule's call is a
/// function pointer, made where the bound holds, rather than a closure of
/// its own type: an opaque closure type would carry the rule's bound to
/// every place the rules are used, and the error with it, however many
/// rules are written.
///
/// Each is inlined where the rules are built, so that the function pointer
/// it stores is a known constant where it is called: left to the compiler,
/// with `breaker` written it was not, which cost the success path 15
/// instructions (benches/instructions.sh, attribute-breaker 252.9, 237.9
/// inlined, as with the closures the rules held before).
#[allow(clippy::type_complexity)]
impl<T, E, On, OnOk, Ra, RaOk, HookE, HookOk> RuleSet<T, E, On, OnOk, Ra, RaOk, HookE, HookOk> {
    rule_setters! {
        /// `on`: which errors may succeed on a repeat.
        on: [RuleFn<E, bool>] = |on, error| on(error)
            => Rule<F, fn(&F, &E) -> bool>, OnOk, Ra, RaOk, HookE, HookOk;
            keep on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok;
        /// `on_ok`: which `Ok` values are retried (an HTTP 503).
        on_ok: [RuleFn<T, bool>] = |on_ok, value| on_ok(value)
            => On, Rule<F, fn(&F, &T) -> bool>, Ra, RaOk, HookE, HookOk;
            keep on, retry_after, retry_after_ok, on_retry, on_retry_ok;
        /// `retry_after`: the wait a server asked for, read from an error.
        retry_after: [RuleFn<E, Option<Duration>>] = |hint, error| hint(error)
            => On, OnOk, Rule<F, fn(&F, &E) -> Option<Duration>>, RaOk, HookE, HookOk;
            keep on, on_ok, retry_after_ok, on_retry, on_retry_ok;
        /// `retry_after_ok`: the wait a server asked for, read from an `Ok` value.
        retry_after_ok: [RuleFn<T, Option<Duration>>] = |hint, value| hint(value)
            => On, OnOk, Ra, Rule<F, fn(&F, &T) -> Option<Duration>>, HookE, HookOk;
            keep on, on_ok, retry_after, on_retry, on_retry_ok;
        /// `on_retry`: called before each wait that follows an error.
        on_retry: [OnRetry<E>] = |hook, error, attempt, wait| hook(error, attempt, wait)
            => On, OnOk, Ra, RaOk, Rule<F, fn(&F, &E, u32, Duration)>, HookOk;
            keep on, on_ok, retry_after, retry_after_ok, on_retry_ok;
        /// `on_retry_ok`: called before each wait that follows a retried `Ok`
        /// value.
        on_retry_ok: [OnRetry<T>] = |hook, value, attempt, wait| hook(value, attempt, wait)
            => On, OnOk, Ra, RaOk, HookE, Rule<F, fn(&F, &T, u32, Duration)>;
            keep on, on_ok, retry_after, retry_after_ok, on_retry;
    }
}

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
    On: Reads<E, bool>,
    OnOk: Reads<T, bool>,
    Ra: Reads<E, Option<Duration>>,
    RaOk: Reads<T, Option<Duration>>,
    HookE: Hook<E>,
    HookOk: Hook<T>,
{
    #[inline]
    fn verdict_of<R: Outcome<Ok = T, Error = E>>(&self, outcome: &R) -> Classification {
        crate::context::judging();
        match outcome.as_result() {
            Ok(value) if self.on_ok.read(value) => {
                Classification::Transient(self.retry_after_ok.read(value))
            }
            Ok(_) => Classification::Done,
            Err(error) if self.on.read(error) => {
                Classification::Transient(self.retry_after.read(error))
            }
            Err(_) => Classification::Permanent,
        }
    }

    #[inline]
    fn before_wait_of<R: Outcome<Ok = T, Error = E>>(
        &self,
        outcome: &R,
        attempt: u32,
        wait: Duration,
    ) {
        match outcome.as_result() {
            Ok(value) => self.on_retry_ok.call(value, attempt, wait),
            Err(error) => self.on_retry.call(error, attempt, wait),
        }
    }
}

/// The rules of a [`RuleSet`], as the hedged call takes them.
impl<R, On, OnOk, Ra, RaOk, HookE, HookOk> RulesFor<R>
    for RuleSet<R::Ok, R::Error, On, OnOk, Ra, RaOk, HookE, HookOk>
where
    R: Outcome,
    Self: RulesOf<R::Ok, R::Error>,
{
    fn verdict(&self, outcome: &R) -> Classification {
        self.verdict_of(outcome)
    }

    fn before_wait(&self, outcome: &R, attempt: u32, wait: Duration) {
        self.before_wait_of(outcome, attempt, wait);
    }
}
