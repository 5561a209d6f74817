//! The whole decision of one retry, as one pure step: what the rules made of
//! an attempt's outcome and what is known of the call so far go in; "retry
//! after this wait" or "stop for this reason" comes out. Attempts left, the
//! retry budget, an inner layer that already retried, the server's hint, the
//! backoff and the deadline are weighed here, in that order, for every entry
//! point: the retry loop and the hedged call ask the same function
//! ([`decide_carrying`], through `CallState::decide`).

use core::fmt;
use core::time::Duration;

use retry_core::backoff::nanos;

use crate::policy::Params;
use crate::{Jitter, Nested};

/// Why a call stopped and returned what it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stop {
    /// The outcome is a success.
    Done,
    /// The error is one `on` does not accept.
    NotRetryable,
    /// That was attempt `max`.
    Exhausted,
    /// The retry budget is spent.
    Budget,
    /// The server asked for a wait longer than `cap`; under a gRPC service
    /// config, a pushback that says not to retry (gRFC A6).
    HintTooLong,
    /// The wait would end past the deadline (this call's, or that of the
    /// retried call it runs inside).
    Deadline,
    /// A retried function called by the failed attempt already retried and
    /// gave up, so this layer does not retry it again (`nested = "once"`).
    Nested,
    /// The circuit breaker is open: the call was refused, or a failed
    /// attempt is not retried.
    Open,
}

impl Stop {
    /// A short name: `"done"`, `"not_retryable"`, `"exhausted"`, `"budget"`,
    /// `"hint_too_long"`, `"deadline"`, `"nested"` or `"open"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Stop::Done => "done",
            Stop::NotRetryable => "not_retryable",
            Stop::Exhausted => "exhausted",
            Stop::Budget => "budget",
            Stop::HintTooLong => "hint_too_long",
            Stop::Deadline => "deadline",
            Stop::Nested => "nested",
            Stop::Open => "open",
        }
    }

    /// Whether the call gave up on a failure it judged retryable: the
    /// failure was retried here as far as the rules allow, so no layer
    /// around it retries it again.
    pub(crate) const fn gave_up_retrying(self) -> bool {
        !matches!(self, Stop::Done | Stop::NotRetryable)
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// What the rules (or the classifier of a layer or middleware) made of an
/// attempt's outcome.
///
/// A classifier of your own for the tower layer
/// (`RetryLayer::with_classifier`, `tower::RetryPolicy`) or the reqwest
/// middleware returns one:
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::Classification;
///
/// fn classify(status: u16, retry_after: Option<Duration>) -> Classification {
///     match status {
///         200..=299 | 400..=428 => Classification::Done,
///         429 | 503 => Classification::Transient(retry_after),
///         _ => Classification::Permanent,
///     }
/// }
/// assert!(classify(503, None).is_transient());
/// assert_eq!(classify(404, None), Classification::Done);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Classification {
    /// Return it: a success, or an answer a repeat would not change.
    Done,
    /// Return it: a failure a repeat would not fix.
    Permanent,
    /// A failure that may succeed on a repeat, with the wait the server
    /// asked for, if any (`Retry-After`, `grpc-retry-pushback-ms`).
    Transient(Option<Duration>),
    /// A failure that may succeed on a repeat, of a request that must not
    /// be repeated (a POST without an idempotency key that got a 503):
    /// returned, and counted against the retry budget and the breaker as a
    /// [`Transient`](Classification::Transient) failure is (gRFC A6).
    Unrepeatable,
    /// The request never left the client (its connection was refused), so
    /// it is safe to send again whatever its method. The HTTP layers send
    /// it again at once, as the same attempt, without a budget token or a
    /// word to the breaker (gRFC A6's transparent retry), up to 3 times a
    /// call and never past its deadline; past that, and elsewhere, it is
    /// [`Transient`](Classification::Transient) with no hint.
    Unsent,
    /// The server refused the request before its application saw it
    /// (HTTP/2 `REFUSED_STREAM`, or a stream above the last one a graceful
    /// `GOAWAY` names, RFC 9113 section 8.7): sent again as
    /// [`Unsent`](Classification::Unsent) is, once a call.
    Unprocessed,
}

impl Classification {
    /// Whether the outcome is a failure a repeat may fix (anything but
    /// [`Done`](Classification::Done) and
    /// [`Permanent`](Classification::Permanent)): it takes a token from the
    /// budget and counts against the breaker, unless it is sent again
    /// transparently ([`Unsent`](Classification::Unsent)).
    #[must_use]
    pub const fn is_transient(&self) -> bool {
        !matches!(self, Classification::Done | Classification::Permanent)
    }

    /// Whether the rules would retry the failure (a request that may be
    /// repeated): [`Transient`](Classification::Transient), or a request
    /// the server never processed, which is one when it is not sent again
    /// transparently.
    pub(crate) const fn retries(self) -> bool {
        matches!(
            self,
            Classification::Transient(_) | Classification::Unsent | Classification::Unprocessed
        )
    }

    /// The server's hint of a [`Transient`](Classification::Transient)
    /// failure.
    pub(crate) const fn hint(self) -> Option<Duration> {
        match self {
            Classification::Transient(hint) => hint,
            _ => None,
        }
    }
}

/// What a call has sent again of requests the server never processed
/// ([`Classification::Unsent`], [`Classification::Unprocessed`]): gRFC A6
/// sends such a request again at once without counting it as an attempt,
/// any number of times while it never left the client and once after the
/// server refused it. Bounded here, so that a host that refuses every
/// connection costs a few refused connects, not a spin: at most
/// [`Resent::MOST_UNSENT`] a call, and none once its deadline has passed.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Resent {
    unsent: u8,
    unprocessed: bool,
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
impl Resent {
    /// The most times a call sends again a request that never left.
    pub(crate) const MOST_UNSENT: u8 = 3;

    /// Whether a request judged `verdict` is sent again at once, with `left`
    /// before the nearest deadline; if so, counted.
    pub(crate) fn again(
        &mut self,
        policy: &Params,
        verdict: Classification,
        left: TimeLeft,
    ) -> bool {
        if too_late(policy, Duration::ZERO, left) {
            return false;
        }
        match verdict {
            Classification::Unsent if self.unsent < Self::MOST_UNSENT => self.unsent += 1,
            Classification::Unprocessed if !self.unprocessed => self.unprocessed = true,
            _ => return false,
        }
        true
    }
}

/// What is known of a call when one of its attempts failed in a way the
/// rules would retry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// The server's hint, if it gave one.
    pub hint: Option<Duration>,
    /// What the call kept from its last retry (see `Params::next_wait`):
    /// the ceiling of its wait, for decorrelated jitter the wait itself, and
    /// under gRFC A6 the backoff's next step; unread before the first retry.
    pub carry: u64,
    /// Whether the budget had a token for a retry.
    pub budget_allows: bool,
    /// Whether a retried function called by this attempt gave up after
    /// retrying.
    pub inner_gave_up: bool,
    /// Time left before the nearest deadline (this call's or the enclosing
    /// attempt's).
    pub time_left: TimeLeft,
    /// The next attempt starts at once, after the server's hint if it gave
    /// one, without the backoff: a hedged call's retry (§4.15, gRFC A6).
    pub at_once: bool,
}

/// Retry after this wait, or stop for this reason, with what the call keeps
/// for its next retry's [`Failure::carry`]. `random` gives the samples for
/// the backoff's jitter and the hint's spread, drawn only when a wait is
/// computed.
// Inlined into `CallState::retry`, its one caller on the retry path: left
// to the compiler, it was kept out of line once the breaker's code grew,
// which cost 170 instructions on the three-failure path
// (benches/instructions.sh).
#[inline]
pub(crate) fn decide_carrying(
    policy: &Params,
    failure: &Failure,
    mut random: impl FnMut() -> u64,
) -> Result<(Duration, u64), Stop> {
    if failure.attempt >= policy.max_attempts {
        return Err(Stop::Exhausted);
    }
    if !failure.budget_allows {
        return Err(Stop::Budget);
    }
    if failure.inner_gave_up && policy.nested == Nested::Once {
        return Err(Stop::Nested);
    }
    // Retry n follows attempt n + 1: n = 0 before the first retry.
    let n = failure.attempt.saturating_sub(1);
    // Under gRFC A6 a pushback replaces the backoff, which restarts after
    // it (carry 0: the first step again).
    let a6_hinted = policy.follows_a6() && failure.hint.is_some();
    let (backoff, carry) = if failure.at_once || a6_hinted {
        (0, 0)
    } else {
        policy.next_wait(n, failure.carry, random())
    };
    let backoff = Duration::from_nanos(backoff);
    let wait = match failure.hint {
        Some(hint) => policy
            .hinted_wait(backoff, hint, random())
            .ok_or(Stop::HintTooLong)?,
        None => backoff,
    };
    if too_late(policy, wait, failure.time_left) {
        return Err(Stop::Deadline);
    }
    let carry = if policy.jitter == Jitter::Decorrelated {
        nanos(wait)
    } else {
        carry
    };
    Ok((wait, carry))
}

/// How long a call has before the nearest deadline (its own or the
/// enclosing attempt's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeLeft {
    /// No deadline.
    Unbounded,
    /// This long, zero when it is exactly now.
    Until(Duration),
    /// The deadline has passed: no attempt may start, even at once.
    Passed,
}

/// Whether an attempt after `wait` would start too late, with `left` before
/// the nearest deadline: past it, or exactly at it with a per-attempt
/// timeout, which would leave the attempt no time at all. The one rule of the
/// deadline's edge, for a retry and a hedge alike.
#[inline]
pub(crate) fn too_late(policy: &Params, wait: Duration, left: TimeLeft) -> bool {
    match left {
        TimeLeft::Unbounded => false,
        TimeLeft::Until(left) => wait > left || (wait == left && policy.timeout.is_some()),
        TimeLeft::Passed => true,
    }
}

#[cfg(test)]
mod tests;
