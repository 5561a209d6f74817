//! Policies read from configuration, and written back (feature `serde`).
//!
//! A `Policy` deserializes from a map with the attribute's own keys and
//! duration strings, checked by the same rules the attribute checks while
//! compiling. A mistake is an error value that says what is wrong; nothing
//! panics. It serializes to the same keys, so that a service can log the
//! policy it runs with; what it writes reads back as the same policy.
//!
//! A gRPC service config (its `retryPolicy`, `hedgingPolicy` and
//! `retryThrottling`) loads too: see [`grpc`] (features `serde` and
//! `tonic`).
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
//! | `timeout` | duration string > 0 | none; only in a `Policy<TimedOut>` |
//! | `nested` | `"once"`, `"retry"` | `"once"` |
//!
//! A per-attempt `timeout` is read into a `Policy<TimedOut>` only, whose
//! error type must express a cut-off attempt (`From<TimedOut>`, or
//! [`timed_out`](crate::Policy::timed_out)). A [`Policy`], which runs with
//! any error type, refuses the key with an error that names it, so that a
//! timeout in the file is never silently dropped:
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::{Policy, TimedOut};
//!
//! let file = r#"{ "max": 4, "timeout": "2s" }"#;
//! let error = serde_json::from_str::<Policy>(file).unwrap_err();
//! assert!(error.to_string().starts_with("`timeout` (2s) is set"), "{error}");
//! let timed: Policy<TimedOut> = serde_json::from_str(file).unwrap();
//! assert_eq!(timed.timeout(), Some(Duration::from_secs(2)));
//! ```
//!
//! Unknown keys are errors, so a typo does not silently fall back to a
//! default. The functions, hooks and budgets of the attribute are code and
//! stay in the attribute: `#[retry(policy = &CONFIG.retry, on = is_transient)]`.
//!
//! Written back, each duration is one number in the largest unit that holds
//! it exactly (`"1500ms"`, `"90s"`), and `deadline` and `timeout` appear only
//! when set:
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::Policy;
//!
//! let policy = Policy::new().with_base(Duration::from_millis(1500)).with_cap(Duration::from_secs(90));
//! let written = serde_json::to_string(&policy).unwrap();
//! assert_eq!(
//!     written,
//!     r#"{"max":3,"base":"1500ms","cap":"90s","multiplier":2.0,"jitter":"full","nested":"once"}"#
//! );
//! assert_eq!(serde_json::from_str::<Policy>(&written).unwrap(), policy);
//! ```

mod fields;
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub mod grpc;

use core::fmt;
use core::time::Duration;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde::ser::{Serialize, Serializer};

use crate::policy::UnknownJitter;
use crate::{parse_duration, Jitter, Nested, Policy, PolicyError, TimedOut};

// Each key is read as the kind of value it takes, with an error that names
// the key and says what to write (`fields`).
// Written back as read, `deadline` and `timeout` only when set.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename = "Policy")]
struct PolicyConfig {
    #[serde(default, deserialize_with = "read::max")]
    max: Option<u32>,
    #[serde(default, deserialize_with = "read::base")]
    base: Option<String>,
    #[serde(default, deserialize_with = "read::cap")]
    cap: Option<String>,
    #[serde(default, deserialize_with = "read::multiplier")]
    multiplier: Option<f64>,
    #[serde(default, deserialize_with = "read::jitter")]
    jitter: Option<String>,
    #[serde(default, deserialize_with = "read::deadline")]
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline: Option<String>,
    #[serde(default, deserialize_with = "read::timeout")]
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<String>,
    #[serde(default, deserialize_with = "read::nested")]
    nested: Option<String>,
}

/// How `PolicyConfig` reads each key.
mod read {
    use super::fields::{readers, Field};

    const DURATION: &str = "a duration string, a number and a unit, such as \"200ms\" or \"1.5s\"";
    const ATTEMPTS: &str =
        "a whole number of attempts from 1 to 4294967295, the first call included, such as 4";

    readers! {
        max: u32 = Field::new("max", ATTEMPTS),
        base: String = Field::new("base", DURATION),
        cap: String = Field::new("cap", DURATION),
        multiplier: f64 = Field::new("multiplier", "a number of at least 1, such as 2 or 1.5"),
        jitter: String = Field::new("jitter", "one of \"full\", \"equal\", \"decorrelated\" or \"none\""),
        deadline: String = Field::new("deadline", DURATION),
        timeout: String = Field::new("timeout", DURATION),
        nested: String = Field::new("nested", "\"once\" or \"retry\""),
    }
}

/// What is wrong with configuration: the message of the deserializer's
/// error (a `serde_json::Error`, a `toml::de::Error`), which is all a
/// caller gets of it.
pub(crate) type ConfigError = String;

/// `field` (a policy's `base`, a service config's
/// `retryPolicy.maxAttempts`) breaks a rule: `problem`.
pub(crate) fn invalid(field: &str, problem: impl fmt::Display) -> ConfigError {
    format!("`{field}`: {problem}")
}

fn duration(key: &'static str, value: Option<String>) -> Result<Option<Duration>, ConfigError> {
    let write = "write a number and a unit, such as \"200ms\", \"1.5s\" or \"1m30s\"";
    let parse = |value: String| {
        parse_duration(&value).map_err(|error| {
            invalid(
                key,
                format_args!("invalid duration {value:?}: {error}; {write}"),
            )
        })
    };
    value.map(parse).transpose()
}

impl TryFrom<PolicyConfig> for Policy<TimedOut> {
    type Error = ConfigError;

    fn try_from(config: PolicyConfig) -> Result<Self, ConfigError> {
        // A key given sets its value, one left out keeps the default; the
        // keys are read in this order, so the first wrong one is reported.
        type Timed = Policy<TimedOut>;
        fn set<T>(policy: Timed, value: Option<T>, with: fn(Timed, T) -> Timed) -> Timed {
            value.map_or(policy, |value| with(policy, value))
        }
        let policy = Policy::of(Policy::new().params);
        let policy = set(policy, config.max, Policy::with_max_attempts);
        let policy = set(policy, duration("base", config.base)?, Policy::with_base);
        let policy = set(policy, duration("cap", config.cap)?, Policy::with_cap);
        let policy = set(policy, config.multiplier, Policy::with_multiplier);
        let jitter = config.jitter.map(|jitter| jitter.parse());
        let jitter = jitter
            .transpose()
            .map_err(|error: UnknownJitter| invalid("jitter", error))?;
        let policy = set(policy, jitter, Policy::with_jitter);
        let deadline = duration("deadline", config.deadline)?;
        let policy = set(policy, deadline, Policy::with_deadline);
        let timeout = duration("timeout", config.timeout)?;
        let policy = set(policy, timeout, Policy::with_timeout);
        let nested = config.nested.map(nested).transpose()?;
        let policy = set(policy, nested, Policy::with_nested);
        policy.validate().map_err(|error| error.to_string())?;
        Ok(policy)
    }
}

/// A policy that may cut attempts off: `timeout` is read if given.
impl<'de> Deserialize<'de> for Policy<TimedOut> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Policy::try_from(PolicyConfig::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// A policy that cuts no attempt off, for any error type: a `timeout` key
/// is refused, naming it, rather than dropped.
impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let policy = Policy::<TimedOut>::deserialize(deserializer)?;
        if let Some(timeout) = policy.timeout() {
            return Err(D::Error::custom(PolicyError::TimeoutNotExpressible {
                timeout,
            }));
        }
        Ok(policy.without_timeout())
    }
}

impl<'de> Deserialize<'de> for Jitter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Nested {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        nested(String::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

fn nested(name: String) -> Result<Nested, ConfigError> {
    let expected = "expected \"once\" or \"retry\"";
    [Nested::Once, Nested::Retry]
        .into_iter()
        .find(|nested| nested.name() == name)
        .ok_or_else(|| invalid("nested", format_args!("unknown value {name:?}: {expected}")))
}

impl Serialize for Jitter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl Serialize for Nested {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A policy read from a gRPC service config follows gRFC A6, which no
/// value of these keys says: it is refused, not written as another policy.
impl<Timeout> Serialize for Policy<Timeout> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.params.follows_a6() {
            return Err(serde::ser::Error::custom(
                "a policy read from a gRPC service config follows gRFC A6, which the policy's \
                 keys cannot write: keep the service config instead",
            ));
        }
        PolicyConfig {
            max: Some(self.max_attempts()),
            base: Some(write_duration(self.base())),
            cap: Some(write_duration(self.cap())),
            multiplier: Some(self.multiplier()),
            jitter: Some(self.jitter().name().to_owned()),
            deadline: self.deadline().map(write_duration),
            timeout: self.timeout().map(write_duration),
            nested: Some(self.nested().name().to_owned()),
        }
        .serialize(serializer)
    }
}

/// `duration` as one number in the largest unit that holds it exactly, which
/// [`parse_duration`] reads back as the same duration.
fn write_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    let (unit, per) = retry_core::UNITS
        .into_iter()
        .find(|&(_, per)| nanos.is_multiple_of(per))
        .unwrap_or(("ns", 1));
    format!("{}{unit}", nanos / per)
}
