//! What every fuzzed input must satisfy, shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/`) and the test that replays their saved corpus
//! (`tests/fuzz_corpus.rs`), so CI checks the same invariants on every
//! input the fuzzer kept.
#![allow(dead_code)]

use std::time::{Duration, UNIX_EPOCH};

use retry_runtime::{parse_duration, retry_after, Policy};

/// The first 8 bytes pick the clock (seconds from the epoch, signed, kept
/// within about 35,000 years of it); the rest is the header value.
pub fn retry_after(data: &[u8]) {
    let (clock, text) = match data.split_first_chunk::<8>() {
        Some((clock, rest)) => (i64::from_le_bytes(*clock) % (1 << 40), rest),
        None => (1_764_374_400, data),
    };
    let Ok(value) = std::str::from_utf8(text) else {
        return;
    };
    let now = if clock >= 0 {
        UNIX_EPOCH + Duration::from_secs(clock.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(clock.unsigned_abs())
    } + Duration::from_nanos(u64::from(data.first().copied().unwrap_or(0)) * 3_906_250);
    let parsed = retry_after::parse_at(value, now);
    // Surrounding spaces and tabs never change the meaning.
    assert_eq!(
        retry_after::parse_at(&format!(" \t{value}\t "), now),
        parsed
    );
    let trimmed = value.trim_matches(|c| c == ' ' || c == '\t');
    let Some(wait) = parsed else {
        return;
    };
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        let expected = trimmed
            .parse::<u64>()
            .map_or(Duration::MAX, Duration::from_secs);
        assert_eq!(wait, expected, "{value:?}");
        return;
    }
    // A date: it is reached exactly `wait` from now. (Not for RFC 850's
    // two-digit years, whose century moves with the clock.)
    assert!(trimmed.len() == 29 || trimmed.len() == 24 || trimmed.contains('-'));
    if wait > Duration::ZERO && !trimmed.contains('-') {
        assert_eq!(
            retry_after::parse_at(value, now + wait),
            Some(Duration::ZERO)
        );
        let just_before = now + wait - Duration::from_nanos(1);
        assert_eq!(
            retry_after::parse_at(value, just_before),
            Some(Duration::from_nanos(1)),
            "{value:?} at {now:?}"
        );
    }
}

/// Any string: an error value, or a duration whose canonical form reads
/// back the same and which configuration accepts alike.
pub fn duration(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(duration) = parse_duration(text) else {
        return;
    };
    assert!(text
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.' || b"nsumh".contains(&b)));
    let canonical = format!("{}s{}ns", duration.as_secs(), duration.subsec_nanos());
    assert_eq!(parse_duration(&canonical), Ok(duration));
    // Appending zeros to the last number's fraction changes nothing.
    if let Some(unit_at) = text.rfind(|c: char| c.is_ascii_digit()) {
        let (number, unit) = text.split_at(unit_at + 1);
        let zeros = if number
            .rsplit(|c: char| c.is_ascii_alphabetic())
            .next()
            .is_some_and(|n| n.contains('.'))
        {
            format!("{number}000000000000{unit}")
        } else {
            format!("{number}.000000000000{unit}")
        };
        assert_eq!(parse_duration(&zeros), Ok(duration), "{zeros:?}");
    }
}

/// Any TOML or JSON: an error value, or a policy that passes `validate`
/// and whose waits are total functions.
pub fn policy_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for policy in [
        toml::from_str::<Policy>(text).ok(),
        serde_json::from_str::<Policy>(text).ok(),
    ]
    .into_iter()
    .flatten()
    {
        assert_eq!(policy.validate(), Ok(()), "{text:?}");
        let mut previous = policy.base();
        let mut ceiling = Duration::ZERO;
        for n in [0, 1, 2, 63, 64, 1000, u32::MAX - 1, u32::MAX] {
            let next = policy.ceiling(n);
            assert!(next >= ceiling && next <= policy.cap());
            ceiling = next;
            for sample in [0, u64::MAX / 3, u64::MAX] {
                let wait = policy.wait_with(n, previous, sample);
                assert!(wait <= policy.cap());
                previous = wait;
            }
        }
        let _ = policy.worst_case_wait();
    }
}

/// A field of a JSON object under any of the names the loader accepts.
fn field<'a>(object: &'a serde_json::Value, names: &[&str]) -> Option<&'a serde_json::Value> {
    names.iter().find_map(|name| object.get(name))
}

/// A protobuf JSON duration as its spec has it, independently of the
/// loader: digits, an optional point and one to nine digits (the whole
/// seconds may be left out before them: `.1s`, as gRFC A6 writes), `s`, and
/// at most 315,576,000,000 seconds (negative durations are left out: no
/// field of a retry or hedging policy takes one; `-0s` is zero).
fn protobuf_duration(text: &str) -> Option<Duration> {
    if let Some(magnitude) = text.strip_prefix('-') {
        return protobuf_duration(magnitude).filter(Duration::is_zero);
    }
    let seconds = text.strip_suffix('s')?;
    let (whole, fraction) = match seconds.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (seconds, ""),
    };
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty())
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
        || (seconds.contains('.') && fraction.is_empty())
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok().filter(|&s| s <= 315_576_000_000)?
    };
    let nanos: u32 = format!("{fraction:0<9}").parse().ok()?;
    Some(Duration::new(whole, nanos))
}

/// Any bytes as a gRPC service config (JSON): an error value, or a config
/// that keeps gRFC A6's rules, whose durations are the protobuf durations
/// written, and whose policies validate and wait within 1.2 times their
/// cap (A6 as amended).
pub fn grpc_config(data: &[u8]) {
    use retry_runtime::config::grpc::ServiceConfig;
    use retry_runtime::Jitter;

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = serde_json::from_str::<ServiceConfig>(text) else {
        return;
    };
    // The file as written, to check what loaded against; `Value` refuses a
    // number past `f64` in a field the loader ignores (`"x": 2e400`), and
    // then only the rules are checked.
    let written = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(json) => {
            let methods = field(&json, &["methodConfig", "method_config", "MethodConfig"])
                .and_then(serde_json::Value::as_array)
                .cloned()
                .unwrap_or_default();
            assert_eq!(methods.len(), config.methods().len(), "{text:?}");
            methods.into_iter().map(Some).collect()
        }
        Err(_) => vec![None; config.methods().len()],
    };
    let duration_of = |object: &serde_json::Value, names: &[&str]| {
        // `null` is an absent field to the loader.
        field(object, names)
            .filter(|value| !value.is_null())
            .map(|value| {
                let text = value.as_str().expect("a duration that loaded is a string");
                protobuf_duration(text)
                    .unwrap_or_else(|| panic!("{text:?} is no protobuf duration"))
            })
    };
    let mut seen = std::collections::HashSet::new();
    for (method, json) in config.methods().iter().zip(&written) {
        for (service, name) in method.names() {
            assert!(!service.is_empty() || name.is_empty());
            assert!(seen.insert((service, name)), "{text:?}");
        }
        let policy = method.policy();
        assert_eq!(policy.validate(), Ok(()), "{text:?}");
        assert_eq!(policy.deadline(), method.timeout());
        assert!(method.timeout().is_none_or(|timeout| !timeout.is_zero()));
        assert!((1..=5).contains(&policy.max_attempts()));
        if let Some(json) = json {
            let timeout = duration_of(json, &["timeout", "Timeout"]);
            assert_eq!(method.timeout(), timeout);
        }
        if let Some(retry) = method.retry_policy() {
            assert!(!retry.base().is_zero() && !retry.cap().is_zero());
            assert!((2..=5).contains(&retry.max_attempts()));
            assert!(retry.multiplier() > 0.0);
            // gRFC A6's draw, none of the attribute's four jitters.
            assert!(!Jitter::ALL.contains(&retry.jitter()));
            assert_eq!(policy.max_attempts(), retry.max_attempts());
            if let Some(json) = json {
                let json = field(json, &["retryPolicy", "retry_policy", "RetryPolicy"]).unwrap();
                let initial = duration_of(
                    json,
                    &["initialBackoff", "initial_backoff", "InitialBackoff"],
                );
                let max = duration_of(json, &["maxBackoff", "max_backoff", "MaxBackoff"]);
                assert_eq!((Some(retry.base()), Some(retry.cap())), (initial, max));
            }
        }
        if let Some(hedging) = method.hedging_policy() {
            assert!((2..=5).contains(&hedging.max_attempts()));
            let _ = hedging.hedge();
            if let Some(json) = json {
                let json =
                    field(json, &["hedgingPolicy", "hedging_policy", "HedgingPolicy"]).unwrap();
                let delay = duration_of(json, &["hedgingDelay", "hedging_delay", "HedgingDelay"]);
                assert_eq!(hedging.delay(), delay.unwrap_or_default());
            }
        }
        let _ = method.retryable();
        let mut previous = policy.base();
        for n in [0, 1, 4, u32::MAX] {
            for sample in [0, u64::MAX] {
                let wait = policy.wait_with(n, previous, sample);
                assert!(wait <= policy.cap() + policy.cap() / 5);
                previous = wait;
            }
        }
        let _ = policy.worst_case_wait();
    }
    if let Some(budget) = config.budget() {
        assert!(budget.max_tokens() >= 1.0);
        // The ratio is kept to three decimals: one that rounded to zero
        // would never refill the budget.
        assert!(budget.token_ratio().is_finite() && budget.token_ratio() >= 0.001);
    }
    for path in ["/a/b", "", "/", "//", "/a/"] {
        let _ = config.for_path(path);
    }
}
