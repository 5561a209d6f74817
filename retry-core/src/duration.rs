//! Duration strings: `"200ms"`, `"1.5s"`, `"1m30s"`.
//!
//! One grammar for both crates: the attribute, checking literals while
//! compiling, and a policy read from configuration at run time accept exactly
//! the same strings.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;
use core::time::Duration;

/// Why a duration string was rejected by [`parse_duration`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// The string is empty.
    Empty,
    /// A unit with no number before it, as in `"ms"`.
    MissingNumber,
    /// A number with no unit after it, as in `"200"`.
    MissingUnit,
    /// A unit that is not one of `ns`, `us`, `ms`, `s`, `m`, `h`.
    UnknownUnit(String),
    /// A character that is neither a digit, a `.` nor part of a unit.
    Unexpected(char),
    /// A number such as `"1."` or `"1.2.3"`.
    BadNumber,
    /// A unit used twice, or a larger unit after a smaller one, as in `"30s1m"`.
    UnitOrder,
    /// More than `Duration::MAX`.
    Overflow,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the string is empty"),
            Self::MissingNumber => f.write_str("a unit has no number before it"),
            Self::MissingUnit => f.write_str("a number has no unit after it"),
            Self::UnknownUnit(unit) => write!(f, "`{unit}` is not a unit"),
            Self::Unexpected(c) => write!(f, "unexpected character `{c}`"),
            Self::BadNumber => f.write_str("a number is malformed"),
            Self::UnitOrder => f.write_str("units must go from largest to smallest, each once"),
            Self::Overflow => f.write_str("the duration is too large"),
        }
    }
}

impl core::error::Error for DurationError {}

/// Nanoseconds per unit, largest first; the position gives the order units
/// must appear in. Also how `retry-runtime` writes a duration back.
#[doc(hidden)]
pub const UNITS: [(&str, u128); 6] = [
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// Parses a duration string: one or more groups of a number (integer or
/// decimal) and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`), largest unit first,
/// with no spaces: `"200ms"`, `"1.5s"`, `"1m30s"`, `"2h"`.
///
/// The string's exact value is rounded down to a whole nanosecond, once,
/// after the groups are added up: fractions of any length are exact, in any
/// unit. Never panics.
///
/// # Errors
///
/// A [`DurationError`] saying what is wrong with the string.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use retry_core::parse_duration;
///
/// assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
/// assert!(parse_duration("200").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    // Units go from largest to smallest, each once, so there are at most six
    // groups; they are read first and added up exactly afterwards.
    let mut groups = [Group::default(); UNITS.len()];
    let mut count = 0;
    let mut rest = text;
    // Index into `UNITS` that the next unit must be at or after.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() {
            return Err(match after.chars().next() {
                Some(c) if c.is_ascii_alphabetic() => DurationError::MissingNumber,
                Some(c) => DurationError::Unexpected(c),
                None => DurationError::Empty,
            });
        }
        let unit_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(match after.chars().next() {
                Some(c) => DurationError::Unexpected(c),
                None => DurationError::MissingUnit,
            });
        }
        let index = UNITS
            .iter()
            .position(|&(name, _)| name == unit)
            .ok_or_else(|| DurationError::UnknownUnit(unit.to_owned()))?;
        if index < next_unit {
            return Err(DurationError::UnitOrder);
        }
        next_unit = index + 1;
        groups[count] = Group::new(number, UNITS[index].1)?;
        count += 1;
        rest = after;
    }
    let total = exact_sum(&groups[..count])?;
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| DurationError::Overflow)?;
    // The remainder is below 10^9 and so fits a u32.
    let nanos = u32::try_from(total % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, nanos))
}

/// One number and its unit: `whole.fraction` times `unit` nanoseconds.
#[derive(Clone, Copy, Default)]
struct Group<'a> {
    whole: u128,
    /// The digits after the point, possibly none.
    fraction: &'a [u8],
    unit: u128,
}

impl<'a> Group<'a> {
    fn new(number: &'a str, unit: u128) -> Result<Self, DurationError> {
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let has_point = number.len() != whole.len();
        if whole.is_empty() || (has_point && fraction.is_empty()) || fraction.contains('.') {
            return Err(DurationError::BadNumber);
        }
        let mut value: u128 = 0;
        for digit in whole.bytes() {
            value = value
                .checked_mul(10)
                .and_then(|n| n.checked_add(u128::from(digit - b'0')))
                .ok_or(DurationError::Overflow)?;
        }
        Ok(Group {
            whole: value,
            fraction: fraction.as_bytes(),
            unit,
        })
    }
}

/// The exact sum of the groups in nanoseconds, rounded down once at the end.
///
/// Each fraction times its unit is a decimal with as many places as the
/// fraction has digits. Long multiplication from the last place to the
/// first, of every group at once, carries each group's product and the sum
/// of the products' digits column by column, so nothing below a nanosecond
/// is lost before the sum is rounded down: `"0.00000000002m"` is 1.2 ns, so
/// 1 ns, and `"0.0000000005s0.5ns"` is exactly 1 ns. Fractions of any length,
/// with no allocation.
fn exact_sum(groups: &[Group<'_>]) -> Result<u128, DurationError> {
    let places = groups.iter().map(|g| g.fraction.len()).max().unwrap_or(0);
    // The carry of each group's product into the next place up; below
    // `unit` (at most 3.6e12), so a digit times the unit plus it cannot
    // overflow.
    let mut carries = [0u128; UNITS.len()];
    // The carry of the column sum of the products' digits: at most 5.
    let mut column_carry: u128 = 0;
    for place in (0..places).rev() {
        let mut column = column_carry;
        for (group, carry) in groups.iter().zip(carries.iter_mut()) {
            if let Some(&digit) = group.fraction.get(place) {
                let product = u128::from(digit - b'0') * group.unit + *carry;
                column += product % 10;
                *carry = product / 10;
            }
        }
        column_carry = column / 10;
    }
    let mut total = column_carry;
    for (group, carry) in groups.iter().zip(carries) {
        let nanos = group
            .whole
            .checked_mul(group.unit)
            .and_then(|n| n.checked_add(carry))
            .ok_or(DurationError::Overflow)?;
        total = total.checked_add(nanos).ok_or(DurationError::Overflow)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, DurationError};
    use alloc::format;
    use core::time::Duration;

    #[test]
    fn accepts_every_unit_decimals_and_compounds() {
        let cases = [
            ("1ns", Duration::from_nanos(1)),
            ("250us", Duration::from_micros(250)),
            ("200ms", Duration::from_millis(200)),
            ("1.5s", Duration::from_millis(1500)),
            ("0.25ms", Duration::from_micros(250)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1m30s", Duration::from_secs(90)),
            ("1h2m3s4ms5us6ns", Duration::new(3723, 4_005_006)),
            ("007s", Duration::from_secs(7)),
            ("0s", Duration::ZERO),
            ("1.0000000009s", Duration::new(1, 0)),
            // Fractions past the unit's nanosecond places, exact (issue 10).
            ("0.00000000002m", Duration::from_nanos(1)),
            ("0.000000000009h", Duration::from_nanos(32)),
            ("0.0000000000166666666666666667m", Duration::from_nanos(1)),
            ("0.0000000000166666666666666666m", Duration::ZERO),
            // Sub-nanosecond parts of several groups add up before rounding.
            ("0.0000000005s0.5ns", Duration::from_nanos(1)),
            (
                "0.0000000000001h0.0000000004s0.0004us0.4ns",
                Duration::from_nanos(1),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_strings_with_the_reason() {
        let cases = [
            ("", DurationError::Empty),
            ("200", DurationError::MissingUnit),
            ("ms", DurationError::MissingNumber),
            ("10sec", DurationError::UnknownUnit("sec".into())),
            ("10 s", DurationError::Unexpected(' ')),
            ("-1s", DurationError::Unexpected('-')),
            ("1.s", DurationError::BadNumber),
            (".5s", DurationError::BadNumber),
            ("1.2.3s", DurationError::BadNumber),
            ("30s1m", DurationError::UnitOrder),
            ("1s1s", DurationError::UnitOrder),
            ("99999999999999999999h", DurationError::Overflow),
            ("1s2", DurationError::MissingUnit),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn the_largest_duration_parses_and_one_more_nanosecond_does_not() {
        let max = format!("{}s{}ns", u64::MAX, 999_999_999);
        assert_eq!(parse_duration(&max), Ok(Duration::MAX));
        let over = format!("{}s{}ns", u64::MAX, 1_000_000_000u64);
        assert_eq!(parse_duration(&over), Err(DurationError::Overflow));
    }
}
