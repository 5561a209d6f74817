//! Hedged attempts: for tail latency rather than failures.
//!
//! When one server in a hundred is slow, a request that fans out to a
//! hundred of them waits for a slow one most of the time. Hedging sends
//! another copy of a request that has been outstanding for a while and
//! takes whichever answer comes first ("The Tail at Scale", Dean and
//! Barroso, 2013; gRPC's hedging policy, gRFC A6).
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::retry;
//!
//! // A read that is safe to repeat: if it has not answered after 50 ms,
//! // send another copy, up to 3 in all, and take the first answer.
//! #[retry(max = 3, hedge = "50ms")]
//! async fn get_user(id: u64) -> Result<String, std::io::Error> {
//!     Ok(format!("user {id}"))
//! }
//!
//! // The same, hedging at this function's 95th percentile latency (after
//! // `base` until it has seen enough successes).
//! #[retry(max = 2, base = "20ms", hedge = "p95")]
//! async fn get_item(id: u64) -> Result<String, std::io::Error> {
//!     Ok(format!("item {id}"))
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() { get_user(1).await.unwrap(); get_item(2).await.unwrap(); }
//! ```
//!
//! # What a hedged call does
//!
//! - Attempt 1 starts at once. While no attempt has answered, another
//!   starts each time the newest has run for the hedge delay, up to `max`
//!   attempts in all (and at most 16 at once).
//! - The first success (or an `Ok` that `on_ok` does not retry) is returned
//!   and the attempts still running are dropped, so their work is
//!   cancelled. An error `on` rejects is returned at once the same way.
//! - A failure `on` retries starts the next attempt at once instead of
//!   waiting for the delay, or after the server's hint if it gave one.
//!   Whether it starts one is the retry loop's decision, made by the same
//!   code with every attempt started counted: what stops the loop
//!   (attempts used up, deadline, budget, an open breaker, a hint longer
//!   than `cap`, an inner call that gave up) starts none, and no later
//!   failure starts one again. When every attempt has failed and no more
//!   may start, the last failure to arrive is returned, unchanged, with
//!   the stop reason the loop would give.
//! - All attempts share the call's idempotency key;
//!   [`current_attempt`](crate::current_attempt) inside each says which
//!   attempt it is.
//! - `deadline` bounds when attempts may start, by the retry loop's rule:
//!   none starts after it, and one due exactly at it starts unless a
//!   per-attempt `timeout` would leave it no time; `timeout` bounds each
//!   attempt.
//! - Each attempt after the first that starts because of the delay is a
//!   retry for the `budget`: it is made only if the budget allows a retry,
//!   and takes a token. A failure takes one too, as in the retry loop.
//!   Every attempt asks the `breaker` for a permit; when it refuses a later
//!   attempt, none starts any more, and a call whose attempts all failed
//!   gets the last real error, not `CircuitOpen`. A failure that finds the
//!   circuit open (opened by that failure or not) starts none, and waits
//!   for no hint, as in the retry loop.
//!
//! # The percentile
//!
//! `hedge = "p95"` waits for the 95th percentile of the latencies of this
//! function's recent successful attempts, kept in a [`Latencies`]
//! histogram in a `static` of the function: lock-free, exponentially
//! decaying (each count halves every 1,024 successes), read with
//! one atomic load per call. Until 100 successes have been seen,
//! the delay is `base`.
//!
//! # Cost
//!
//! The attempts are polled in place by the call's own future: nothing is
//! spawned. Under the attribute, with `max` written in it, they live in a
//! fixed set of slots inside the caller's future, so nothing is allocated.
//! The closure API and the tower layer, whose `max` is known only at run
//! time, allocate one `Vec` per call and one box per attempt slot used. A
//! call answered before the delay costs one timer more than a plain retried
//! call.
//!
//! The future is `Send` when the body's future and its output are: the
//! attempts share the arguments by `&` reference (so a by-value argument
//! must be `Sync` as well as `Send`), and the last failure is kept while
//! other attempts run.
//!
//! # When to hedge
//!
//! Idempotent reads with a heavy tail. Not writes without an idempotency
//! key, and not a server that is slow because it is overloaded: hedging
//! adds load, up to `max` times as much.

mod call;
mod closure;
mod hedged;
mod latencies;
mod parts;
mod settle;
mod slots;
#[cfg(feature = "tower")]
mod tower;

use core::time::Duration;

pub(crate) use closure::HedgedRetry;
use hedged::Hedged;
pub use latencies::Latencies;
use parts::{Breaker, Setup};
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use tower::{HedgeLayer, HedgeService};

/// When to start another attempt while none has answered: after a fixed
/// delay, or at a percentile of the recent latencies of successful
/// attempts.
#[derive(Clone, Copy, Debug)]
pub struct Hedge {
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    After(Duration),
    Percentile {
        per_mille: u64,
        latencies: &'static Latencies,
    },
}

impl Hedge {
    /// Another attempt each time the newest has run for `delay`.
    #[must_use]
    pub const fn after(delay: Duration) -> Self {
        Hedge {
            kind: Kind::After(delay),
        }
    }

    /// Another attempt each time the newest has run for the `percentile`
    /// (50 ..= 99.9, clamped) of the latencies recorded in `latencies`;
    /// the policy's `base` until 100 successes were recorded. Each
    /// success of a call hedged this way records its latency there.
    ///
    /// ```
    /// use retry_runtime::hedge::{Hedge, Latencies};
    ///
    /// static LATENCIES: Latencies = Latencies::new();
    /// let hedge = Hedge::percentile(95.0, &LATENCIES);
    /// ```
    #[must_use]
    pub fn percentile(percentile: f64, latencies: &'static Latencies) -> Self {
        Hedge {
            kind: Kind::Percentile {
                per_mille: latencies::per_mille(percentile),
                latencies,
            },
        }
    }
}

/// What `#[retry(hedge = ...)]` expansions call. Not public API.
#[doc(hidden)]
pub mod private {
    use core::future::Future;

    pub use super::hedged::Hedged;
    use super::parts::{Bound, Running};
    pub use super::parts::{Setup, Unbounded};
    pub use super::slots::{Boxed, End, Slot, Slots};
    pub use super::{Hedge, Latencies};
    use crate::rules::{Outcome, RulesFor};
    use crate::{CircuitBreaker, CircuitOpen, Policy, RetryBudget};

    /// `breaker = ...` for a hedged function: every attempt asks it, and a
    /// refused call fails with `E::from(CircuitOpen)`.
    pub fn breaker<R>(breaker: &CircuitBreaker) -> super::Breaker<'_, R::Error>
    where
        R: Outcome,
        // As the retry loop's: an error type without the `From` is one
        // error, on the key, saying what to write instead.
        R::Error: crate::__private::BreakerKey,
    {
        Some((breaker, R::Error::from))
    }

    /// `breaker = ...` with `circuit_open = ...` for a hedged function: a
    /// refused call fails with the error the key builds. A function pointer,
    /// kept by the call: the key's closure may capture nothing.
    pub fn breaker_with<R: Outcome>(
        breaker: &CircuitBreaker,
        circuit_open: fn(CircuitOpen) -> R::Error,
    ) -> super::Breaker<'_, R::Error> {
        Some((breaker, circuit_open))
    }

    /// The hedged call of an attribute.
    #[allow(clippy::too_many_arguments)]
    pub fn run<'p, Timeout, R, Mk, Fut, J, S, L>(
        policy: &'p Policy<Timeout>,
        hedge: Hedge,
        budget: Option<&'p RetryBudget>,
        breaker: super::Breaker<'p, R::Error>,
        limit: L,
        name: &'static str,
        slots: S,
        judge: J,
        make: Mk,
    ) -> Hedged<'p, R, Mk, J, S, L>
    where
        R: Outcome,
        Mk: FnMut() -> Fut,
        Fut: Future<Output = R>,
        J: RulesFor<R>,
        L: Bound<Fut>,
        S: Slots<Running<'p, L::Attempt>>,
    {
        let setup = Setup {
            policy: &policy.params,
            hedge,
            budget,
            breaker,
            limit,
            name,
        };
        Hedged::new(setup, slots, judge, make)
    }
}
