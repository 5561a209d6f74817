//! The service config as written, before its rules are checked: the
//! shapes serde reads, which `load.rs` checks and turns into the types of
//! `config::grpc`. Every field is read by a reader that names it, so that a
//! value of the wrong JSON type is an error that says which field and what
//! it takes ("expected `retryPolicy.initialBackoff` as a protobuf duration
//! ..."), not serde's bare "invalid type ... at line 1 column 91"; an
//! object of the wrong type names its field too (serde's `expecting`).

use core::fmt;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

pub(in crate::config::grpc) use crate::config::fields::Number;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a gRPC service config object")]
pub(in crate::config::grpc) struct ServiceConfig {
    #[serde(default, alias = "method_config", alias = "MethodConfig")]
    #[serde(deserialize_with = "read::method_config")]
    pub method_config: Option<Vec<MethodConfig>>,
    #[serde(default, alias = "retry_throttling", alias = "RetryThrottling")]
    pub retry_throttling: Option<RetryThrottling>,
    #[serde(flatten)]
    _others: Others,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a `methodConfig` object")]
pub(in crate::config::grpc) struct MethodConfig {
    #[serde(default, alias = "Name", deserialize_with = "read::name")]
    pub name: Option<Vec<Name>>,
    #[serde(default, alias = "Timeout", deserialize_with = "read::timeout")]
    pub timeout: Option<String>,
    #[serde(default, alias = "retry_policy", alias = "RetryPolicy")]
    pub retry_policy: Option<RetryPolicy>,
    #[serde(default, alias = "hedging_policy", alias = "HedgingPolicy")]
    pub hedging_policy: Option<HedgingPolicy>,
    #[serde(flatten)]
    _others: Others,
}

#[derive(Deserialize)]
#[serde(expecting = "a `methodConfig.name` object")]
pub(in crate::config::grpc) struct Name {
    #[serde(default, alias = "Service", deserialize_with = "read::service")]
    pub service: Option<String>,
    #[serde(default, alias = "Method", deserialize_with = "read::method")]
    pub method: Option<String>,
    #[serde(flatten)]
    _others: Others,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "`retryPolicy` as an object")]
pub(in crate::config::grpc) struct RetryPolicy {
    #[serde(default, alias = "max_attempts", alias = "MaxAttempts")]
    #[serde(deserialize_with = "read::retry_attempts")]
    pub max_attempts: Option<Number>,
    #[serde(default, alias = "initial_backoff", alias = "InitialBackoff")]
    #[serde(deserialize_with = "read::initial_backoff")]
    pub initial_backoff: Option<String>,
    #[serde(default, alias = "max_backoff", alias = "MaxBackoff")]
    #[serde(deserialize_with = "read::max_backoff")]
    pub max_backoff: Option<String>,
    #[serde(default, alias = "backoff_multiplier", alias = "BackoffMultiplier")]
    #[serde(deserialize_with = "read::backoff_multiplier")]
    pub backoff_multiplier: Option<Number>,
    #[serde(alias = "retryable_status_codes", alias = "RetryableStatusCodes")]
    #[serde(default, deserialize_with = "read::retryable_status_codes")]
    pub retryable_status_codes: Option<Vec<Number>>,
    #[serde(flatten)]
    _others: Others,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "`hedgingPolicy` as an object")]
pub(in crate::config::grpc) struct HedgingPolicy {
    #[serde(default, alias = "max_attempts", alias = "MaxAttempts")]
    #[serde(deserialize_with = "read::hedging_attempts")]
    pub max_attempts: Option<Number>,
    #[serde(default, alias = "hedging_delay", alias = "HedgingDelay")]
    #[serde(deserialize_with = "read::hedging_delay")]
    pub hedging_delay: Option<String>,
    #[serde(alias = "non_fatal_status_codes", alias = "NonFatalStatusCodes")]
    #[serde(default, deserialize_with = "read::non_fatal_status_codes")]
    pub non_fatal_status_codes: Option<Vec<Number>>,
    #[serde(flatten)]
    _others: Others,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "`retryThrottling` as an object")]
pub(in crate::config::grpc) struct RetryThrottling {
    #[serde(default, alias = "max_tokens", alias = "MaxTokens")]
    #[serde(deserialize_with = "read::max_tokens")]
    pub max_tokens: Option<Number>,
    #[serde(default, alias = "token_ratio", alias = "TokenRatio")]
    #[serde(deserialize_with = "read::token_ratio")]
    pub token_ratio: Option<Number>,
    #[serde(flatten)]
    _others: Others,
}

/// The fields of an object this library does not read (`waitForReady`,
/// `loadBalancingConfig`, ...). A struct with a flattened field is read as
/// a map only: without it, serde would also take a list in place of the
/// object, its entries read as the fields in order.
type Others = std::collections::HashMap<String, serde::de::IgnoredAny>;

/// How each field is read, with its name for the error on a value of the
/// wrong type.
mod read {
    use core::marker::PhantomData;

    use super::{List, MethodConfig, Name, Number};
    use crate::config::fields::{readers, Field};

    const DURATION: &str = "a protobuf duration, seconds and `s`, such as \"0.1s\"";
    const NUMBER: &str = "a number, or a string holding one";
    const CODES: &str = "status codes, such as [\"UNAVAILABLE\"]";
    const CODE: &str = "a gRPC status code, a name such as \"UNAVAILABLE\" or 0 to 16";

    readers! {
        method_config: Vec<MethodConfig> = List { field: "methodConfig", what: "method configs (objects)", entry: PhantomData },
        name: Vec<Name> = List { field: "methodConfig.name", what: "names (objects)", entry: PhantomData },
        timeout: String = Field::new("methodConfig.timeout", DURATION),
        service: String = Field::new("methodConfig.name.service", "a string, such as \"helloworld.Greeter\""),
        method: String = Field::new("methodConfig.name.method", "a string, such as \"SayHello\""),
        retry_attempts: Number = Field::new("retryPolicy.maxAttempts", NUMBER),
        initial_backoff: String = Field::new("retryPolicy.initialBackoff", DURATION),
        max_backoff: String = Field::new("retryPolicy.maxBackoff", DURATION),
        backoff_multiplier: Number = Field::new("retryPolicy.backoffMultiplier", NUMBER),
        retryable_status_codes: Vec<Number> = List { field: "retryPolicy.retryableStatusCodes", what: CODES, entry: Field::new("retryPolicy.retryableStatusCodes", CODE) },
        hedging_attempts: Number = Field::new("hedgingPolicy.maxAttempts", NUMBER),
        hedging_delay: String = Field::new("hedgingPolicy.hedgingDelay", DURATION),
        non_fatal_status_codes: Vec<Number> = List { field: "hedgingPolicy.nonFatalStatusCodes", what: CODES, entry: Field::new("hedgingPolicy.nonFatalStatusCodes", CODE) },
        max_tokens: Number = Field::new("retryThrottling.maxTokens", NUMBER),
        token_ratio: Number = Field::new("retryThrottling.tokenRatio", NUMBER),
    }
}

/// A list in the field `field`, of `what`, each entry read by `entry`: a
/// `Field` naming the list for status codes, `PhantomData` for objects
/// (whose `expecting` names the field).
pub(in crate::config::grpc) struct List<S> {
    pub field: &'static str,
    pub what: &'static str,
    pub entry: S,
}

impl<'de, S: DeserializeSeed<'de> + Clone> Visitor<'de> for List<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` as a list of {}", self.field, self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        core::iter::from_fn(|| seq.next_element_seed(self.entry.clone()).transpose()).collect()
    }
}

impl<'de, S: DeserializeSeed<'de> + Clone> DeserializeSeed<'de> for List<S> {
    type Value = Vec<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}
