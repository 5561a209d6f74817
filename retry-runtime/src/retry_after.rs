//! The HTTP `Retry-After` field (RFC 9110 section 10.2.3): how long the
//! server asked the client to wait.
//!
//! ```text
//! Retry-After = HTTP-date / delay-seconds
//! ```
//!
//! `delay-seconds` is one or more digits. `HTTP-date` (RFC 9110 section
//! 5.6.7) has three forms, all accepted:
//!
//! | form | example |
//! |---|---|
//! | IMF-fixdate (preferred) | `Sun, 06 Nov 1994 08:49:37 GMT` |
//! | RFC 850 (obsolete) | `Sunday, 06-Nov-94 08:49:37 GMT` |
//! | asctime (obsolete) | `Sun Nov  6 08:49:37 1994` |
//!
//! Each edge the RFC leaves to the recipient is decided here, and checked
//! by the vectors in `tests/spec_vectors.rs`:
//!
//! - Parsing is case-sensitive, as the RFC's grammar is (`GMT`, `Nov`).
//! - The day name must be the right one for the date.
//! - An RFC 850 two-digit year that would be more than 50 years in the
//!   future means the most recent past year with those digits (section
//!   5.6.7). "More than 50 years" is counted on the calendar: the same
//!   month, day and time 50 years from now is not more, a second later is.
//!   The year is chosen first, then the date checked: `29-Feb-00` read in
//!   2060 means 2100, which has no February 29, so it is malformed.
//! - February 29 exists in leap years only (every fourth, not centuries
//!   other than every fourth one).
//! - A leap second (`23:59:60`, which the grammar's `time-of-day` allows)
//!   is the first second of the next minute.
//! - `delay-seconds` is `1*DIGIT`: leading zeros are fine, a sign (`+5`,
//!   `-1`), a fraction or an exponent is malformed. The grammar puts no
//!   bound on it: a number of seconds too large for a `Duration` (past 64
//!   bits) is `Duration::MAX`, a wait longer than any `cap`, so the loop
//!   stops with [`Stop::HintTooLong`](crate::Stop) rather than treating the
//!   header as garbage.
//! - Surrounding spaces and tabs (optional whitespace, which a field
//!   parser removes) are ignored; any other whitespace is malformed.
//! - A date at or before `now` is a zero wait; a date ahead is measured
//!   from `now` to the second, less the part of the current second gone, so
//!   that a wait never ends before the instant the date names.
//!
//! Anything else that does not match the grammar gives `None`: never a
//! panic.
//!
//! ```
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//! use retry_runtime::retry_after;
//!
//! assert_eq!(retry_after::parse("120"), Some(Duration::from_secs(120)));
//!
//! // 1994-11-06 08:49:37 UTC, seen ten seconds earlier.
//! let now = UNIX_EPOCH + Duration::from_secs(784_111_777 - 10);
//! let date = "Sun, 06 Nov 1994 08:49:37 GMT";
//! assert_eq!(retry_after::parse_at(date, now), Some(Duration::from_secs(10)));
//! assert_eq!(retry_after::parse_at("soon", now), None);
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wait a `Retry-After` value asks for, measured from now.
///
/// `None` for anything malformed. See [`parse_at`].
#[must_use]
pub fn parse(value: &str) -> Option<Duration> {
    parse_at(value, crate::timer::system_now())
}

/// The wait a `Retry-After` value asks for, measured from `now`: the
/// seconds given, or the time from `now` until the date given (zero for a
/// date in the past). Delay-seconds too large for a `Duration` are
/// `Duration::MAX`. `None` for anything malformed.
#[must_use]
pub fn parse_at(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits, so the parse fails only past `u64::MAX`: a very long
        // wait, not a malformed one.
        return Some(value.parse().map_or(Duration::MAX, Duration::from_secs));
    }
    // `now` in nanoseconds since the epoch, signed, so that dates before
    // 1970 work both ways: its whole seconds, rounded down, and the part of
    // the current second already gone.
    let nanos = match now.duration_since(UNIX_EPOCH) {
        Ok(after) => i128::try_from(after.as_nanos()).ok()?,
        Err(before) => -i128::try_from(before.duration().as_nanos()).ok()?,
    };
    let now_secs = i64::try_from(nanos.div_euclid(1_000_000_000)).ok()?;
    let gone = u64::try_from(nanos.rem_euclid(1_000_000_000)).ok()?;
    let date = http_date(value, now_secs)?;
    // Whole seconds from `now` to the date (none for a date at or before
    // it), less the part of the current second already gone.
    let seconds = u64::try_from(date.checked_sub(now_secs)?).unwrap_or(0);
    Some(Duration::from_secs(seconds).saturating_sub(Duration::from_nanos(gone)))
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
/// The long day names of RFC 850 dates, without the `day` they all end in.
const LONG_DAYS: [&str; 7] = ["Mon", "Tues", "Wednes", "Thurs", "Fri", "Satur", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Seconds since the Unix epoch of an HTTP-date in any of its three forms.
fn http_date(value: &str, now_secs: i64) -> Option<i64> {
    // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    let imf = read(value, "aaa, 99 bbb 9999 99:99:99 GMT");
    // asctime: `Sun Nov  6 08:49:37 1994`, the day one digit or two.
    let asctime = || {
        read(value, "aaa bbb _9 99:99:99 9999")
            .map(|[weekday, month, day, h, m, s, year]| [weekday, day, month, year, h, m, s])
    };
    // The forms differ in length (an RFC 850 date, of 30 bytes or more, is
    // the longest), so at most one of them reads a value.
    let Some([weekday, day, month, year, hour, minute, second]) = imf.or_else(asctime) else {
        return rfc850(value, now_secs);
    };
    let time = time_of_day(hour, minute, second)?;
    timestamp(year, month, day, time, weekday)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn rfc850(value: &str, now_secs: i64) -> Option<i64> {
    let (name, rest) = value.split_once(", ")?;
    let name = name.strip_suffix("day")?;
    let weekday = (0..).zip(LONG_DAYS).find(|&(_, long)| long == name)?.0;
    let [day, month, short_year, hour, minute, second] = read(rest, "99-bbb-99 99:99:99 GMT")?;
    let time = time_of_day(hour, minute, second)?;
    // RFC 9110: a timestamp that appears to be more than 50 years in the
    // future means the most recent past year with the same last two digits.
    // Of the candidates in the last, this and the next century, take the
    // latest that is not more than 50 years ahead, in calendar terms: the
    // same month, day and time 50 years on from now is not "more than 50
    // years" ahead, one second later is. The year is chosen before the date
    // is checked: a February 29 in a chosen year without one is malformed.
    let (now_year, now_month, now_day) = civil_from_days(now_secs.div_euclid(86_400));
    let now_time = now_secs.rem_euclid(86_400);
    let limit = (now_year + 50, now_month, now_day, now_time);
    let century = now_year - now_year.rem_euclid(100);
    let candidates = [century - 100, century, century + 100].map(|c| c + i64::from(short_year));
    let chosen = candidates
        .into_iter()
        .rev()
        .find(|&year| (year, i64::from(month) + 1, i64::from(day), i64::from(time)) <= limit)?;
    timestamp(u32::try_from(chosen).ok()?, month, day, time, weekday)
}

/// The fields of `value` read by `pattern`, byte for byte: `aaa` a day name
/// (`Sun`) and `bbb` a month (`Nov`), each read as its index from 0; `9` a
/// digit and `_` a digit or a space (read as 0), each run of them one
/// number; any other byte itself. `None` when `value` does not match.
fn read<const N: usize>(value: &str, pattern: &str) -> Option<[u32; N]> {
    let (value, pattern) = (value.as_bytes(), pattern.as_bytes());
    if value.len() != pattern.len() {
        return None;
    }
    let (mut fields, mut field) = ([0u32; N], 0);
    for (at, (&byte, &kind)) in value.iter().zip(pattern).enumerate() {
        // The last byte of its field (a digit or a space before a digit
        // is in the digit's number).
        let last = pattern
            .get(at + 1)
            .is_none_or(|&next| next != kind && next != b'9');
        match kind {
            b'a' | b'b' if last => {
                let names: &[&str] = if kind == b'a' { &DAYS } else { &MONTHS };
                let name = value.get(at.checked_sub(2)?..=at)?;
                let index = names.iter().position(|known| known.as_bytes() == name)?;
                *fields.get_mut(field)? = u32::try_from(index).ok()?;
            }
            b'9' | b'_' => {
                let digit = match byte {
                    b'0'..=b'9' => u32::from(byte - b'0'),
                    b' ' if kind == b'_' => 0,
                    _ => return None,
                };
                let number = fields.get_mut(field)?;
                *number = *number * 10 + digit;
                if !last {
                    continue;
                }
            }
            b'a' | b'b' => continue,
            _ if byte == kind => continue,
            _ => return None,
        }
        field += 1;
    }
    Some(fields)
}

/// `hh:mm:ss` as seconds into the day; a leap second (`:60`) is allowed, as
/// the RFC allows it.
fn time_of_day(hour: u32, minute: u32, second: u32) -> Option<u32> {
    (hour < 24 && minute < 60 && second <= 60).then_some(hour * 3600 + minute * 60 + second)
}

/// Seconds since the epoch of a valid date and time, with its day name
/// checked (`weekday` counts from Monday, `month` from 0).
fn timestamp(year: u32, month: u32, day: u32, seconds: u32, weekday: u32) -> Option<i64> {
    let (year, month, day) = (i64::from(year), i64::from(month) + 1, i64::from(day));
    let days = days_from_civil(year, month, day);
    // The day exists in that month (February 29 in leap years only) if it
    // reads back as itself. 1970-01-01 was a Thursday, index 3 from Monday.
    // The day is counted before adding the time, which may be a leap
    // second into the next.
    let valid = civil_from_days(days) == (year, month, day);
    (valid && (days + 3).rem_euclid(7) == i64::from(weekday))
        .then_some(days * 86_400 + i64::from(seconds))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    // The month from March, when the leap day falls at the year's end.
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The year, month (from 1) and day of a day counted from 1970-01-01: the
/// inverse of `days_from_civil` (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    // From March: back to a month of the calendar year.
    let month = (month_index + 2) % 12 + 1;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
