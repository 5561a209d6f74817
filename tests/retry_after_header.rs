//! `retry_after::parse_at` against RFC 9110's own examples, every date form,
//! the two-digit-year rule, and hostile input.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_runtime::retry_after::{parse, parse_at};

/// 2026-11-29 00:00:00 UTC, a Sunday.
const NOW: u64 = 1_795_910_400;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn now() -> SystemTime {
    at(NOW)
}

#[test]
fn delay_seconds() {
    assert_eq!(parse_at("120", now()), Some(Duration::from_secs(120)));
    assert_eq!(parse_at("0", now()), Some(Duration::ZERO));
    assert_eq!(parse_at("00030", now()), Some(Duration::from_secs(30)));
    assert_eq!(
        parse_at(&u64::MAX.to_string(), now()),
        Some(Duration::from_secs(u64::MAX))
    );
    assert_eq!(parse("5"), Some(Duration::from_secs(5)));
}

#[test]
fn delay_seconds_past_u64_are_the_longest_wait_not_garbage() {
    // RFC 9110 bounds delay-seconds nowhere: a value past `u64::MAX` is a
    // very long wait, which the loop refuses as longer than `cap` (issue 10).
    for value in [
        "18446744073709551616",
        "99999999999999999999999",
        "000000000000000000000018446744073709551616",
    ] {
        assert_eq!(parse_at(value, now()), Some(Duration::MAX), "{value}");
    }
    assert_eq!(
        parse_at("000000000000000000000018446744073709551615", now()),
        Some(Duration::from_secs(u64::MAX))
    );
}

#[test]
fn the_rfc_examples_in_all_three_date_forms() {
    // RFC 9110 section 5.6.7: the same instant, 1994-11-06 08:49:37 UTC.
    let instant = 784_111_777;
    for value in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ] {
        assert_eq!(
            parse_at(value, at(instant - 90)),
            Some(Duration::from_secs(90)),
            "{value}"
        );
        assert_eq!(
            parse_at(value, at(instant)),
            Some(Duration::ZERO),
            "{value}"
        );
    }
    // RFC 9110 section 10.2.3.
    let new_year = 946_684_799; // 1999-12-31 23:59:59
    assert_eq!(
        parse_at("Fri, 31 Dec 1999 23:59:59 GMT", at(new_year - 3600)),
        Some(Duration::from_secs(3600))
    );
}

#[test]
fn a_date_in_the_past_is_a_zero_wait() {
    assert_eq!(
        parse_at("Fri, 31 Dec 1999 23:59:59 GMT", now()),
        Some(Duration::ZERO)
    );
    assert_eq!(
        parse_at("Thu, 01 Jan 1970 00:00:00 GMT", now()),
        Some(Duration::ZERO)
    );
    assert_eq!(
        parse_at("Mon, 01 Jan 0001 00:00:00 GMT", now()),
        Some(Duration::ZERO)
    );
    assert_eq!(
        parse_at(
            "Thu, 01 Jan 1970 00:00:01 GMT",
            UNIX_EPOCH - Duration::from_secs(5)
        ),
        Some(Duration::from_secs(6))
    );
}

#[test]
fn future_dates_in_every_form() {
    // 2026-11-29 00:00:30, half a minute after `now`.
    assert_eq!(
        parse_at("Sun, 29 Nov 2026 00:00:30 GMT", now()),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_at("Sunday, 29-Nov-26 00:00:30 GMT", now()),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_at("Sun Nov 29 00:00:30 2026", now()),
        Some(Duration::from_secs(30))
    );
    // Sub-second precision of `now` is honoured.
    let later = now() + Duration::from_millis(250);
    assert_eq!(
        parse_at("Sun, 29 Nov 2026 00:00:30 GMT", later),
        Some(Duration::from_millis(29_750))
    );
    // Leap years and the far future.
    assert_eq!(
        parse_at("Thu, 29 Feb 2024 00:00:00 GMT", at(1_709_164_800 - 1)),
        Some(Duration::from_secs(1))
    );
    assert_eq!(
        parse_at("Fri, 31 Dec 9999 00:00:00 GMT", at(253_402_214_400 - 7)),
        Some(Duration::from_secs(7))
    );
    // A leap second is accepted: 23:59:60 is the next day's first second.
    assert_eq!(
        parse_at("Sun, 29 Nov 2026 23:59:60 GMT", now()),
        Some(Duration::from_secs(86_400))
    );
}

#[test]
fn two_digit_years_more_than_fifty_years_ahead_are_in_the_past() {
    // In 2026, "70" is 2070 (44 years ahead) ...
    assert_eq!(
        parse_at("Wednesday, 01-Jan-70 00:00:00 GMT", now()),
        Some(Duration::from_secs(3_155_760_000 - NOW))
    );
    // ... "76" is 2076 (exactly 50 years ahead, not more) ...
    assert_eq!(
        parse_at("Monday, 15-Jun-76 00:00:00 GMT", now()),
        Some(Duration::from_secs(3_359_404_800 - NOW))
    );
    // ... and "77" is 1977, in the past.
    assert_eq!(
        parse_at("Wednesday, 15-Jun-77 00:00:00 GMT", now()),
        Some(Duration::ZERO)
    );
    // "99" is 1999.
    assert_eq!(
        parse_at("Friday, 31-Dec-99 23:59:59 GMT", now()),
        Some(Duration::ZERO)
    );
    // Read in 2026 the year 2077 must not be chosen: Tuesday matches 2077.
    assert_eq!(parse_at("Tuesday, 15-Jun-77 00:00:00 GMT", now()), None);
}

#[test]
fn malformed_values_are_none() {
    let malformed = [
        "",
        " ",
        "-1",
        "+5",
        "1.5",
        "1e3",
        "0x10",
        "12 34",
        "120s",
        "one hundred",
        // IMF-fixdate
        "sun, 06 Nov 1994 08:49:37 GMT",
        "SUN, 06 NOV 1994 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun,06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Thu, 31 Nov 1994 08:49:37 GMT",
        "Sun, 29 Feb 1900 08:49:37 GMT",
        "Mon, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMTX",
        "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov -994 08:49:37 GMT",
        "Sun, 0a Nov 1994 08:49:37 GMT",
        // RFC 850
        "Sun, 06-Nov-94 08:49:37 GMT",
        "sunday, 06-Nov-94 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sunday, 06-nov-94 08:49:37 GMT",
        "Sunday, 6-Nov-94 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 UTC",
        "Monday, 06-Nov-94 08:49:37 GMT",
        "Sunday,06-Nov-94 08:49:37 GMT",
        // asctime
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov 06 08:49:37 94",
        "Sun Nov  6 08:49:37 1994 GMT",
        "sun Nov  6 08:49:37 1994",
        "Sun Nov  6 08:49:37  1994",
        "Mon Nov  6 08:49:37 1994",
        "Sun Nov   6 08:49:37 1994",
        "Sun Nov  0 08:49:37 1994",
        // Not ASCII, and byte offsets that fall inside a character.
        "Sün, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Növ 1994 08:49:3 GMT",
        "１２０",
        "😀😀😀😀😀😀😀",
        "\u{0}",
    ];
    for value in malformed {
        assert_eq!(parse_at(value, now()), None, "{value:?}");
    }
}

#[test]
fn surrounding_whitespace_is_trimmed() {
    assert_eq!(parse_at(" 120\t", now()), Some(Duration::from_secs(120)));
    assert_eq!(
        parse_at("  Sun, 29 Nov 2026 00:00:30 GMT ", now()),
        Some(Duration::from_secs(30))
    );
}

#[test]
fn no_input_panics() {
    // Every prefix, every single-byte change and every truncation of valid
    // values, at extreme clocks.
    let valid = [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "120",
    ];
    let clocks = [
        UNIX_EPOCH,
        now(),
        UNIX_EPOCH - Duration::from_secs(1 << 40),
        at(1 << 40),
    ];
    let replacements = [b'0', b'9', b' ', b'-', b',', b':', b'Z', b'a', 0xff];
    for value in valid {
        for end in 0..=value.len() {
            for clock in clocks {
                let _ = parse_at(&value[..end], clock);
            }
        }
        for i in 0..value.len() {
            for &byte in &replacements {
                let mut bytes = value.as_bytes().to_vec();
                bytes[i] = byte;
                let text = String::from_utf8_lossy(&bytes);
                for clock in clocks {
                    let _ = parse_at(&text, clock);
                }
            }
        }
    }
    let long = "9".repeat(100_000);
    assert_eq!(parse_at(&long, now()), Some(Duration::MAX));
}

#[test]
fn dates_before_1970_are_measured_from_a_clock_before_1970() {
    // 1969-01-01 00:01:00 UTC, seen one year (365 days) before the epoch.
    let year_before = UNIX_EPOCH - Duration::from_secs(365 * 86_400);
    let minute = "Wed, 01 Jan 1969 00:01:00 GMT";
    assert_eq!(parse_at(minute, year_before), Some(Duration::from_secs(60)));
    let a_little_later = year_before + Duration::from_millis(250);
    assert_eq!(
        parse_at(minute, a_little_later),
        Some(Duration::from_millis(59_750))
    );
    assert_eq!(
        parse_at("Wed, 01 Jan 1969 00:00:00 GMT", a_little_later),
        Some(Duration::ZERO)
    );
}

#[test]
fn the_fifty_year_rule_compares_whole_timestamps() {
    // Read on 2026-11-29: 2076-12-01 is 50 years and two days ahead, so
    // "01-Dec-76" is 1976-12-01 (a Wednesday), in the past.
    assert_eq!(
        parse_at("Wednesday, 01-Dec-76 00:00:00 GMT", now()),
        Some(Duration::ZERO)
    );
    // 2076-12-01 was a Tuesday; that reading is not allowed.
    assert_eq!(parse_at("Tuesday, 01-Dec-76 00:00:00 GMT", now()), None);
}
