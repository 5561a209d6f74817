//! A gRPC service config, as gRPC clients in every language read it
//! (gRFC A6): one JSON file drives this library and them alike.
//!
//! A method config's `retryPolicy` becomes a [`Policy`] and the
//! [`RetryableCodes`] it retries; the service config's `retryThrottling`
//! becomes a [`RetryBudget`]; `hedgingPolicy` is read and checked. Values
//! are taken as gRPC takes them: durations as protobuf JSON writes them
//! (`"0.1s"`, seconds with up to nine decimals), status codes by name
//! (`"UNAVAILABLE"`) or number, and a `maxAttempts` above 5 treated as 5.
//! The backoff is gRPC's: full jitter under
//! `min(initialBackoff * backoffMultiplier^n, maxBackoff)`, exactly
//! [`Jitter::Full`](crate::Jitter::Full) with `base = initialBackoff` and
//! `cap = maxBackoff`. A method's `timeout` is the whole call's, retries
//! included: the policy's `deadline`.
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::config::grpc::ServiceConfig;
//! use tonic::{Code, Status};
//!
//! let config: ServiceConfig = serde_json::from_str(r#"{
//!     "methodConfig": [{
//!         "name": [{ "service": "helloworld.Greeter" }],
//!         "timeout": "5s",
//!         "retryPolicy": {
//!             "maxAttempts": 4,
//!             "initialBackoff": "0.1s",
//!             "maxBackoff": "1s",
//!             "backoffMultiplier": 2,
//!             "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
//!         }
//!     }],
//!     "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
//! }"#).unwrap();
//!
//! let method = config.for_path("/helloworld.Greeter/SayHello").unwrap();
//! let policy = *method.policy().policy();
//! assert_eq!(policy.max_attempts(), 4);
//! assert_eq!(policy.base(), Duration::from_millis(100));
//! assert_eq!(policy.deadline(), Some(Duration::from_secs(5)));
//! assert!(method.retryable().contains(Code::ResourceExhausted));
//! assert!(!method.retryable().is_retryable(&Status::invalid_argument("no")));
//!
//! let budget = config.budget().unwrap(); // RetryBudget::new(10, 0.1)
//! assert_eq!(budget.max_tokens(), 10.0);
//! ```
//!
//! Run a call under it with the closure API, or with the attribute's
//! `policy` key and the codes in `on`:
//!
//! ```
//! # use std::sync::LazyLock;
//! use retry_runtime::config::grpc::{MethodConfig, ServiceConfig};
//! use retry_runtime::{retry, UntimedPolicy};
//!
//! static CONFIG: LazyLock<ServiceConfig> = LazyLock::new(|| {
//!     serde_json::from_str(r#"{ "methodConfig": [{ "name": [{}], "retryPolicy": {
//!         "maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s",
//!         "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] } }] }"#)
//!     .unwrap()
//! });
//! static SAY_HELLO: LazyLock<&MethodConfig> =
//!     LazyLock::new(|| CONFIG.method("helloworld.Greeter", "SayHello").unwrap());
//! // No per-attempt timeout (a service config has none), so it runs
//! // calls that fail with `tonic::Status`, which cannot express one.
//! static POLICY: LazyLock<UntimedPolicy> = LazyLock::new(|| SAY_HELLO.policy());
//!
//! #[retry(policy = &POLICY, on = |status| SAY_HELLO.retryable().is_retryable(status))]
//! async fn say_hello(calls: &mut u32) -> Result<String, tonic::Status> {
//!     *calls += 1;
//!     if *calls < 3 { Err(tonic::Status::unavailable("restarting")) } else { Ok("hello".into()) }
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut calls = 0;
//! assert_eq!(say_hello(&mut calls).await.unwrap(), "hello");
//! assert_eq!(calls, 3);
//! # }
//! ```
//!
//! Other fields of a service config (`loadBalancingConfig`, `waitForReady`,
//! message size limits) are left to the channel: they are accepted and
//! ignored here.

use core::fmt;
use core::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::classify::grpc::RetryableCodes;
use crate::{parse_duration, Jitter, Policy, RetryBudget, UntimedPolicy};

/// gRPC clients treat a `maxAttempts` above this as this.
const MOST_ATTEMPTS: u32 = 5;

/// A gRPC service config's method configs and retry throttling.
/// Deserialize it from the service config's JSON.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "raw::ServiceConfig")]
pub struct ServiceConfig {
    methods: Vec<MethodConfig>,
    throttling: Option<RetryThrottling>,
}

/// One entry of `methodConfig`: the methods it names, and how calls to them
/// are retried.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodConfig {
    names: Vec<MethodName>,
    timeout: Option<Duration>,
    retry: Option<RetryPolicy>,
    hedging: Option<HedgingPolicy>,
}

/// A `name` of a method config: a service and a method, either of which
/// may be empty (every method of the service; every service).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodName {
    service: String,
    method: String,
}

/// A method config's `retryPolicy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    policy: Policy,
    retryable: RetryableCodes,
}

/// A method config's `hedgingPolicy`: send up to `maxAttempts` copies of a
/// call, one each `hedgingDelay`, until one answers.
///
/// Read and checked so that a service config that uses it loads; the
/// runtime's hedging (the `hedge` key) takes [`max_attempts`](Self::max_attempts)
/// and [`delay`](Self::delay) from here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgingPolicy {
    max_attempts: u32,
    delay: Duration,
    non_fatal: RetryableCodes,
}

/// The service config's `retryThrottling`: gRPC's retry budget, the rule
/// [`RetryBudget`] implements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryThrottling {
    max_tokens: u32,
    token_ratio: f32,
}

impl ServiceConfig {
    /// The method config for `method` of `service` (`"helloworld.Greeter"`,
    /// `"SayHello"`), found as gRPC finds it: the config naming that method,
    /// else the one naming the whole service, else the default one (an
    /// empty name).
    #[must_use]
    pub fn method(&self, service: &str, method: &str) -> Option<&MethodConfig> {
        let named = |wanted: &dyn Fn(&MethodName) -> bool| {
            self.methods
                .iter()
                .find(|config| config.names.iter().any(wanted))
        };
        named(&|name| name.service == service && name.method == method)
            .or_else(|| named(&|name| name.service == service && name.method.is_empty()))
            .or_else(|| named(&|name| name.service.is_empty()))
    }

    /// The method config for a request path as gRPC sends it,
    /// `"/helloworld.Greeter/SayHello"`. `None` for a path of another shape.
    #[must_use]
    pub fn for_path(&self, path: &str) -> Option<&MethodConfig> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        self.method(service, method)
    }

    /// Every method config, in the file's order.
    #[must_use]
    pub fn methods(&self) -> &[MethodConfig] {
        &self.methods
    }

    /// `retryThrottling`, if the config has it.
    #[must_use]
    pub const fn throttling(&self) -> Option<RetryThrottling> {
        self.throttling
    }

    /// A new retry budget from `retryThrottling`, to be shared by every call
    /// to the service (put it in a `static` or an `Arc`).
    #[must_use]
    pub fn budget(&self) -> Option<RetryBudget> {
        self.throttling.map(RetryThrottling::budget)
    }
}

impl MethodConfig {
    /// The names this config applies to.
    #[must_use]
    pub fn names(&self) -> &[MethodName] {
        &self.names
    }

    /// `timeout`: the time for the whole call, retries included.
    #[must_use]
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// `retryPolicy`, if the config has one.
    #[must_use]
    pub const fn retry_policy(&self) -> Option<RetryPolicy> {
        self.retry
    }

    /// `hedgingPolicy`, if the config has one.
    #[must_use]
    pub const fn hedging_policy(&self) -> Option<HedgingPolicy> {
        self.hedging
    }

    /// How calls to these methods run: the retry policy's attempts and
    /// backoff, with `timeout` as the deadline. Without a retry policy, one
    /// attempt, as gRPC makes. A service config sets no per-attempt
    /// timeout, so the policy runs calls whose error type cannot express
    /// one, `tonic::Status` among them.
    #[must_use]
    pub fn policy(&self) -> UntimedPolicy {
        // Hedging: when `Policy` carries a hedge delay (the `hedge` key),
        // a `hedgingPolicy` sets it here from `self.hedging`.
        let policy = match self.retry {
            Some(retry) => retry.policy,
            None => Policy::new().with_max_attempts(1),
        };
        UntimedPolicy::without_timeout(match self.timeout {
            Some(timeout) => policy.with_deadline(timeout),
            None => policy,
        })
    }

    /// The status codes a failed call is retried on: the retry policy's
    /// `retryableStatusCodes`, none without one. Use it as the rule `on`
    /// (`RetryableCodes::is_retryable` also honours the server's pushback).
    #[must_use]
    pub fn retryable(&self) -> RetryableCodes {
        self.retry
            .map_or(RetryableCodes::NONE, |retry| retry.retryable)
    }
}

impl MethodName {
    /// The service (`"helloworld.Greeter"`), empty for every service.
    #[must_use]
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The method (`"SayHello"`), empty for every method of the service.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }
}

impl RetryPolicy {
    /// `maxAttempts`, `initialBackoff`, `maxBackoff` and
    /// `backoffMultiplier`, as a policy with full jitter (gRPC's).
    #[must_use]
    pub const fn policy(&self) -> Policy {
        self.policy
    }

    /// `retryableStatusCodes`.
    #[must_use]
    pub const fn retryable(&self) -> RetryableCodes {
        self.retryable
    }
}

impl HedgingPolicy {
    /// `maxAttempts`: copies of the call in all, the first included (5 at
    /// most).
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `hedgingDelay`: the time between two copies (zero: all at once).
    #[must_use]
    pub const fn delay(&self) -> Duration {
        self.delay
    }

    /// `nonFatalStatusCodes`: codes after which the other copies go on.
    #[must_use]
    pub const fn non_fatal(&self) -> RetryableCodes {
        self.non_fatal
    }
}

impl RetryThrottling {
    /// `maxTokens`.
    #[must_use]
    pub const fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// `tokenRatio`.
    #[must_use]
    pub const fn token_ratio(&self) -> f32 {
        self.token_ratio
    }

    /// A new budget with these tokens and ratio.
    #[must_use]
    pub fn budget(self) -> RetryBudget {
        RetryBudget::new(self.max_tokens, self.token_ratio)
    }
}

/// A field of a service config that breaks a rule of gRFC A6.
fn invalid(field: &'static str, problem: impl fmt::Display) -> ConfigError {
    ConfigError::Grpc {
        field,
        problem: problem.to_string(),
    }
}

/// A protobuf JSON duration: seconds, with up to nine decimals, and `s`.
fn duration(field: &'static str, text: &str) -> Result<Duration, ConfigError> {
    let seconds = text.strip_suffix('s').unwrap_or("");
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    if !(digits(whole) && digits(fraction) && fraction.len() <= 9) {
        return Err(invalid(
            field,
            format_args!(
                "{text:?} is not a protobuf duration: write seconds and `s`, such as \"0.1s\""
            ),
        ));
    }
    parse_duration(text).map_err(|error| invalid(field, format_args!("{text:?}: {error}")))
}

fn positive(field: &'static str, text: &str) -> Result<Duration, ConfigError> {
    let duration = duration(field, text)?;
    if duration.is_zero() {
        return Err(invalid(field, "must be above zero"));
    }
    Ok(duration)
}

fn attempts(field: &'static str, max_attempts: u32) -> Result<u32, ConfigError> {
    if max_attempts < 2 {
        return Err(invalid(field, "must be 2 or more"));
    }
    Ok(max_attempts.min(MOST_ATTEMPTS))
}

/// gRPC's status codes, by number.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

fn codes(field: &'static str, codes: &[raw::Code]) -> Result<RetryableCodes, ConfigError> {
    codes.iter().try_fold(RetryableCodes::NONE, |set, code| {
        let number = match code {
            raw::Code::Number(number) => i32::try_from(*number)
                .ok()
                .filter(|number| (0..17).contains(number)),
            raw::Code::Name(name) => CODES
                .iter()
                .position(|known| known.eq_ignore_ascii_case(name))
                .and_then(|number| i32::try_from(number).ok()),
        };
        number.map(|number| set.with_number(number)).ok_or_else(|| {
            invalid(
                field,
                format_args!("unknown status code {code}: expected a name such as \"UNAVAILABLE\", or 0 to 16"),
            )
        })
    })
}

impl fmt::Display for raw::Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            raw::Code::Number(number) => write!(f, "{number}"),
            raw::Code::Name(name) => write!(f, "{name:?}"),
        }
    }
}

impl TryFrom<raw::RetryPolicy> for RetryPolicy {
    type Error = ConfigError;

    fn try_from(raw: raw::RetryPolicy) -> Result<Self, ConfigError> {
        const FIELD: &str = "retryPolicy";
        let max_attempts = attempts(
            "retryPolicy.maxAttempts",
            raw.max_attempts
                .ok_or_else(|| invalid(FIELD, "`maxAttempts` is required"))?,
        )?;
        let base = positive(
            "retryPolicy.initialBackoff",
            &raw.initial_backoff
                .ok_or_else(|| invalid(FIELD, "`initialBackoff` is required"))?,
        )?;
        let cap = positive(
            "retryPolicy.maxBackoff",
            &raw.max_backoff
                .ok_or_else(|| invalid(FIELD, "`maxBackoff` is required"))?,
        )?;
        let multiplier = raw
            .backoff_multiplier
            .ok_or_else(|| invalid(FIELD, "`backoffMultiplier` is required"))?;
        if !(multiplier.is_finite() && multiplier >= 1.0) {
            return Err(invalid(
                "retryPolicy.backoffMultiplier",
                format_args!(
                    "{multiplier}: this library's backoff never shrinks, so it must be 1 or more"
                ),
            ));
        }
        let retryable = codes(
            "retryPolicy.retryableStatusCodes",
            &raw.retryable_status_codes,
        )?;
        if retryable == RetryableCodes::NONE {
            return Err(invalid(
                "retryPolicy.retryableStatusCodes",
                "must name at least one status code",
            ));
        }
        Ok(RetryPolicy {
            policy: Policy::new()
                .with_max_attempts(max_attempts)
                .with_base(base)
                .with_cap(cap)
                .with_multiplier(multiplier)
                .with_jitter(Jitter::Full),
            retryable,
        })
    }
}

impl TryFrom<raw::HedgingPolicy> for HedgingPolicy {
    type Error = ConfigError;

    fn try_from(raw: raw::HedgingPolicy) -> Result<Self, ConfigError> {
        Ok(HedgingPolicy {
            max_attempts: attempts(
                "hedgingPolicy.maxAttempts",
                raw.max_attempts
                    .ok_or_else(|| invalid("hedgingPolicy", "`maxAttempts` is required"))?,
            )?,
            delay: raw.hedging_delay.map_or(Ok(Duration::ZERO), |delay| {
                duration("hedgingPolicy.hedgingDelay", &delay)
            })?,
            non_fatal: codes(
                "hedgingPolicy.nonFatalStatusCodes",
                &raw.non_fatal_status_codes,
            )?,
        })
    }
}

impl TryFrom<raw::MethodConfig> for MethodConfig {
    type Error = ConfigError;

    fn try_from(raw: raw::MethodConfig) -> Result<Self, ConfigError> {
        if raw.retry_policy.is_some() && raw.hedging_policy.is_some() {
            return Err(invalid(
                "methodConfig",
                "a method config has `retryPolicy` or `hedgingPolicy`, not both",
            ));
        }
        Ok(MethodConfig {
            names: raw
                .name
                .into_iter()
                .map(|name| MethodName {
                    service: name.service.unwrap_or_default(),
                    method: name.method.unwrap_or_default(),
                })
                .collect(),
            timeout: raw
                .timeout
                .map(|timeout| positive("methodConfig.timeout", &timeout))
                .transpose()?,
            retry: raw.retry_policy.map(RetryPolicy::try_from).transpose()?,
            hedging: raw
                .hedging_policy
                .map(HedgingPolicy::try_from)
                .transpose()?,
        })
    }
}

impl TryFrom<raw::ServiceConfig> for ServiceConfig {
    type Error = ConfigError;

    fn try_from(raw: raw::ServiceConfig) -> Result<Self, ConfigError> {
        let throttling = raw
            .retry_throttling
            .map(|throttling| {
                let max_tokens = throttling
                    .max_tokens
                    .filter(|tokens| (1..=1000).contains(tokens))
                    .ok_or_else(|| invalid("retryThrottling.maxTokens", "must be in 1 ..= 1000"))?;
                let token_ratio = throttling
                    .token_ratio
                    .filter(|ratio| ratio.is_finite() && *ratio > 0.0)
                    .ok_or_else(|| invalid("retryThrottling.tokenRatio", "must be above zero"))?;
                Ok(RetryThrottling {
                    max_tokens,
                    token_ratio,
                })
            })
            .transpose()?;
        Ok(ServiceConfig {
            methods: raw
                .method_config
                .into_iter()
                .map(MethodConfig::try_from)
                .collect::<Result<_, _>>()?,
            throttling,
        })
    }
}

/// The service config as written, before its rules are checked.
mod raw {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct ServiceConfig {
        #[serde(default)]
        #[serde(alias = "method_config", alias = "MethodConfig")]
        pub method_config: Vec<MethodConfig>,
        #[serde(alias = "retry_throttling", alias = "RetryThrottling")]
        pub retry_throttling: Option<RetryThrottling>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct MethodConfig {
        #[serde(default)]
        #[serde(alias = "Name")]
        pub name: Vec<Name>,
        #[serde(alias = "Timeout")]
        pub timeout: Option<String>,
        #[serde(alias = "retry_policy", alias = "RetryPolicy")]
        pub retry_policy: Option<RetryPolicy>,
        #[serde(alias = "hedging_policy", alias = "HedgingPolicy")]
        pub hedging_policy: Option<HedgingPolicy>,
    }

    #[derive(Deserialize)]
    pub(super) struct Name {
        #[serde(alias = "Service")]
        pub service: Option<String>,
        #[serde(alias = "Method")]
        pub method: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct RetryPolicy {
        #[serde(alias = "max_attempts", alias = "MaxAttempts")]
        pub max_attempts: Option<u32>,
        #[serde(alias = "initial_backoff", alias = "InitialBackoff")]
        pub initial_backoff: Option<String>,
        #[serde(alias = "max_backoff", alias = "MaxBackoff")]
        pub max_backoff: Option<String>,
        #[serde(alias = "backoff_multiplier", alias = "BackoffMultiplier")]
        pub backoff_multiplier: Option<f64>,
        #[serde(default)]
        #[serde(alias = "retryable_status_codes", alias = "RetryableStatusCodes")]
        pub retryable_status_codes: Vec<Code>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct HedgingPolicy {
        #[serde(alias = "max_attempts", alias = "MaxAttempts")]
        pub max_attempts: Option<u32>,
        #[serde(alias = "hedging_delay", alias = "HedgingDelay")]
        pub hedging_delay: Option<String>,
        #[serde(default)]
        #[serde(alias = "non_fatal_status_codes", alias = "NonFatalStatusCodes")]
        pub non_fatal_status_codes: Vec<Code>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct RetryThrottling {
        #[serde(alias = "max_tokens", alias = "MaxTokens")]
        pub max_tokens: Option<u32>,
        #[serde(alias = "token_ratio", alias = "TokenRatio")]
        pub token_ratio: Option<f32>,
    }

    /// A status code, by name or by number.
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum Code {
        Number(u64),
        Name(String),
    }
}
