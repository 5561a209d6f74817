//! The `on_give_up` hook: told once, when a call returns an error or a
//! retried `Ok` value, why it stopped, the attempts it made and the time it
//! took. It reads how the call ended where every call records it
//! ([`crate::last_call`]), right after the loop returns, so the loop itself
//! carries nothing for it and a call without the hook reads no clock.

use core::future::Future;
use core::marker::PhantomData;

use crate::guard::{Guard, Keep};
use crate::hedge::HedgedRetry;
use crate::rules::{RuleSet, RulesFor, RulesOf};
use crate::stopped::{self, Stopped};
use crate::{Retry, Stop};

/// Called once when a call gives up: `Fn(&R, &Stopped)`, with the outcome
/// the caller gets (the error, or the retried `Ok` value) and how it
/// stopped. One bound, so that a mismatch is one error.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`on_give_up` takes a function or closure `Fn(&{R}, &Stopped)`: the outcome returned, and how the call stopped",
    label = "expected `Fn(&{R}, &retry_runtime::Stopped)`",
    note = "write `fn report(outcome: &{R}, stopped: &retry_runtime::Stopped)`, or a closure `|outcome, stopped| ...`"
)]
pub trait OnGiveUp<R>: Fn(&R, &Stopped) {}

// Not recommended: a hook of the wrong type is then reported as not being
// an `on_give_up` hook, with the message above, and not as a mismatch with
// `Fn`, which names neither the key nor the signature it needs.
#[diagnostic::do_not_recommend]
impl<R, F: Fn(&R, &Stopped)> OnGiveUp<R> for F {}

/// When a call started, on the clock its loop runs on, for the time a call
/// that gives up took; and how the call before it ended, which it puts back
/// if it is dropped before it ends (the loop reads no record of its own
/// while it runs, so that a loop that ends without recording is not taken
/// for the call before it).
#[doc(hidden)]
#[derive(Debug)]
pub struct Started {
    clock: crate::clock::Clock,
    at: crate::clock::Instant,
    /// How the call before ended ([`crate::context::last_call`]'s word), to
    /// put back on drop; `None` once the call has ended.
    before: Option<u64>,
}

impl Started {
    /// Now, for an `async` loop: tokio's clock, so that a paused test clock
    /// measures the waits it skipped.
    #[inline]
    #[must_use]
    pub fn tokio() -> Self {
        Started::on(crate::clock::Clock::Async)
    }

    /// Now, for a blocking loop: the real clock.
    #[inline]
    #[must_use]
    pub fn blocking() -> Self {
        Started::on(crate::clock::Clock::Blocking)
    }

    fn on(clock: crate::clock::Clock) -> Self {
        let before = crate::context::last_call();
        // Forgets the last call, so that a loop that ends without recording
        // (one that could not start) is not taken for the call before it.
        stopped::record(0, Stop::Done);
        Started {
            clock,
            at: clock.now(),
            before: Some(before),
        }
    }
}

/// A call dropped before it ends leaves [`crate::last_call`] as it was.
impl Drop for Started {
    fn drop(&mut self) {
        if let Some(before) = self.before {
            crate::context::set_last_call(before);
        }
    }
}

/// A tower layer's `on_give_up` hook: `()` for none, which reads no clock,
/// or [`Hooked`], what `RetryLayer::on_give_up` wraps a hook in. The
/// layer's outcome type is known only where the layer wraps a service, so
/// the hook is bound there, on it.
#[doc(hidden)]
#[cfg(feature = "tower")]
pub trait LayerGiveUp<R> {
    /// Before the call: its start, if a hook will read it (none, for `()`).
    fn start(&self) -> Option<Started> {
        None
    }
    /// After the call that returned `outcome`: the hook, if it gave up.
    fn end(&self, _started: Option<Started>, _outcome: &R) {}
}

#[cfg(feature = "tower")]
impl<R> LayerGiveUp<R> for () {}

/// A layer's `on_give_up` hook.
#[doc(hidden)]
#[cfg(feature = "tower")]
#[derive(Clone)]
pub struct Hooked<F>(pub(crate) F);

#[cfg(feature = "tower")]
impl<F> core::fmt::Debug for Hooked<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("on_give_up(..)")
    }
}

#[cfg(feature = "tower")]
impl<R, F: OnGiveUp<R>> LayerGiveUp<R> for Hooked<F> {
    fn start(&self) -> Option<Started> {
        Some(Started::tokio())
    }
    fn end(&self, started: Option<Started>, outcome: &R) {
        if let Some(started) = started {
            gave_up(&self.0, started, outcome);
        }
    }
}

/// `on_give_up = ...` as the expansion passes it: bounded on the function's
/// return type `R`, so that a closure's argument types are inferred and a
/// hook of the wrong type is one error, on the key's value. The result is
/// opaque, so that the call that uses it still type-checks then.
#[doc(hidden)]
pub fn give_up_hook<R, G: OnGiveUp<R>>(hook: G) -> impl OnGiveUp<R> {
    hook
}

/// `on_give_up = path`: asks of the type of the function a path names,
/// without binding it, whether it is a hook for the outcome `R`. A bound
/// `Fn(&R, &Stopped)` on a function of the wrong arity or arguments is an
/// E0593 or E0631 that names neither the key nor the signature it needs,
/// even on an impl marked `#[diagnostic::do_not_recommend]`; asked through
/// method resolution ([`HookFits`], or else [`HookMisfits`]), the answer is
/// a type, which [`give_up_path`] takes, with one error of its own for a
/// misfit; for a fit, that answer is the probe itself. (A closure needs
/// the `Fn` bound of [`give_up_hook`] for its arguments to be inferred; the
/// attribute checks its arity itself.)
#[doc(hidden)]
pub struct GiveUpProbe<R, G>(PhantomData<fn(&R, &G)>);

/// The probe of `hook`, for the outcome `R`.
#[doc(hidden)]
#[must_use]
pub fn give_up_probe<R, G>(_hook: &G) -> GiveUpProbe<R, G> {
    GiveUpProbe(PhantomData)
}

/// The probe's answer: not a hook of the outcome.
#[doc(hidden)]
pub struct Misfits;

/// A hook of the right type: chosen first, where its bound holds.
#[doc(hidden)]
pub trait HookFits<R, G> {
    /// The answer: the probe, for a hook of the outcome `R`.
    fn fits(&self) -> GiveUpProbe<R, G>;
}

impl<R, G: Fn(&R, &Stopped)> HookFits<R, G> for GiveUpProbe<R, G> {
    fn fits(&self) -> GiveUpProbe<R, G> {
        GiveUpProbe(PhantomData)
    }
}

/// Anything else, through one more reference.
#[doc(hidden)]
pub trait HookMisfits<R, G> {
    /// The answer.
    fn fits(&self) -> Misfits;
}

impl<R, G> HookMisfits<R, G> for &GiveUpProbe<R, G> {
    fn fits(&self) -> Misfits {
        Misfits
    }
}

/// The probe's answer for a hook: implemented for the probe alone (what
/// [`HookFits`] answers), so that a misfit is this one error, on the key's
/// value.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`on_give_up` takes a function `Fn(&{R}, &Stopped)`: the outcome returned, and how the call stopped",
    label = "expected `fn(&{R}, &retry_runtime::Stopped)`",
    note = "write `fn report(outcome: &{R}, stopped: &retry_runtime::Stopped)`, or a closure `|outcome, stopped| ...`"
)]
pub trait GiveUpAnswer<R, G> {
    /// The hook itself.
    type Hook: OnGiveUp<R>;
    /// `hook`, as the loop calls it.
    fn hook(self, hook: G) -> Self::Hook;
}

#[diagnostic::do_not_recommend]
impl<R, G: OnGiveUp<R>> GiveUpAnswer<R, G> for GiveUpProbe<R, G> {
    type Hook = G;
    fn hook(self, hook: G) -> G {
        hook
    }
}

/// `on_give_up = path`, with the probe's answer: see [`GiveUpProbe`]. The
/// hook first, so that the answer is judged with the hook's type known
/// (and a misfit reported once).
#[doc(hidden)]
pub fn give_up_path<R, G>(hook: G, answer: impl GiveUpAnswer<R, G>) -> impl OnGiveUp<R> {
    answer.hook(hook)
}

/// Calls `hook` if the call that just returned `outcome` on this thread,
/// started at `started`, gave up: returned an error, or a retried `Ok`
/// value. What the expansion calls for the key, right after the loop.
#[doc(hidden)]
pub fn gave_up<R, H: OnGiveUp<R>>(hook: &H, mut started: Started, outcome: &R) {
    started.before = None;
    if let Some(ended) = stopped::last_call().filter(|ended| ended.reason() != Stop::Done) {
        report(hook, &started, outcome, ended);
    }
}

#[cold]
#[inline(never)]
fn report<R, H: OnGiveUp<R>>(hook: &H, started: &Started, outcome: &R, ended: Stopped) {
    let elapsed = started.clock.since(started.at);
    let stopped = Stopped::new(ended.reason(), ended.attempts(), Some(elapsed));
    hook(outcome, &stopped);
}

/// A closure loop with an `on_give_up` hook: made by [`Retry::on_give_up`],
/// run with [`run`](Self::run) or [`run_blocking`](Self::run_blocking).
#[must_use = "a retry loop does nothing until `.run(...)` is awaited"]
pub struct WithGiveUp<L, G> {
    pub(crate) retry: L,
    pub(crate) hook: G,
}

impl<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br, G>
    WithGiveUp<Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br>, G>
where
    RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk>: RulesOf<T, E>,
    Br: Guard<'p, E> + Keep<T, E>,
    G: OnGiveUp<Result<T, E>>,
{
    /// [`Retry::run`], then the hook if the call gave up.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub async fn run<F, Fut>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let started = Started::tokio();
        let outcome = self.retry.run(attempt).await;
        gave_up(&self.hook, started, &outcome);
        outcome
    }

    /// [`Retry::run_blocking`], then the hook if the call gave up.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub fn run_blocking<F>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
    {
        let started = Started::blocking();
        let outcome = self.retry.run_blocking(attempt);
        gave_up(&self.hook, started, &outcome);
        outcome
    }
}

impl<'p, T, E, Rules> HedgedRetry<'p, T, E, Rules> {
    /// Calls `on_give_up` once when the hedged call returns an error, or an
    /// `Ok` value `on_ok` retried, as [`Retry::on_give_up`] does.
    pub fn on_give_up<G>(self, on_give_up: G) -> WithGiveUp<Self, G>
    where
        G: OnGiveUp<Result<T, E>>,
    {
        WithGiveUp {
            retry: self,
            hook: on_give_up,
        }
    }
}

impl<'p, T, E, Rules, G> WithGiveUp<HedgedRetry<'p, T, E, Rules>, G>
where
    Rules: RulesFor<Result<T, E>>,
    G: OnGiveUp<Result<T, E>>,
{
    /// [`HedgedRetry::run`], then the hook if the call gave up.
    ///
    /// # Errors
    ///
    /// An error `on` rejects, or the last failure to arrive, unchanged.
    pub async fn run<F, Fut>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let started = Started::tokio();
        let outcome = self.retry.run(attempt).await;
        gave_up(&self.hook, started, &outcome);
        outcome
    }
}
