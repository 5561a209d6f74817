//! The HTTP-date parser against the `httpdate` crate, over generated dates
//! in all three forms and single-byte changes of them.
//!
//! Intended differences, where this parser follows RFC 9110 and `httpdate`
//! does not (each is checked below, not skipped silently):
//!
//! - Leap seconds: `23:59:60` is valid in RFC 9110's grammar (`second =
//!   2DIGIT`, "60 for leap seconds"); `httpdate` rejects it. Here it is the
//!   first second of the next day.
//! - RFC 850's two-digit years: RFC 9110 reads a year that appears more than
//!   50 years in the future as the most recent past year with those digits,
//!   relative to now; `httpdate` maps 70..=99 to 19xx and 00..=69 to 20xx
//!   whatever the date.
//! - Dates before 1970: valid HTTP-dates; `httpdate` cannot represent them.
//!   Here they are dates in the past (a zero wait) or, for a clock before
//!   1970, measured from it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use retry_runtime::retry_after::parse_at;

/// RFC 9110's 50 years, in Gregorian years of seconds.
const FIFTY_YEARS: u64 = 50 * 31_556_952;

/// The last second of 9999, the largest date `httpdate` writes.
const LAST: u64 = 253_402_300_799;

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

/// The three forms of one instant, from `httpdate`'s IMF-fixdate.
fn forms(seconds: u64) -> [String; 3] {
    let imf = httpdate::fmt_http_date(at(seconds));
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let (day_name, day, month, year, time) = (
        &imf[0..3],
        &imf[5..7],
        &imf[8..11],
        &imf[12..16],
        &imf[17..25],
    );
    let long_day = match day_name {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    };
    let rfc850 = format!("{long_day}, {day}-{month}-{} {time} GMT", &year[2..]);
    let asctime_day = day
        .strip_prefix('0')
        .map_or(day.to_owned(), |d| format!(" {d}"));
    let asctime = format!("{day_name} {month} {asctime_day} {time} {year}");
    [imf, rfc850, asctime]
}

/// The wait from `now` until `date`, as the RFC defines it.
fn wait(date: SystemTime, now: SystemTime) -> Duration {
    date.duration_since(now).unwrap_or(Duration::ZERO)
}

#[path = "support/cases.rs"]
mod cases;
use cases::cases;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(20_000)))]

    #[test]
    fn generated_dates_agree_in_every_form(
        seconds in prop_oneof![0..=LAST, 0u64..4_102_444_800, Just(0), Just(LAST)],
        now in 0u64..4_102_444_800,
        nanos in 0u32..1_000_000_000,
    ) {
        let now = at(now) + Duration::from_nanos(u64::from(nanos));
        let [imf, rfc850, asctime] = forms(seconds);
        for date in [&imf, &asctime] {
            let theirs = httpdate::parse_http_date(date).unwrap();
            prop_assert_eq!(theirs, at(seconds));
            prop_assert_eq!(parse_at(date, now), Some(wait(theirs, now)), "{}", date);
        }
        // RFC 850: `httpdate` reads the same instant only where its fixed
        // 1970-2069 window picks the century the 50-year rule picks: the
        // latest that is not more than 50 years after now.
        let theirs = httpdate::parse_http_date(&rfc850).ok();
        let ours = parse_at(&rfc850, now);
        let horizon = now + Duration::from_secs(FIFTY_YEARS);
        let rule_picks_it = at(seconds) <= horizon
            && at(seconds) + Duration::from_secs(36_524 * 86_400) > horizon;
        if theirs == Some(at(seconds)) && rule_picks_it {
            prop_assert_eq!(ours, Some(wait(at(seconds), now)), "{}", rfc850);
        }
        // Either way the year read is never more than 50 years ahead, and a
        // weekday that fits no allowed century is refused.
        if let Some(ahead) = ours {
            prop_assert!(ahead <= Duration::from_secs(FIFTY_YEARS));
        }
    }

    #[test]
    fn changed_dates_are_accepted_and_refused_alike(
        seconds in 0..=LAST,
        form in 0usize..3,
        position in any::<prop::sample::Index>(),
        byte in prop_oneof![Just(b' '), Just(b'0'), Just(b'9'), Just(b'6'), Just(b':'), Just(b'-'), Just(b','), Just(b'G'), 0x20u8..0x7f],
        change in 0u8..3,
    ) {
        let date = forms(seconds)[form].clone();
        let mut bytes = date.into_bytes();
        let i = position.index(bytes.len());
        match change {
            0 => bytes[i] = byte,
            1 => bytes.insert(i, byte),
            _ => { bytes.remove(i); }
        }
        let text = String::from_utf8(bytes).unwrap();
        let theirs = httpdate::parse_http_date(&text);
        // A clock before every date either parser reads: both must then
        // return the full distance, or both refuse.
        let ours = parse_at(&text, UNIX_EPOCH);
        let early = UNIX_EPOCH - Duration::from_secs(2100 * 31_556_952);
        let before_1970 = matches!(parse_at(&text, early), Some(wait) if early + wait < UNIX_EPOCH);
        let known_difference = before_1970
            || text.contains(":60")
            || (form == 1 && text.contains('-'))
            || text.bytes().all(|b| b.is_ascii_digit());
        if !known_difference {
            prop_assert_eq!(ours, theirs.ok().map(|date| wait(date, UNIX_EPOCH)), "{:?}", text);
        }
    }
}

#[test]
fn the_intended_differences() {
    let day_after = at(86_400);
    // A leap second: the first second of the next day here.
    let leap = "Thu, 01 Jan 1970 23:59:60 GMT";
    assert!(httpdate::parse_http_date(leap).is_err());
    assert_eq!(
        parse_at(leap, UNIX_EPOCH),
        Some(Duration::from_secs(86_400))
    );
    assert_eq!(parse_at(leap, day_after), Some(Duration::ZERO));
    // Before 1970: in the past for a clock in 1970, a wait for one before.
    let before = "Wed, 31 Dec 1969 23:59:00 GMT";
    assert!(httpdate::parse_http_date(before).is_err());
    assert_eq!(parse_at(before, UNIX_EPOCH), Some(Duration::ZERO));
    assert_eq!(
        parse_at(before, UNIX_EPOCH - Duration::from_secs(120)),
        Some(Duration::from_secs(60))
    );
    // RFC 850 in 2026: "76" is 2076 if that is within 50 years, 1976 if not.
    let now = at(1_795_910_400); // 2026-11-29
    let in_2076 = "Saturday, 31-Oct-76 00:00:00 GMT"; // 2076-10-31, a Saturday
    assert_eq!(
        httpdate::parse_http_date(in_2076).ok(),
        None,
        "httpdate reads 1976-10-31, a Sunday, and refuses the weekday"
    );
    assert!(parse_at(in_2076, now).unwrap() > Duration::from_secs(49 * 31_556_952));
}
