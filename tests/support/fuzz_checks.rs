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
