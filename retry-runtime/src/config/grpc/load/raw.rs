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

use crate::config::fields::{optional, Read, Text};

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
    use serde::Deserializer;

    use core::marker::PhantomData;

    use super::{optional, List, MethodConfig, Name, Number, Scalar, Text};

    const DURATION: &str = "a protobuf duration, seconds and `s`, such as \"0.1s\"";
    const NUMBER: &str = "a number, or a string holding one";
    const CODES: &str = "status codes, such as [\"UNAVAILABLE\"]";
    const CODE: &str = "a gRPC status code, a name such as \"UNAVAILABLE\" or 0 to 16";

    /// One reader per field: `field: Type = reader`, the field's name
    /// written once, in the reader.
    macro_rules! read {
        ($($name:ident: $value:ty = $read:expr,)*) => {$(
            pub(super) fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$value>, D::Error> {
                optional(d, $read)
            }
        )*};
    }

    read! {
        method_config: Vec<MethodConfig> = List { field: "methodConfig", what: "method configs (objects)", entry: PhantomData },
        name: Vec<Name> = List { field: "methodConfig.name", what: "names (objects)", entry: PhantomData },
        timeout: String = Text { key: "methodConfig.timeout", expected: DURATION },
        service: String = Text { key: "methodConfig.name.service", expected: "a string, such as \"helloworld.Greeter\"" },
        method: String = Text { key: "methodConfig.name.method", expected: "a string, such as \"SayHello\"" },
        retry_attempts: Number = Scalar { field: "retryPolicy.maxAttempts", what: NUMBER },
        initial_backoff: String = Text { key: "retryPolicy.initialBackoff", expected: DURATION },
        max_backoff: String = Text { key: "retryPolicy.maxBackoff", expected: DURATION },
        backoff_multiplier: Number = Scalar { field: "retryPolicy.backoffMultiplier", what: NUMBER },
        retryable_status_codes: Vec<Number> = List { field: "retryPolicy.retryableStatusCodes", what: CODES, entry: Scalar { field: "retryPolicy.retryableStatusCodes", what: CODE } },
        hedging_attempts: Number = Scalar { field: "hedgingPolicy.maxAttempts", what: NUMBER },
        hedging_delay: String = Text { key: "hedgingPolicy.hedgingDelay", expected: DURATION },
        non_fatal_status_codes: Vec<Number> = List { field: "hedgingPolicy.nonFatalStatusCodes", what: CODES, entry: Scalar { field: "hedgingPolicy.nonFatalStatusCodes", what: CODE } },
        max_tokens: Number = Scalar { field: "retryThrottling.maxTokens", what: NUMBER },
        token_ratio: Number = Scalar { field: "retryThrottling.tokenRatio", what: NUMBER },
    }
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

/// Reads a JSON scalar as a [`Number`], for the field `field`, which the
/// error on anything else names with `what` it takes.
#[derive(Clone, Copy)]
struct Scalar {
    field: &'static str,
    what: &'static str,
}

impl Visitor<'_> for Scalar {
    type Value = Number;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` as {}", self.field, self.what)
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

impl<'de> Read<'de> for Scalar {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<Number, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> DeserializeSeed<'de> for Scalar {
    type Value = Number;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Number, D::Error> {
        self.read(deserializer)
    }
}

/// A list in the field `field`, of `what`, each entry read by `entry`: a
/// [`Scalar`] naming the field for status codes, `PhantomData` for objects
/// (whose `expecting` names the field).
struct List<S> {
    field: &'static str,
    what: &'static str,
    entry: S,
}

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for List<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` as a list of {}", self.field, self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = seq.next_element_seed(self.entry)? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy> Read<'de> for List<S> {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}
