//! A gRPC call's own deadline: the `grpc-timeout` header a tonic client
//! sends for `tonic::Request::set_timeout` (or a channel's timeout). gRFC
//! A6 bounds the whole call by it, retries included, so the layer takes it
//! as the call's deadline and tells each retried attempt the time left.

use core::time::Duration;

use http::{HeaderMap, HeaderValue};

/// The header's name.
pub(crate) const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The most digits a `grpc-timeout` value may have (gRPC over HTTP/2:
/// `TimeoutValue = 1*8 DIGIT`).
const MOST_DIGITS: usize = 8;

/// The call's timeout, from its `grpc-timeout` header: `None` without the
/// header, or for a value that is not `1*8 DIGIT` and a unit (`H`, `M`,
/// `S`, `m`, `u`, `n`), which gRPC servers ignore too.
pub(crate) fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(GRPC_TIMEOUT)?.as_bytes();
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > MOST_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let number = digits
        .iter()
        .fold(0_u64, |number, digit| number * 10 + u64::from(digit - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(number * 3600),
        b'M' => Duration::from_secs(number * 60),
        b'S' => Duration::from_secs(number),
        b'm' => Duration::from_millis(number),
        b'u' => Duration::from_micros(number),
        b'n' => Duration::from_nanos(number),
        _ => return None,
    })
}

/// `left` as a `grpc-timeout` value: the finest unit whose count fits in
/// eight digits, rounded down, so that the server never hears of more time
/// than the call has. (Digits and a unit are always a valid header value;
/// `None` is never returned.)
pub(crate) fn value(left: Duration) -> Option<HeaderValue> {
    const LIMIT: u128 = 100_000_000;
    let nanos = left.as_nanos();
    let (number, unit) = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ]
    .into_iter()
    .map(|(per, unit)| (nanos / per, unit))
    .find(|(number, _)| *number < LIMIT)
    .unwrap_or((LIMIT - 1, 'H'));
    HeaderValue::from_str(&format!("{number}{unit}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(text));
        timeout(&headers)
    }

    #[test]
    fn values_as_grpc_writes_them() {
        assert_eq!(parse("500m"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse("99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        assert_eq!(parse("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse("0n"), Some(Duration::ZERO));
        for malformed in ["", "m", "123456789m", "1.5S", "-1S", "10", "10s", " 1S"] {
            assert_eq!(parse(malformed), None, "{malformed:?}");
        }
        assert_eq!(timeout(&HeaderMap::new()), None);
    }

    #[test]
    fn the_time_left_rounds_down_in_eight_digits() {
        let value = |left| value(left).unwrap();
        assert_eq!(value(Duration::from_nanos(99_999_999)), "99999999n");
        assert_eq!(value(Duration::from_millis(170)), "170000u");
        assert_eq!(value(Duration::from_nanos(170_000_999)), "170000u");
        assert_eq!(value(Duration::from_secs(10)), "10000000u");
        assert_eq!(value(Duration::from_secs(1000)), "1000000m");
        assert_eq!(value(Duration::ZERO), "0n");
        assert_eq!(value(Duration::MAX), "99999999H");
        for left in [
            Duration::from_micros(123_456_789),
            Duration::from_secs(1 << 40),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_TIMEOUT, value(left));
            let heard = timeout(&headers).unwrap();
            assert!(heard <= left, "{left:?}");
        }
    }
}
