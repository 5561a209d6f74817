//! The parsers against independent oracles: every input the grammar accepts
//! parses to exactly the value the grammar gives it, and everything else is
//! an error value, never a panic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use retry_runtime::{parse_duration, retry_after::parse_at, DurationError};

const UNITS: [(&str, u128); 6] = [
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// What the grammar says `text` is, read with a scanner of its own: `None`
/// if it is not in the grammar, `Some(None)` if it is but exceeds
/// `Duration::MAX`, else the exact value rounded down to a nanosecond.
/// Exact arithmetic over a common denominator of 10^places; fractions are
/// kept to 24 digits here, which the generators respect.
fn oracle(text: &str) -> Option<Option<u128>> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut last_rank = None;
    let mut groups = Vec::new();
    while i < chars.len() {
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let whole: String = chars[start..i].iter().collect();
        let mut fraction = String::new();
        if i < chars.len() && chars[i] == '.' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            fraction = chars[start..i].iter().collect();
            if fraction.is_empty() {
                return None;
            }
        }
        if whole.is_empty() {
            return None;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_lowercase() {
            i += 1;
        }
        let unit: String = chars[start..i].iter().collect();
        let rank = UNITS.iter().position(|(name, _)| *name == unit)?;
        if last_rank.is_some_and(|last| rank <= last) {
            return None;
        }
        last_rank = Some(rank);
        groups.push((whole, fraction, UNITS[rank].1));
    }
    if groups.is_empty() {
        return None;
    }
    const PLACES: u32 = 24;
    let scale = 10u128.pow(PLACES);
    let mut wholes: u128 = 0;
    let mut fractions: u128 = 0; // in units of 10^-PLACES ns
    for (whole, fraction, unit) in groups {
        let whole = whole.trim_start_matches('0');
        if whole.len() > 30 {
            return Some(None);
        }
        let value: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().unwrap()
        };
        let Some(nanos) = value.checked_mul(unit) else {
            return Some(None);
        };
        let Some(sum) = wholes.checked_add(nanos) else {
            return Some(None);
        };
        wholes = sum;
        assert!(fraction.len() <= PLACES as usize, "oracle limit");
        let digits = format!("{fraction:0<24}");
        fractions += digits.parse::<u128>().unwrap() * unit;
    }
    let Some(total) = wholes.checked_add(fractions / scale) else {
        return Some(None);
    };
    let max = u128::from(u64::MAX) * 1_000_000_000 + 999_999_999;
    Some((total <= max).then_some(total))
}

fn group() -> impl Strategy<Value = (String, Option<String>)> {
    (
        prop_oneof!["[0-9]{1,3}", "0{0,5}[0-9]{1,12}", "[0-9]{15,22}"],
        prop::option::of(prop_oneof!["[0-9]{1,3}", "[0-9]{8,24}", "0{10,20}[1-9]"]),
    )
}

/// A string of the grammar: some units, in order, each with a number.
fn valid_duration() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(any::<bool>(), 6),
        prop::collection::vec(group(), 6),
    )
        .prop_map(|(present, groups)| {
            let mut text = String::new();
            for ((&(unit, _), keep), (whole, fraction)) in UNITS.iter().zip(present).zip(groups) {
                if keep || text.is_empty() && unit == "ns" {
                    text.push_str(&whole);
                    if let Some(fraction) = fraction {
                        text.push('.');
                        text.push_str(&fraction);
                    }
                    text.push_str(unit);
                }
            }
            text
        })
}

fn as_nanos(result: &Result<Duration, DurationError>) -> Option<u128> {
    result.as_ref().ok().map(Duration::as_nanos)
}

#[path = "support/cases.rs"]
mod cases;
use cases::cases;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(20_000)))]

    #[test]
    fn grammar_strings_parse_to_their_exact_value(text in valid_duration()) {
        let expected = oracle(&text).expect("generated in the grammar");
        let parsed = parse_duration(&text);
        match expected {
            Some(nanos) => prop_assert_eq!(as_nanos(&parsed), Some(nanos), "{}", text),
            None => prop_assert_eq!(parsed, Err(DurationError::Overflow), "{}", text),
        }
    }

    #[test]
    fn any_other_string_is_an_error_value(
        text in prop_oneof![
            "[0-9.a-z]{0,12}",
            "[0-9]{1,4}(\\.[0-9]{0,3})?(h|m|s|ms|us|ns|sec|min|d|S|M)?[0-9.]{0,3}(h|m|s|ms|us|ns)?",
            any::<String>(),
            "[ 0-9.smh\u{e9}\u{1F600}-]{0,10}",
        ],
    ) {
        let parsed = parse_duration(&text);
        match oracle(&text) {
            Some(Some(nanos)) => prop_assert_eq!(as_nanos(&parsed), Some(nanos), "{:?}", text),
            Some(None) => prop_assert_eq!(parsed, Err(DurationError::Overflow)),
            None => prop_assert!(parsed.is_err(), "{:?} parsed as {:?}", text, parsed),
        }
    }

    #[test]
    fn delay_seconds_are_that_many_seconds(
        digits in prop_oneof!["[0-9]{1,19}", "0{0,30}[0-9]{1,25}", "[0-9]{40,80}"],
        now in any::<u32>(),
    ) {
        let now = UNIX_EPOCH + Duration::from_secs(u64::from(now));
        let significant = digits.trim_start_matches('0');
        let expected = if significant.len() > 20 {
            Duration::MAX
        } else {
            let value: u128 = if significant.is_empty() { 0 } else { significant.parse().unwrap() };
            u64::try_from(value).map_or(Duration::MAX, Duration::from_secs)
        };
        prop_assert_eq!(parse_at(&digits, now), Some(expected));
    }

    #[test]
    fn imf_and_asctime_dates_are_the_seconds_to_them(
        year in 0u32..=9999,
        month in 1u32..=12,
        day in 1u32..=31,
        hour in 0u32..24,
        minute in 0u32..60,
        second in 0u32..=60,
        now in -20_000_000_000i64..300_000_000_000,
        nanos in 0u32..1_000_000_000,
        name_shift in 0u32..7,
    ) {
        prop_assume!(day <= days_in(year, month));
        let date = seconds_of(year, month, day) + i64::from(hour * 3600 + minute * 60 + second);
        let weekday = (days_before(year, month, day) + 3 + i64::from(name_shift)).rem_euclid(7);
        let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let name = names[usize::try_from(weekday).unwrap()];
        let month_name = months[usize::try_from(month - 1).unwrap()];
        let imf = format!("{name}, {day:02} {month_name} {year:04} {hour:02}:{minute:02}:{second:02} GMT");
        let asctime = format!("{name} {month_name} {day:>2} {hour:02}:{minute:02}:{second:02} {year:04}");
        let clock = clock(now, nanos);
        let expected = (name_shift == 0).then(|| {
            let wait = i128::from(date) * 1_000_000_000 - (i128::from(now) * 1_000_000_000 + i128::from(nanos));
            let wait = wait.max(0);
            Duration::new(
                u64::try_from(wait / 1_000_000_000).unwrap(),
                u32::try_from(wait % 1_000_000_000).unwrap(),
            )
        });
        prop_assert_eq!(parse_at(&imf, clock), expected, "{}", imf);
        prop_assert_eq!(parse_at(&asctime, clock), expected, "{}", asctime);
    }
}

fn clock(seconds: i64, nanos: u32) -> SystemTime {
    let whole = Duration::from_secs(seconds.unsigned_abs());
    if seconds >= 0 {
        UNIX_EPOCH + whole + Duration::from_nanos(u64::from(nanos))
    } else {
        UNIX_EPOCH - whole + Duration::from_nanos(u64::from(nanos))
    }
}

fn leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 0000-01-01 to the start of `year`: 365 a year plus one for
/// each leap year before it (every 4th, not every 100th, every 400th).
fn days_to_year(year: u32) -> i64 {
    let y = i64::from(year);
    365 * y + (y + 3) / 4 - (y + 99) / 100 + (y + 399) / 400
}

/// Days from 1970-01-01, counted by whole years and then month by month.
fn days_before(year: u32, month: u32, day: u32) -> i64 {
    let mut days = days_to_year(year) - days_to_year(1970);
    for m in 1..month {
        days += i64::from(days_in(year, m));
    }
    days + i64::from(day) - 1
}

fn seconds_of(year: u32, month: u32, day: u32) -> i64 {
    days_before(year, month, day) * 86_400
}

// ---------------------------------------------------------------------------
// The headers that carry retries across services (DESIGN §4.17), from any
// bytes a header value can hold: a deadline header that is not one
// well-formed, positive number is ignored and the request is served; a
// mark is read exactly when it is one and on a failure; nothing panics.
// ---------------------------------------------------------------------------

use http::{HeaderValue, Request, Response};
use retry_runtime::classify::{grpc, http as status};
use retry_runtime::tower::ServerLayer;
use retry_runtime::{current_attempt, last_call, Policy, Stop};
use tower::ServiceExt;

/// Header values, mostly near the grammars (digits, units, signs, blanks),
/// sometimes any byte; each tried as a `HeaderValue`.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(
            prop_oneof![
                Just(b'0'),
                0x30u8..=0x39,
                prop::sample::select(b"HMSmunhs.-+ \t,e".to_vec())
            ],
            0..12,
        ),
        proptest::collection::vec(any::<u8>(), 0..6),
        "[0-9]{15,25}".prop_map(String::into_bytes),
    ]
}

/// Up to three values of one header.
fn repeated() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(header_bytes(), 0..=3)
}

/// The value of a header that has exactly one.
fn single(values: &[Vec<u8>]) -> Option<&[u8]> {
    match values {
        [one] => Some(one),
        _ => None,
    }
}

/// `x-envoy-expected-rq-timeout-ms`: whole milliseconds, digits only,
/// within a `u64`, not zero.
fn envoy_oracle(value: &[u8]) -> Option<Duration> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let millis: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    (millis > 0).then(|| Duration::from_millis(millis))
}

/// `grpc-timeout`: 1 to 8 digits and a unit, not zero.
fn grpc_oracle(value: &[u8]) -> Option<Duration> {
    let (unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let number: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let nanos_per = match unit {
        b'H' => 3_600_000_000_000,
        b'M' => 60_000_000_000,
        b'S' => 1_000_000_000,
        b'm' => 1_000_000,
        b'u' => 1_000,
        b'n' => 1,
        _ => return None,
    };
    let nanos = u128::from(number) * nanos_per;
    (nanos > 0).then(|| {
        Duration::new(
            u64::try_from(nanos / 1_000_000_000).unwrap(),
            u32::try_from(nanos % 1_000_000_000).unwrap(),
        )
    })
}

/// Appends each value that is a valid header value; gives the values kept.
fn append(request: &mut Request<()>, name: &'static str, values: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let kept: Vec<Vec<u8>> = values
        .iter()
        .filter(|value| HeaderValue::from_bytes(value).is_ok())
        .cloned()
        .collect();
    for value in &kept {
        let value = HeaderValue::from_bytes(value).unwrap();
        request.headers_mut().append(name, value);
    }
    kept
}

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(5_000)))]

    #[test]
    fn a_server_reads_the_time_its_caller_sent_or_ignores_it(
        grpc_values in repeated(),
        envoy_values in repeated(),
    ) {
        let mut request = Request::new(());
        let grpc_values = append(&mut request, "grpc-timeout", &grpc_values);
        let envoy_values = append(&mut request, "x-envoy-expected-rq-timeout-ms", &envoy_values);
        let expected = [
            single(&grpc_values).and_then(grpc_oracle),
            single(&envoy_values).and_then(envoy_oracle),
        ]
        .into_iter()
        .flatten()
        .min();
        let handler = tower::service_fn(|_: Request<()>| async {
            let left = current_attempt().and_then(|attempt| attempt.time_left());
            Ok::<_, std::convert::Infallible>(Response::new(left))
        });
        let server = tower::ServiceBuilder::new().layer(ServerLayer::new()).service(handler);
        let response = paused().block_on(server.oneshot(request)).unwrap();
        prop_assert_eq!(response.status(), 200, "served");
        prop_assert_eq!(response.into_body().into_inner(), Some(expected));
    }

    #[test]
    fn a_mark_is_read_when_it_is_one_on_a_failure(
        code in prop_oneof![Just(503u16), Just(500), Just(429), Just(200), Just(404), 100u16..600],
        exhausted in repeated(),
        overloaded in repeated(),
    ) {
        let mut template = Request::new(());
        let exhausted = append(&mut template, "retry-exhausted", &exhausted);
        let overloaded = append(&mut template, "x-envoy-overloaded", &overloaded);
        let status_code = http::StatusCode::from_u16(code).unwrap();
        let one = |values: &[Vec<u8>]| single(values).is_some_and(|value| !value.is_empty());
        let transient = status::is_transient_status(status_code);
        let marked = transient && (one(&exhausted) || one(&overloaded));
        let answer = || {
            let mut response = Response::new(());
            *response.status_mut() = status_code;
            *response.headers_mut() = template.headers().clone();
            response
        };
        prop_assert_eq!(status::is_transient_response(&answer()), transient);
        let policy = Policy::new().with_max_attempts(2).with_base(Duration::from_millis(1));
        let mut calls = 0;
        let result: Result<Response<()>, std::io::Error> = paused().block_on(
            policy.retrying().on_ok(status::is_transient_response).run(|| {
                calls += 1;
                let answer = answer();
                async move { Ok(answer) }
            }),
        );
        prop_assert!(result.is_ok());
        let expected = if marked {
            (Stop::Nested, 1)
        } else if transient {
            (Stop::Exhausted, 2)
        } else {
            (Stop::Done, 1)
        };
        let last = last_call().unwrap();
        prop_assert_eq!((last.reason(), last.attempts()), expected);
        prop_assert_eq!(calls, expected.1);
    }

    #[test]
    fn a_grpc_pushback_that_is_not_a_wait_is_a_give_up_below(
        value in prop_oneof![
            header_bytes(),
            "-[0-9]{1,4}".prop_map(String::into_bytes),
            "[0-9]{1,25}".prop_map(String::into_bytes),
        ],
    ) {
        let Ok(value) = tonic::metadata::MetadataValue::try_from(value.as_slice()) else {
            return Ok(());
        };
        // gRFC A6: a signed 32-bit integer, written in digits alone; a
        // negative one, or anything else, says not to retry.
        let wait = value.as_bytes().iter().all(u8::is_ascii_digit)
            && std::str::from_utf8(value.as_bytes()).is_ok_and(|digits| digits.parse::<i32>().is_ok());
        let answer = || {
            let mut status = tonic::Status::unavailable("busy");
            status.metadata_mut().insert(grpc::PUSHBACK, value.clone());
            status
        };
        prop_assert_eq!(grpc::is_retryable(&answer()), wait);
        let policy = Policy::new().with_max_attempts(2).with_base(Duration::from_millis(1));
        let result: Result<(), tonic::Status> = paused().block_on(
            policy.on(grpc::is_retryable).run(|| {
                let answer = answer();
                async move { Err(answer) }
            }),
        );
        prop_assert!(result.is_err());
        let reason = last_call().unwrap().reason();
        if wait {
            prop_assert!(matches!(reason, Stop::Exhausted | Stop::HintTooLong), "{:?}", reason);
        } else {
            prop_assert_eq!(reason, Stop::Nested);
        }
    }
}
