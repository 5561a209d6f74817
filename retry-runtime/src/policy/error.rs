//! The rules a policy can break, as [`Policy::validate`] and configuration
//! report them.

use core::fmt;
use core::time::Duration;

#[cfg(doc)]
use super::Policy;

/// A rule of [`Policy::validate`] that a policy breaks, or a `timeout`
/// read from configuration into a [`Policy`], which has none. Its message
/// names the key at fault and says how to fix it.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Policy, PolicyError};
///
/// let error = Policy::new().with_base(Duration::ZERO).validate().unwrap_err();
/// assert_eq!(error, PolicyError::ZeroBase);
/// assert!(error.to_string().starts_with("`base` must be above zero"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_attempts` is 0; it counts the first call, so it must be at least 1.
    NoAttempts,
    /// `base` is zero.
    ZeroBase,
    /// `cap` is below `base`.
    CapBelowBase {
        /// The base.
        base: Duration,
        /// The cap, smaller than the base.
        cap: Duration,
    },
    /// The multiplier is below 1, infinite or NaN.
    Multiplier(f64),
    /// The deadline is zero.
    ZeroDeadline,
    /// The per-attempt timeout is zero.
    ZeroTimeout,
    /// A `timeout` read from configuration into a [`Policy`], which has no
    /// per-attempt timeout: read a `Policy<TimedOut>` to take one.
    TimeoutNotExpressible {
        /// The timeout the policy carries.
        timeout: Duration,
    },
}

/// Each message names the key at fault and says how to fix it, as the
/// attribute's compile errors do.
impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAttempts => f.write_str(
                "`max` must be at least 1: it counts every attempt, the first call included; \
                 use 1 for a single attempt without retries",
            ),
            Self::ZeroBase => f.write_str(
                "`base` must be above zero: it is the ceiling of the first wait, and every \
                 later one grows from it; write a duration such as 100ms",
            ),
            Self::CapBelowBase { base, cap } => write!(
                f,
                "`cap` ({cap:?}) must be at least `base` ({base:?}): raise `cap`, or lower `base`"
            ),
            Self::Multiplier(m) => write!(
                f,
                "`multiplier` must be a finite number >= 1, not {m}: below 1 each wait would be \
                 shorter than the last; use 2 to double each wait, or 1 to keep them equal"
            ),
            Self::ZeroDeadline => f.write_str(
                "`deadline` must be above zero: a zero deadline leaves no time for any attempt; \
                 remove `deadline` for no limit",
            ),
            Self::ZeroTimeout => f.write_str(
                "`timeout` must be above zero: a zero timeout cuts every attempt off before it \
                 starts; remove `timeout` for no limit",
            ),
            Self::TimeoutNotExpressible { timeout } => write!(
                f,
                "`timeout` ({timeout:?}) is set, but this policy is read as a `Policy`, which \
                 cuts no attempt off and so runs with any error type: remove `timeout` (and \
                 bound the attempt inside the call; for reqwest, `ClientBuilder::timeout`), or \
                 read a `Policy<TimedOut>`, whose error type must express a timeout"
            ),
        }
    }
}

impl std::error::Error for PolicyError {}
