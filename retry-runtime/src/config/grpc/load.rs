//! A service config as written, checked against gRFC A6's rules and turned
//! into the types of [`super`].

use core::fmt;
use core::time::Duration;

use super::{HedgingPolicy, MethodConfig, ServiceConfig};
use crate::classify::grpc::RetryableCodes;
use crate::config::{invalid, ConfigError};
use crate::{parse_duration, Jitter, Policy};

/// `policy` under gRFC A6's rules, as every policy a service config gives.
pub(super) const fn a6(policy: Policy) -> Policy {
    policy.with_jitter(Jitter::Grpc)
}

/// gRPC clients treat a `maxAttempts` above this as this.
const MOST_ATTEMPTS: u32 = 5;

/// The most seconds a protobuf `Duration` holds (about 10,000 years); its
/// JSON mapping rejects more.
const MOST_SECONDS: u64 = 315_576_000_000;

/// `value` of `field`, if it `keeps` the rule: else the error that names the
/// field and says the `rule`.
fn keep<T>(field: &str, value: T, keeps: bool, rule: impl fmt::Display) -> Result<T, ConfigError> {
    keeps.then_some(value).ok_or_else(|| invalid(field, rule))
}

/// A protobuf JSON duration: seconds, with up to nine decimals, and `s`,
/// within protobuf's range, and not negative (no field of gRFC A6 takes a
/// negative one). The whole seconds may be left out before a fraction, as
/// A6's own examples write `".1s"`.
fn duration(field: &'static str, text: &str) -> Result<Duration, ConfigError> {
    if let Some(magnitude) = text.strip_prefix('-') {
        let zero = duration(field, magnitude)?.is_zero();
        let rule = "is negative: gRFC A6 takes no negative duration here";
        return keep(field, Duration::ZERO, zero, format_args!("{text:?} {rule}"));
    }
    let seconds = text.strip_suffix('s').unwrap_or("");
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    // Digits on the side of the point that has to have them: `1s`, `0.1s`
    // and `.1s`, not `s`, `1.s` or `.s`.
    let written = !seconds.is_empty() && !seconds.ends_with('.');
    let rule = "is not a protobuf duration: write seconds and `s`, such as \"0.1s\"";
    let valid = written && digits(whole) && digits(fraction) && fraction.len() <= 9;
    keep(field, (), valid, format_args!("{text:?} {rule}"))?;
    // Seconds and up to nine decimals, which the attribute's own grammar
    // reads exactly (given a whole part, as `.1s` has none), failing only
    // past `u64::MAX` seconds: out of range too.
    let duration = parse_duration(&format!("0{text}")).ok();
    let duration = duration.filter(|duration| duration.as_secs() <= MOST_SECONDS);
    duration.ok_or_else(|| {
        invalid(
            field,
            format_args!("{text:?} is more than a protobuf duration holds ({MOST_SECONDS}s)"),
        )
    })
}

/// The value of `field` (`parent.key`), which gRFC A6 requires: its
/// absence is an error on `parent`.
fn required<T>(field: &'static str, value: Option<T>) -> Result<T, ConfigError> {
    let (parent, key) = field.split_once('.').unwrap_or(("", field));
    value.ok_or_else(|| invalid(parent, format_args!("`{key}` is required")))
}

fn positive(field: &'static str, text: &str) -> Result<Duration, ConfigError> {
    let duration = duration(field, text)?;
    let rule = "must be above zero (gRFC A6)";
    keep(field, duration, !duration.is_zero(), rule)
}

/// A protobuf JSON `uint32`: a number or a string holding one, with an
/// exponent or a zero fraction allowed (`3`, `"3"`, `3.0`, `"1e1"`), as
/// protobuf's JSON mapping accepts.
fn whole(field: &'static str, number: &raw::Number) -> Result<u32, ConfigError> {
    // A whole float in range, such as `3.0` or `1e1`: the cast is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let value = float(field, number)
        .ok()
        .filter(|float| float.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(float))
        .map(|float| float as u32);
    value.ok_or_else(|| {
        invalid(
            field,
            format_args!("{number} is not a whole number from 0 to {}", u32::MAX),
        )
    })
}

/// A protobuf JSON `float` or `double`: a number or a string holding one
/// (`2`, `"2.5"`, `"1e-1"`, `"NaN"`), as protobuf's JSON mapping accepts.
/// Whether it is finite and in range is the field's rule.
fn float(field: &'static str, number: &raw::Number) -> Result<f64, ConfigError> {
    let value = match number {
        raw::Number::Text(text) => text.parse::<f64>().ok(),
        number => number.as_f64(),
    };
    value.ok_or_else(|| invalid(field, format_args!("{number} is not a number")))
}

fn attempts(field: &'static str, max_attempts: &raw::Number) -> Result<u32, ConfigError> {
    let max_attempts = whole(field, max_attempts)?;
    let rule = "must be 2 or more (gRFC A6: the first attempt and at least one more)";
    Ok(keep(field, max_attempts, max_attempts >= 2, rule)?.min(MOST_ATTEMPTS))
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

/// A list of status codes, which gRFC A6 requires and requires not empty.
fn codes(
    field: &'static str,
    codes: Option<&[raw::Number]>,
) -> Result<RetryableCodes, ConfigError> {
    let codes = required(field, codes)?;
    let rule = "must name at least one status code (gRFC A6)";
    keep(field, (), !codes.is_empty(), rule)?;
    codes.iter().try_fold(RetryableCodes::NONE, |set, code| {
        let number = match code {
            raw::Number::Integer(number) => (0..17).find(|&known| i128::from(known) == *number),
            raw::Number::Text(name) => (0..)
                .zip(CODES)
                .find_map(|(number, known)| known.eq_ignore_ascii_case(name).then_some(number)),
            raw::Number::Float(_) | raw::Number::Other(_) => None,
        };
        number.map(|number| set.with_number(number)).ok_or_else(|| {
            invalid(
                field,
                format_args!(
                    "unknown status code {code}: expected a name such as \"UNAVAILABLE\", or 0 to 16"
                ),
            )
        })
    })
}

/// A `retryPolicy`: its policy, and its `retryableStatusCodes`.
fn retry_policy(raw: raw::RetryPolicy) -> Result<(Policy, RetryableCodes), ConfigError> {
    let [max, initial, most, multiply] = [
        "retryPolicy.maxAttempts",
        "retryPolicy.initialBackoff",
        "retryPolicy.maxBackoff",
        "retryPolicy.backoffMultiplier",
    ];
    let max_attempts = attempts(max, &required(max, raw.max_attempts)?)?;
    let base = positive(initial, &required(initial, raw.initial_backoff)?)?;
    let cap = positive(most, &required(most, raw.max_backoff)?)?;
    let multiplier = float(multiply, &required(multiply, raw.backoff_multiplier)?)?;
    // gRFC A6: "must be greater than zero"; below 1 the waits shrink,
    // and an infinite one reaches `maxBackoff` at the second retry.
    let rule = "must be greater than zero (gRFC A6)";
    let above = multiplier > 0.0;
    keep(multiply, (), above, format_args!("{multiplier}: {rule}"))?;
    let retryable = codes(
        "retryPolicy.retryableStatusCodes",
        raw.retryable_status_codes.as_deref(),
    )?;
    // `initialBackoff` as written, even above `maxBackoff`: with a
    // multiplier below 1 the later ceilings come down from it.
    let policy = a6(Policy::new().with_max_attempts(max_attempts))
        .with_base(base)
        .with_cap(cap)
        .with_multiplier(multiplier);
    Ok((policy, retryable))
}

fn hedging_policy(raw: raw::HedgingPolicy) -> Result<HedgingPolicy, ConfigError> {
    const MAX: &str = "hedgingPolicy.maxAttempts";
    Ok(HedgingPolicy {
        max_attempts: attempts(MAX, &required(MAX, raw.max_attempts)?)?,
        delay: raw.hedging_delay.map_or(Ok(Duration::ZERO), |delay| {
            duration("hedgingPolicy.hedgingDelay", &delay)
        })?,
        non_fatal: codes(
            "hedgingPolicy.nonFatalStatusCodes",
            raw.non_fatal_status_codes.as_deref(),
        )?,
    })
}

fn method_config(raw: raw::MethodConfig) -> Result<MethodConfig, ConfigError> {
    let rule = "a method config has `retryPolicy` or `hedgingPolicy`, not both";
    let one = raw.retry_policy.is_none() || raw.hedging_policy.is_none();
    keep("methodConfig", (), one, rule)?;
    let names = raw
        .name
        .into_iter()
        .flatten()
        .map(|name| [name.service, name.method].map(Option::unwrap_or_default))
        .collect::<Vec<_>>();
    if let Some([_, method]) = names
        .iter()
        .find(|[service, method]| service.is_empty() && !method.is_empty())
    {
        // gRPC clients reject it: read as the default config, it would
        // retry every method of every service.
        return Err(invalid(
            "methodConfig.name",
            format_args!(
                "the method {method:?} needs its `service`; only an empty name (`{{}}`) applies to every service"
            ),
        ));
    }
    let timeout = |text: String| positive("methodConfig.timeout", &text);
    let timeout = raw.timeout.map(timeout).transpose()?;
    let (retry, codes) = raw.retry_policy.map(retry_policy).transpose()?.unzip();
    let hedging = raw.hedging_policy.map(hedging_policy).transpose()?;
    let non_fatal = hedging.map(|hedging| hedging.non_fatal);
    Ok(MethodConfig {
        names,
        timeout,
        retry,
        hedging,
        retryable: codes.or(non_fatal).unwrap_or(RetryableCodes::NONE),
    })
}

/// `retryThrottling`: its `maxTokens` and `tokenRatio`.
fn throttling(raw: raw::RetryThrottling) -> Result<(u32, f32), ConfigError> {
    const TOKENS: &str = "retryThrottling.maxTokens";
    let max_tokens = whole(TOKENS, &required(TOKENS, raw.max_tokens)?)?;
    let rule = "must be greater than zero (gRFC A6)";
    let max_tokens = keep(TOKENS, max_tokens, max_tokens > 0, rule)?;
    const RATIO: &str = "retryThrottling.tokenRatio";
    let token_ratio = float(RATIO, &required(RATIO, raw.token_ratio)?)?;
    // A protobuf `float`: a ratio beyond its range is infinite.
    #[allow(clippy::cast_possible_truncation)]
    let token_ratio = token_ratio as f32;
    // gRFC A6: above zero, with up to three decimals, as the budget keeps
    // it: a ratio that rounds to zero would never refill it.
    let rule = "beyond what a protobuf `float` holds";
    let finite = !token_ratio.is_infinite();
    keep(RATIO, (), finite, format_args!("{token_ratio}: {rule}"))?;
    let rule = "must be at least 0.001 (gRFC A6: greater than zero, with up to three decimals)";
    let kept = token_ratio >= 0.0005;
    keep(RATIO, (), kept, format_args!("{token_ratio}: {rule}"))?;
    Ok((max_tokens, token_ratio))
}

impl TryFrom<raw::ServiceConfig> for ServiceConfig {
    type Error = ConfigError;

    fn try_from(raw: raw::ServiceConfig) -> Result<Self, ConfigError> {
        let throttling = raw.retry_throttling.map(throttling).transpose()?;
        let methods = raw
            .method_config
            .into_iter()
            .flatten()
            .map(method_config)
            .collect::<Result<Vec<_>, _>>()?;
        // A name in two method configs is an error to gRPC clients, which
        // would otherwise disagree with this library on which one applies.
        let mut seen = std::collections::HashSet::new();
        let mut names = methods.iter().flat_map(|method| &method.names);
        if let Some([service, method]) = names.find(|&name| !seen.insert(name)) {
            return Err(invalid(
                "methodConfig.name",
                format_args!(
                    "{{\"service\": {service:?}, \"method\": {method:?}}} is named by more than one method config"
                ),
            ));
        }
        Ok(ServiceConfig {
            methods,
            throttling,
        })
    }
}

pub(in crate::config::grpc) mod raw;
