//! What a retry loop does between attempts: how many attempts, how long each
//! wait may be, how it is randomized, and when to stop for good.
//!
//! The policy and its builder are here; the waits it gives are in
//! `policy/wait.rs`, the jitters in `policy/jitter.rs`, the nested-call rule
//! in `policy/nested.rs` and the rules it can break in `policy/error.rs`.

use core::fmt;
use core::marker::PhantomData;
use core::time::Duration;

use retry_core::backoff::nanos;

use crate::TimedOut;

mod error;
mod jitter;
mod nested;
mod wait;

pub use error::PolicyError;
pub use jitter::Jitter;
// `Jitter`'s `FromStr` error, which configuration (feature `serde`) reports.
#[cfg_attr(not(feature = "serde"), allow(unused_imports))]
pub(crate) use jitter::UnknownJitter;
pub use nested::Nested;

/// A retry policy: attempts, capped exponential backoff, jitter, deadline,
/// per-attempt timeout.
///
/// Every setter is a `const fn`, so a policy can live in a `const` or a
/// `static`; this is what `#[retry(...)]` builds from its keys.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Jitter, Policy};
///
/// const FETCH: Policy = Policy::new()
///     .with_max_attempts(4)
///     .with_base(Duration::from_millis(200))
///     .with_cap(Duration::from_secs(10))
///     .with_jitter(Jitter::Full);
///
/// // Ceilings of the three retries: 200ms, 400ms, 800ms.
/// assert_eq!(FETCH.ceiling(2), Duration::from_millis(800));
/// assert!(FETCH.validate().is_ok());
/// ```
///
/// # With a per-attempt timeout or without
///
/// A `Policy` has no per-attempt timeout, so it runs calls of any error type
/// (`reqwest::Error`, `tonic::Status`, `anyhow::Error`): no attempt is ever
/// cut off, and the error type need not say how one fails.
/// [`with_timeout`](Policy::with_timeout) makes a `Policy<TimedOut>`, whose
/// attempts can be cut off: its error type must implement `From<TimedOut>`,
/// or the loop is told how a cut-off attempt fails
/// ([`timed_out`](Policy::timed_out), or the attribute's `timed_out` key).
/// [`without_timeout`](Policy::without_timeout) makes a `Policy` again.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Policy, TimedOut};
///
/// static UNTIMED: Policy = Policy::new().with_max_attempts(4);
/// static TIMED: Policy<TimedOut> = UNTIMED.with_timeout(Duration::from_secs(2));
/// assert_eq!(TIMED.timeout(), Some(Duration::from_secs(2)));
/// assert_eq!(TIMED.without_timeout(), UNTIMED);
/// ```
///
/// Read from configuration (feature `serde`), a `Policy` refuses a
/// `timeout` key, naming it, and a `Policy<TimedOut>` takes one: see
/// `retry_runtime::config`.
///
/// # Out-of-range values
///
/// The attribute rejects bad values while compiling and [`Policy::validate`]
/// reports them at run time. A policy that holds one anyway still never
/// panics: `max_attempts` of 0 makes one attempt, a `multiplier` below 1 (or
/// NaN) acts as 1, and a `cap` below `base` makes every wait `cap`. Waits are
/// counted in nanoseconds and saturate at `u64::MAX` of them (about 584 years).
/// Waits of any length are slept in full, past tokio's 30-year limit on one
/// timer.
///
/// A policy read from a gRPC service config follows gRFC A6 instead (see
/// `config::grpc`): any multiplier above zero, a
/// `base` above `cap`, waits up to 1.2 x `cap`, and a server's pushback
/// waited out whatever `cap`.
#[derive(Clone, Copy, PartialEq)]
pub struct Policy<Timeout = ()> {
    pub(crate) params: Params,
    /// `()`, or [`TimedOut`] when attempts can be cut off.
    timeout: PhantomData<fn() -> Timeout>,
}

/// What a [`Policy`] holds, whether it may cut attempts off or not: what
/// the loop reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Params {
    pub(crate) max_attempts: u32,
    pub(crate) base: Duration,
    pub(crate) cap: Duration,
    pub(crate) multiplier: f64,
    /// `multiplier` as a whole factor (2 or more), or 0 when it is not one,
    /// and `base` and `cap` in nanoseconds (saturated at `u64::MAX`): what
    /// every retry's wait is worked out from, worked out once, when they are
    /// set.
    factor: u64,
    base_nanos: u64,
    cap_nanos: u64,
    pub(crate) jitter: Jitter,
    pub(crate) deadline: Option<Duration>,
    /// Always `None` in a `Policy<()>`.
    pub(crate) timeout: Option<Duration>,
    pub(crate) nested: Nested,
}

/// `multiplier` as a whole factor above 1, or 0. Saturating: 2^64 and above
/// give `u64::MAX`, which is whole only for 2^64 itself and then passes any
/// cap in one step, as `backoff::ceiling`'s largest multipliers do; a whole
/// multiplier below converts exactly. Compared back rather than with
/// `fract`, which is not `const`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::float_cmp
)]
const fn whole_factor(multiplier: f64) -> u64 {
    let factor = multiplier as u64;
    if multiplier > 1.0 && factor as f64 == multiplier {
        factor
    } else {
        0
    }
}

impl Params {
    /// Whether the policy was read from a gRPC service config, and so
    /// follows gRFC A6 as amended: its waits, a server's pushback waited out
    /// whatever `cap`, and hedges that check the retry budget without
    /// taking a token (see `config::grpc`).
    pub(crate) const fn follows_a6(&self) -> bool {
        matches!(self.jitter, Jitter::Grpc)
    }
}

/// The same policy, of the form that may cut attempts off, with no timeout
/// yet: for a policy whose timeout is known only at run time
/// (`if let Some(t) = timeout { policy = policy.with_timeout(t) }`).
impl From<Policy> for Policy<TimedOut> {
    fn from(policy: Policy) -> Self {
        Policy::of(policy.params)
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy {
    /// The defaults of the attribute: 3 attempts, base 100ms, cap 10s,
    /// multiplier 2, full jitter, no deadline, no timeout, and a failure an
    /// inner retried function already gave up on returned at once.
    #[must_use]
    pub const fn new() -> Self {
        // `base`, `cap` and `multiplier` through their setters, which keep
        // what is worked out from them.
        Policy::of(Params {
            max_attempts: 3,
            base: Duration::ZERO,
            cap: Duration::ZERO,
            multiplier: 1.0,
            factor: 0,
            base_nanos: 0,
            cap_nanos: 0,
            jitter: Jitter::Full,
            deadline: None,
            timeout: None,
            nested: Nested::Once,
        })
        .with_base(Duration::from_millis(100))
        .with_cap(Duration::from_secs(10))
        .with_multiplier(2.0)
    }
}

/// The policy's settings, as its methods of their names read them back
/// (each with its doc comment) and its `Debug` shows them, in this order.
macro_rules! settings {
    ($($(#[doc = $doc:literal])* $name:ident: $type:ty;)*) => {
        impl<Timeout> Policy<Timeout> {
            $(
                $(#[doc = $doc])*
                #[must_use]
                pub const fn $name(&self) -> $type {
                    self.params.$name
                }
            )*
        }

        impl<Timeout> fmt::Debug for Policy<Timeout> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("Policy")
                    $(.field(stringify!($name), &self.params.$name))*
                    .finish()
            }
        }
    };
}

settings! {
    /// Attempts in total, the first included.
    max_attempts: u32;
    /// The ceiling of the first backoff.
    base: Duration;
    /// The largest wait.
    cap: Duration;
    /// Growth of the ceiling per retry.
    multiplier: f64;
    /// How each wait is randomized.
    jitter: Jitter;
    /// The time allowed for the whole call, if any.
    deadline: Option<Duration>;
    /// The time allowed for each attempt, if any: always `None` for a
    /// `Policy` (without `<TimedOut>`).
    timeout: Option<Duration>;
    /// What to do when nested in another retried function.
    nested: Nested;
}

impl<Timeout> Policy<Timeout> {
    /// `params` as a policy of this form.
    pub(crate) const fn of(params: Params) -> Self {
        Policy {
            params,
            timeout: PhantomData,
        }
    }

    /// Attempts in total, the first call included: 4 is the call and up to
    /// three retries.
    #[must_use]
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.params.max_attempts = max_attempts;
        self
    }

    /// The ceiling of the first backoff.
    #[must_use]
    pub const fn with_base(mut self, base: Duration) -> Self {
        self.params.base = base;
        self.params.base_nanos = nanos(base);
        self
    }

    /// No computed wait exceeds this.
    #[must_use]
    pub const fn with_cap(mut self, cap: Duration) -> Self {
        self.params.cap = cap;
        self.params.cap_nanos = nanos(cap);
        self
    }

    /// Growth of the ceiling per retry: `ceiling(n) = min(cap, base * multiplier^n)`.
    #[must_use]
    pub const fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.params.multiplier = multiplier;
        self.params.factor = whole_factor(multiplier);
        self
    }

    /// How each wait is randomized. On a policy read from a gRPC service
    /// config, any of the four jitters leaves gRFC A6's rules for the
    /// attribute's (see `config::grpc`).
    #[must_use]
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.params.jitter = jitter;
        self
    }

    /// Total time for the call, from the start of the first attempt. A wait
    /// that would end past it is not started: the last error is returned at
    /// once instead.
    #[must_use]
    pub const fn with_deadline(mut self, deadline: Duration) -> Self {
        self.params.deadline = Some(deadline);
        self
    }

    /// Removes the deadline.
    #[must_use]
    pub const fn without_deadline(mut self) -> Self {
        self.params.deadline = None;
        self
    }

    /// Cuts each attempt off after `timeout`; the attempt then fails with
    /// `E::from(TimedOut)` (or what [`timed_out`](Policy::timed_out) makes),
    /// classified like any other error. With a deadline too, an attempt is
    /// also cut off when the deadline passes.
    #[must_use]
    pub const fn with_timeout(self, timeout: Duration) -> Policy<TimedOut> {
        let mut params = self.params;
        params.timeout = Some(timeout);
        Policy::of(params)
    }

    /// Removes the per-attempt timeout: the policy then runs calls of any
    /// error type.
    #[must_use]
    pub const fn without_timeout(self) -> Policy {
        let mut params = self.params;
        params.timeout = None;
        Policy::of(params)
    }

    /// What to do when called from inside another retried function's
    /// attempt: see [`Nested`].
    #[must_use]
    pub const fn with_nested(mut self, nested: Nested) -> Self {
        self.params.nested = nested;
        self
    }

    /// Checks the rules the attribute enforces while compiling: at least one
    /// attempt, `base > 0`, `cap >= base`, a finite `multiplier >= 1`, and a
    /// deadline and a timeout above zero. Each error names the key at fault
    /// and says how to fix it.
    ///
    /// # Errors
    ///
    /// The first rule broken, as a [`PolicyError`].
    ///
    /// A policy read from a gRPC service config is checked by gRFC A6's
    /// rules instead, which the config's reader applied: `base` and `cap`
    /// above zero, and a multiplier above zero (NaN is not).
    pub fn validate(&self) -> Result<(), PolicyError> {
        let params = &self.params;
        if params.max_attempts == 0 {
            return Err(PolicyError::NoAttempts);
        }
        if params.base.is_zero() {
            return Err(PolicyError::ZeroBase);
        }
        // Under gRFC A6 a `base` above `cap` waits as `cap` does.
        let a6 = params.follows_a6();
        if params.cap < params.base && (!a6 || params.cap.is_zero()) {
            return Err(PolicyError::CapBelowBase {
                base: params.base,
                cap: params.cap,
            });
        }
        let multiplier = params.multiplier;
        // Above zero under gRFC A6; else finite and at least 1 (which A6
        // takes too).
        if !((a6 && multiplier > 0.0) || (multiplier.is_finite() && multiplier >= 1.0)) {
            return Err(PolicyError::Multiplier(multiplier));
        }
        if params.deadline.is_some_and(|deadline| deadline.is_zero()) {
            return Err(PolicyError::ZeroDeadline);
        }
        if params.timeout.is_some_and(|timeout| timeout.is_zero()) {
            return Err(PolicyError::ZeroTimeout);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::whole_factor;

    /// The rule the wait applied on every retry before the factor was kept:
    /// the factor when the multiplier is a whole number above 1 (saturating
    /// at 2^64), otherwise none.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        clippy::float_cmp
    )]
    fn inline_rule(multiplier: f64) -> u64 {
        let factor = multiplier as u64;
        if multiplier > 1.0 && factor as f64 == multiplier {
            factor
        } else {
            0
        }
    }

    #[test]
    fn the_kept_factor_is_the_rule_applied_on_every_retry() {
        let mut edges = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            -2.0,
            1.0,
            1.0 + f64::EPSILON,
            1.5,
            2.0,
            3.0,
            f64::MIN_POSITIVE,
            f64::MAX,
        ];
        for exponent in 0..1100 {
            let power = 2f64.powi(exponent);
            edges.extend([power, power.next_down(), power.next_up()]);
        }
        for multiplier in edges {
            assert_eq!(
                whole_factor(multiplier),
                inline_rule(multiplier),
                "{multiplier:e}"
            );
        }
        assert_eq!(whole_factor(18_446_744_073_709_551_616.0), u64::MAX);
        assert_eq!(whole_factor(1e30), 0);
    }
}
