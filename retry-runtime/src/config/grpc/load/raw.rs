//! The service config as written, before its rules are checked: the
//! shapes serde reads, which `load.rs` checks and turns into the types of
//! `config::grpc`.

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::config::grpc) struct ServiceConfig {
    #[serde(default, alias = "method_config", alias = "MethodConfig")]
    pub method_config: Vec<MethodConfig>,
    #[serde(alias = "retry_throttling", alias = "RetryThrottling")]
    pub retry_throttling: Option<RetryThrottling>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::config::grpc) struct MethodConfig {
    #[serde(default, alias = "Name")]
    pub name: Vec<Name>,
    #[serde(alias = "Timeout")]
    pub timeout: Option<String>,
    #[serde(alias = "retry_policy", alias = "RetryPolicy")]
    pub retry_policy: Option<RetryPolicy>,
    #[serde(alias = "hedging_policy", alias = "HedgingPolicy")]
    pub hedging_policy: Option<HedgingPolicy>,
}

#[derive(Deserialize)]
pub(in crate::config::grpc) struct Name {
    #[serde(alias = "Service")]
    pub service: Option<String>,
    #[serde(alias = "Method")]
    pub method: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::config::grpc) struct RetryPolicy {
    #[serde(alias = "max_attempts", alias = "MaxAttempts")]
    pub max_attempts: Option<Number>,
    #[serde(alias = "initial_backoff", alias = "InitialBackoff")]
    pub initial_backoff: Option<String>,
    #[serde(alias = "max_backoff", alias = "MaxBackoff")]
    pub max_backoff: Option<String>,
    #[serde(alias = "backoff_multiplier", alias = "BackoffMultiplier")]
    pub backoff_multiplier: Option<Number>,
    #[serde(default)]
    #[serde(alias = "retryable_status_codes", alias = "RetryableStatusCodes")]
    pub retryable_status_codes: Vec<Code>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::config::grpc) struct HedgingPolicy {
    #[serde(alias = "max_attempts", alias = "MaxAttempts")]
    pub max_attempts: Option<Number>,
    #[serde(alias = "hedging_delay", alias = "HedgingDelay")]
    pub hedging_delay: Option<String>,
    #[serde(default)]
    #[serde(alias = "non_fatal_status_codes", alias = "NonFatalStatusCodes")]
    pub non_fatal_status_codes: Vec<Code>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::config::grpc) struct RetryThrottling {
    #[serde(alias = "max_tokens", alias = "MaxTokens")]
    pub max_tokens: Option<Number>,
    #[serde(alias = "token_ratio", alias = "TokenRatio")]
    pub token_ratio: Option<Number>,
}

/// A number as protobuf's JSON mapping writes it: a JSON number, or a
/// string holding one; anything else is kept as written, for an error
/// that names the field.
pub(in crate::config::grpc) enum Number {
    Integer(i128),
    Float(f64),
    Text(String),
    Other(String),
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Scalar("a number, or a string holding one"))
    }
}

/// A status code, by name (a [`Number::Text`]) or by number (a
/// [`Number::Integer`]); a float or a boolean is kept as written, for an
/// error that names the field.
pub(in crate::config::grpc) struct Code(pub Number);

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let expecting = "a gRPC status code: a name such as \"UNAVAILABLE\", or 0 to 16";
        deserializer.deserialize_any(Scalar(expecting)).map(Code)
    }
}

/// Reads a JSON scalar as a [`Number`]; what it expects is for the error
/// on anything else.
struct Scalar(&'static str);

impl serde::de::Visitor<'_> for Scalar {
    type Value = Number;

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.0)
    }

    fn visit_u64<E>(self, number: u64) -> Result<Number, E> {
        Ok(Number::Integer(number.into()))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Number, E> {
        Ok(Number::Integer(number.into()))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Number, E> {
        Ok(Number::Float(number))
    }

    fn visit_bool<E>(self, value: bool) -> Result<Number, E> {
        Ok(Number::Other(value.to_string()))
    }

    fn visit_str<E>(self, text: &str) -> Result<Number, E> {
        Ok(Number::Text(text.to_owned()))
    }
}
