//! Policies read from configuration (feature `serde`).
//!
//! A `Policy` deserializes from a map with the attribute's own keys and
//! duration strings, checked by the same rules the attribute checks while
//! compiling. A mistake is an error value that says what is wrong; nothing
//! panics.
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::{Jitter, Policy};
//!
//! let policy: Policy = serde_json::from_str(
//!     r#"{ "max": 4, "base": "200ms", "cap": "10s", "jitter": "equal", "deadline": "30s" }"#,
//! ).unwrap();
//! assert_eq!(policy.max_attempts(), 4);
//! assert_eq!(policy.jitter(), Jitter::Equal);
//! assert_eq!(policy.deadline(), Some(Duration::from_secs(30)));
//!
//! let error = serde_json::from_str::<Policy>(r#"{ "base": "200" }"#).unwrap_err();
//! assert!(error.to_string().contains("`base`"));
//! ```
//!
//! | key | type | default |
//! |---|---|---|
//! | `max` | integer >= 1 | 3 |
//! | `base` | duration string > 0 | `"100ms"` |
//! | `cap` | duration string >= base | `"10s"` |
//! | `multiplier` | number >= 1 | 2 |
//! | `jitter` | `"full"`, `"equal"`, `"decorrelated"`, `"none"` | `"full"` |
//! | `deadline` | duration string > 0 | none |
//! | `timeout` | duration string > 0 | none |
//! | `nested` | `"once"`, `"retry"` | `"once"` |
//!
//! Unknown keys are errors, so a typo does not silently fall back to a
//! default. The functions, hooks and budgets of the attribute are code and
//! stay in the attribute: `#[retry(policy = &CONFIG.retry, on = is_transient)]`.

use core::fmt;
use core::time::Duration;

use serde::de::{Deserialize, Deserializer, Error as _};

use crate::{parse_duration, DurationError, Jitter, Nested, Policy, PolicyError, UnknownJitter};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename = "Policy")]
struct PolicyConfig {
    max: Option<u32>,
    base: Option<String>,
    cap: Option<String>,
    multiplier: Option<f64>,
    jitter: Option<String>,
    deadline: Option<String>,
    timeout: Option<String>,
    nested: Option<String>,
}

/// What is wrong with a policy read from configuration.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A duration string that does not parse.
    Duration {
        /// The key.
        key: &'static str,
        /// The string as written.
        value: String,
        /// Why it does not parse.
        error: DurationError,
    },
    /// An unknown jitter name.
    Jitter(UnknownJitter),
    /// An unknown `nested` value.
    Nested(String),
    /// Values that parse but break a rule (`cap` below `base`, `max = 0`, ...).
    Policy(PolicyError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Duration { key, value, error } => write!(
                f,
                "`{key}`: invalid duration {value:?}: {error}; write a number and a unit, such as \"200ms\", \"1.5s\" or \"1m30s\""
            ),
            Self::Jitter(error) => write!(f, "`jitter`: {error}"),
            Self::Nested(value) => {
                write!(f, "`nested`: unknown value {value:?}: expected \"once\" or \"retry\"")
            }
            Self::Policy(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ConfigError {}

fn duration(key: &'static str, value: Option<String>) -> Result<Option<Duration>, ConfigError> {
    value
        .map(|value| {
            parse_duration(&value).map_err(|error| ConfigError::Duration { key, value, error })
        })
        .transpose()
}

impl TryFrom<PolicyConfig> for Policy {
    type Error = ConfigError;

    fn try_from(config: PolicyConfig) -> Result<Self, ConfigError> {
        let mut policy = Policy::new();
        if let Some(max) = config.max {
            policy = policy.with_max_attempts(max);
        }
        if let Some(base) = duration("base", config.base)? {
            policy = policy.with_base(base);
        }
        if let Some(cap) = duration("cap", config.cap)? {
            policy = policy.with_cap(cap);
        }
        if let Some(multiplier) = config.multiplier {
            policy = policy.with_multiplier(multiplier);
        }
        if let Some(jitter) = config.jitter {
            policy = policy.with_jitter(jitter.parse().map_err(ConfigError::Jitter)?);
        }
        if let Some(deadline) = duration("deadline", config.deadline)? {
            policy = policy.with_deadline(deadline);
        }
        if let Some(timeout) = duration("timeout", config.timeout)? {
            policy = policy.with_timeout(timeout);
        }
        if let Some(nested) = config.nested {
            let nested = match nested.as_str() {
                "once" => Nested::Once,
                "retry" => Nested::Retry,
                _ => return Err(ConfigError::Nested(nested)),
            };
            policy = policy.with_nested(nested);
        }
        policy.validate().map_err(ConfigError::Policy)?;
        Ok(policy)
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Policy::try_from(PolicyConfig::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Jitter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(D::Error::custom)
    }
}
