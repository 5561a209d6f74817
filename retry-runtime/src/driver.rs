//! The retry loop without the macro: a policy built at run time over a
//! closure. It drives the same [`Attempts`] and rules as the `#[retry]`
//! expansion.

use core::future::Future;
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::time::Duration;

mod policies;

use crate::attempts::Attempts;
use crate::breaker::CircuitPermit;
use crate::clock::{sleep_blocking, Clock};
use crate::give_up::{OnGiveUp, WithGiveUp};
use crate::guard::{Guard, Guarded, Keep, Unguarded};
use crate::observe::Name;
use crate::policy::Params;
use crate::rules::{RuleSet, RulesOf};
use crate::timeout::Limit;
use crate::{CircuitBreaker, CircuitOpen, RetryBudget};

/// A retry loop over a closure, for policies built at run time.
///
/// Any error type will do under a [`Policy`](crate::Policy), which has no
/// per-attempt timeout; under a `Policy<TimedOut>` the error type converts
/// from [`TimedOut`](crate::TimedOut) or the loop is made with
/// [`Policy::timed_out`](crate::Policy::timed_out).
///
/// Made by [`Policy::on`](crate::Policy::on) or
/// [`Policy::retrying`](crate::Policy::retrying);
/// [`Policy::retry`](crate::Policy::retry) runs it with every error retried.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::Policy;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = Policy::new().with_max_attempts(5).with_base(Duration::from_millis(50));
/// let mut calls = 0;
/// let result: std::io::Result<u32> = policy
///     .on(|error: &std::io::Error| error.kind() == std::io::ErrorKind::Interrupted)
///     .run(|| {
///         calls += 1;
///         let outcome = if calls < 3 { Err(std::io::ErrorKind::Interrupted.into()) } else { Ok(calls) };
///         async move { outcome }
///     })
///     .await;
/// assert_eq!(result.unwrap(), 3);
/// # }
/// ```
#[must_use = "a `Retry` does nothing until `.run(...)` is awaited"]
pub struct Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br = Unguarded> {
    policy: &'p Params,
    budget: Option<&'p RetryBudget>,
    /// The breaker, with the conversion of its refusal into `E`: a type of
    /// its own ([`Guarded`]) once [`breaker`](Retry::breaker) is set, so
    /// that a loop without one keeps no outcome through its waits.
    breaker: Br,
    rules: RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk>,
    /// How an attempt cut off by the policy's timeout fails; never, under a
    /// [`Policy`](crate::Policy) without `<TimedOut>`, so that the error type
    /// needs no `From<TimedOut>`.
    limit: Limit<E>,
    /// The loop's name in events and metrics ([`named`](Retry::named)).
    name: Name,
}

/// A [`Retry`] with only `on` set, by default to retry every error: no `Ok`
/// value is retried, no server hint is read, no hook is called.
pub type DefaultRetry<'p, T, E, On = fn(&E) -> bool> = Retry<
    'p,
    T,
    E,
    On,
    fn(&T) -> bool,
    fn(&E) -> Option<Duration>,
    fn(&T) -> Option<Duration>,
    fn(&E, u32, Duration),
    fn(&T, u32, Duration),
>;

/// The setters of the rules: each gives `self` with the rule of its name
/// set to its argument, of a type `F` with the bound in brackets after the
/// name, as the `Retry` of the rule types after `=>`, the rules listed
/// after `keep` kept. The struct expression names every rule once, so the
/// compiler checks that none is lost or doubled. The bound's tokens are
/// kept as written, so that a rule of the wrong type is reported on the
/// bound in the table, not inside the macro.
macro_rules! rule_setters {
    ($(
        $(#[doc = $doc:literal])*
        $rule:ident: [$($bound:tt)+] => $($types:ident),+; keep $($keep:ident),+;
    )+) => {$(
        $(#[doc = $doc])*
        pub fn $rule<F: $($bound)+>(self, $rule: F) -> Retry<'p, T, E, $($types),+, Br> {
            Retry {
                policy: self.policy,
                budget: self.budget,
                breaker: self.breaker,
                rules: RuleSet { $rule, $($keep: self.rules.$keep,)+ types: PhantomData },
                limit: self.limit,
                name: self.name,
            }
        }
    )+};
}

impl<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br>
    Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br>
{
    rule_setters! {
        /// Retries only the errors `on` accepts.
        on: [Fn(&E) -> bool] => F, OnOk, Ra, RaOk, Hook, HookOk;
            keep on_ok, retry_after, retry_after_ok, on_retry, on_retry_ok;
        /// Also retries the `Ok` values `on_ok` accepts, such as an HTTP
        /// response with status 503. When no retry is left, the caller gets the
        /// last such value as it came.
        on_ok: [Fn(&T) -> bool] => On, F, Ra, RaOk, Hook, HookOk;
            keep on, retry_after, retry_after_ok, on_retry, on_retry_ok;
        /// Reads the wait a server asked for from a retried error.
        retry_after: [Fn(&E) -> Option<Duration>] => On, OnOk, F, RaOk, Hook, HookOk;
            keep on, on_ok, retry_after_ok, on_retry, on_retry_ok;
        /// Reads the wait a server asked for from a retried `Ok` value.
        retry_after_ok: [Fn(&T) -> Option<Duration>] => On, OnOk, Ra, F, Hook, HookOk;
            keep on, on_ok, retry_after, on_retry, on_retry_ok;
        /// Calls `on_retry` before each wait after an error, with the error, the
        /// number of the attempt that failed, and the wait.
        on_retry: [Fn(&E, u32, Duration)] => On, OnOk, Ra, RaOk, F, HookOk;
            keep on, on_ok, retry_after, retry_after_ok, on_retry_ok;
        /// Calls `on_retry_ok` before each wait after an `Ok` value `on_ok`
        /// retries, with the value, the attempt number, and the wait.
        on_retry_ok: [Fn(&T, u32, Duration)] => On, OnOk, Ra, RaOk, Hook, F;
            keep on, on_ok, retry_after, retry_after_ok, on_retry;
    }

    /// Names the loop in `tracing` events and metrics (the `function`
    /// label and `code.function.name`), as a retried function's path names
    /// it; `"closure"` unless named.
    ///
    /// ```
    /// use retry_runtime::Policy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let policy = Policy::new().with_max_attempts(3);
    /// let answer = policy
    ///     .retrying()
    ///     .named("inventory::reserve")
    ///     .run(|| async { Ok::<_, std::io::Error>(7) })
    ///     .await;
    /// assert_eq!(answer.unwrap(), 7);
    /// # }
    /// ```
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = Name::new(name);
        self
    }

    /// Draws retries from a shared budget.
    pub fn budget(mut self, budget: &'p RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Asks a shared circuit breaker before every attempt: a refused call
    /// fails with `E::from(CircuitOpen)` and is not retried. For an error
    /// type without that `From` (`tonic::Status`), use
    /// [`breaker_with`](Self::breaker_with).
    ///
    /// The loop then keeps a retried outcome through the wait, to return it
    /// should the breaker refuse the retry, so the error type must be `Send`
    /// for the future to be; without a breaker it need not.
    pub fn breaker(
        self,
        breaker: &'p CircuitBreaker,
    ) -> Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Guarded<'p, E>>
    where
        E: crate::__private::OpenBreaker,
    {
        self.breaker_with(breaker, E::from)
    }

    /// Asks a shared circuit breaker before every attempt, for an error type
    /// that cannot implement `From<CircuitOpen>` (`tonic::Status`): a refused
    /// call fails with `circuit_open(CircuitOpen)` and is not retried. The
    /// attribute's `circuit_open = ...` key, as a builder call.
    ///
    /// ```
    /// use retry_runtime::{CircuitBreaker, Policy};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Status(&'static str); // a foreign type: no `From<CircuitOpen>`
    ///
    /// static PAYMENTS: CircuitBreaker = CircuitBreaker::new();
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// PAYMENTS.force_open();
    /// let policy = Policy::new().with_max_attempts(3);
    /// let result: Result<(), Status> = policy
    ///     .retrying()
    ///     .breaker_with(&PAYMENTS, |_| Status("circuit open"))
    ///     .run(|| async { Err(Status("the body ran")) })
    ///     .await;
    /// assert_eq!(result, Err(Status("circuit open")));
    /// # }
    /// ```
    pub fn breaker_with(
        self,
        breaker: &'p CircuitBreaker,
        circuit_open: fn(CircuitOpen) -> E,
    ) -> Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Guarded<'p, E>> {
        Retry {
            policy: self.policy,
            budget: self.budget,
            breaker: Guarded::new(breaker, circuit_open),
            rules: self.rules,
            limit: self.limit,
            name: self.name,
        }
    }

    /// Calls `on_give_up` once when the call returns an error, or an `Ok`
    /// value `on_ok` retried, with what the caller gets and how the call
    /// stopped: the reason, the attempts made and the time taken. Not
    /// called for a success. Set it last, after the other rules: what it
    /// returns has only [`run`](Retry::run) and
    /// [`run_blocking`](Retry::run_blocking) (a hedged call's, only `run`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{Policy, Stop};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let policy = Policy::new().with_max_attempts(3).with_base(Duration::from_millis(100));
    /// let result: std::io::Result<()> = policy
    ///     .retrying()
    ///     .on_give_up(|result: &std::io::Result<()>, stopped| {
    ///         // "stopped: exhausted after 3 attempts in ...ms: connection reset"
    ///         eprintln!("stopped: {stopped}: {}", result.as_ref().unwrap_err());
    ///         assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Exhausted, 3));
    ///     })
    ///     .run(|| async { Err(std::io::ErrorKind::ConnectionReset.into()) })
    ///     .await;
    /// assert!(result.is_err());
    /// # }
    /// ```
    pub fn on_give_up<G>(self, on_give_up: G) -> WithGiveUp<Self, G>
    where
        G: OnGiveUp<Result<T, E>>,
    {
        WithGiveUp {
            retry: self,
            hook: on_give_up,
        }
    }

    /// Runs hedged attempts instead of one at a time: see [`crate::hedge`].
    /// What it returns is run with `.run(..)` (async only: the attempts run
    /// at the same time), after an optional `.on_give_up(..)`, as a
    /// [`Retry`] is.
    #[allow(clippy::type_complexity)]
    pub fn hedge(
        self,
        hedge: crate::hedge::Hedge,
    ) -> crate::hedge::HedgedRetry<'p, T, E, RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk>>
    where
        Br: Guard<'p, E>,
    {
        crate::hedge::HedgedRetry {
            setup: crate::hedge::private::Setup {
                policy: self.policy,
                hedge,
                budget: self.budget,
                breaker: self.breaker.parts(),
                limit: self.limit,
                name: self.name.get(),
            },
            rules: self.rules,
        }
    }
}

/// Running the loop, once the rules are set.
impl<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br>
    Retry<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br>
where
    RuleSet<T, E, On, OnOk, Ra, RaOk, Hook, HookOk>: RulesOf<T, E>,
    Br: Guard<'p, E> + Keep<T, E>,
{
    /// Runs `attempt` until it succeeds, fails with an error `on` rejects, or
    /// the policy runs out of attempts, budget or time. Each wait is made on
    /// the timer of wherever the loop runs: `tokio::time::sleep` inside a
    /// tokio runtime, a timer that needs no runtime under any other executor
    /// (see `docs/runtimes.md` in the repository); dropping the future stops
    /// the loop.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    // Not an `async fn`: its arguments would stay in the future beside the
    // state made from them (the rules twice); the block below holds `self`
    // and uses its parts in place (`benches --bench footprint`). The call's
    // state is still made on the first poll, where the deadline starts.
    #[allow(clippy::manual_async_fn)]
    pub fn run<F, Fut>(
        self,
        mut attempt: F,
    ) -> impl Future<Output = Result<T, E>> + use<'p, T, E, On, OnOk, Ra, RaOk, Hook, HookOk, Br, F, Fut>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        async move {
            let mut attempts = self.attempts(Clock::Async);
            // With a breaker, a retried outcome is kept through the wait:
            // should the breaker refuse the retry, the caller gets that error
            // back. Without one, `kept` is `()` and the outcome is dropped
            // before the wait, so that an error type that is not `Send` does
            // not make this future `!Send`.
            let mut kept = Br::Kept::default();
            loop {
                let wait = {
                    // Tested before the attempt rather than matched on, so
                    // that no refusal is kept across the attempt's await.
                    let outcome = if attempts.acquire() {
                        // The closure runs with the attempt's context set, as
                        // the body of a retried function does. The attempt's
                        // future and its time limit are made in a block of
                        // their own, so that the locals moved into the scoped
                        // attempt take no room of their own across the await.
                        {
                            let future = attempts.make(&mut attempt);
                            let timeout = attempts.attempt_timeout();
                            attempts.scoped(self.limit.attempt_result(timeout, future))
                        }
                        .await
                    } else if let Some(outcome) = self.breaker.refused(&mut kept) {
                        outcome
                    } else {
                        // Without a breaker every attempt is made: not
                        // reached.
                        continue;
                    };
                    match attempts.step(&self.rules, &outcome) {
                        ControlFlow::Break(()) => return outcome,
                        ControlFlow::Continue(wait) => {
                            Br::keep(&mut kept, outcome);
                            wait
                        }
                    }
                };
                attempts.waiting();
                crate::sleep::sleep(wait).await;
            }
        }
    }

    /// Runs a blocking `attempt` on this thread under the same rules, with
    /// `std::thread::sleep` between attempts and the deadline on the real
    /// clock. A blocking call cannot be interrupted: an attempt that returns
    /// after the policy's `timeout` counts as timed out, as an async one cut
    /// off would.
    ///
    /// # Errors
    ///
    /// The last attempt's error, unchanged.
    pub fn run_blocking<F>(self, mut attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
    {
        let mut attempts = self.attempts(Clock::Blocking);
        let mut kept = Br::Kept::default();
        loop {
            let outcome = if attempts.acquire() {
                attempts.call_limited(self.limit, &mut attempt)
            } else if let Some(outcome) = self.breaker.refused(&mut kept) {
                outcome
            } else {
                // Without a breaker every attempt is made: not reached.
                continue;
            };
            match attempts.step(&self.rules, &outcome) {
                ControlFlow::Break(()) => return outcome,
                ControlFlow::Continue(wait) => {
                    Br::keep(&mut kept, outcome);
                    sleep_blocking(wait);
                }
            }
        }
    }

    /// The loop's state on `clock` (tokio's for `run`, the real one for
    /// `run_blocking`), with a permit of the breaker if there is one.
    // Inlined: on the closure API's success path (benches/instructions.sh,
    // 255 instructions without the hint, 218 with it).
    #[inline]
    fn attempts(
        &self,
        clock: Clock,
    ) -> Attempts<'p, Option<CircuitPermit<'p>>, Option<&'p RetryBudget>> {
        let breaker = self.breaker.parts().map(|(breaker, _)| breaker);
        Attempts::new(self.policy, self.budget, self.name.get(), clock).with_breaker_if(breaker)
    }
}
