//! A gRPC call's own deadline: the `grpc-timeout` header a tonic client
//! sends for `tonic::Request::set_timeout` (or a channel's timeout). gRFC
//! A6 bounds the whole call by it, retries included, so the layer takes it
//! as the call's deadline and tells each retried attempt the time left.

use core::time::Duration;

use http::request::Parts;
use http::{HeaderMap, HeaderValue, Request};

use super::{ReplayBody, Settings};
use crate::clock::{Clock, Instant};
use crate::Policy;

/// The header's name.
pub(crate) const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The most digits a `grpc-timeout` value may have (gRPC over HTTP/2:
/// `TimeoutValue = 1*8 DIGIT`).
const MOST_DIGITS: usize = 8;

/// The call's timeout, from its `grpc-timeout` header: `None` without the
/// header, or for a value that [`parse`] does not read.
pub(crate) fn timeout(headers: &HeaderMap) -> Option<Duration> {
    parse(headers.get(GRPC_TIMEOUT)?.as_bytes())
}

/// A `grpc-timeout` value: `None` for one that is not `1*8 DIGIT` and a
/// unit (`H`, `M`, `S`, `m`, `u`, `n`), which gRPC servers ignore too.
pub(crate) fn parse(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.len() > MOST_DIGITS {
        return None;
    }
    let number: u64 = crate::classify::grpc::digits(digits)?;
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

/// `left` as a `grpc-timeout` value: the most time, in eight digits of
/// any unit, that is not more than `left` (rounded down, so that the server
/// never hears of more time than the call has). Each unit's count is
/// capped at eight nines rather than skipped when it has more digits, so
/// that more time left never writes a smaller value: `100000000S` is not
/// `1666666M` (99,999,960 s) but `99999999S`. (Digits and a unit are always
/// a valid header value; `None` is never returned.)
pub(crate) fn value(left: Duration) -> Option<HeaderValue> {
    const MOST: u128 = 99_999_999;
    let nanos = left.as_nanos();
    let (number, unit, _) = [
        (3_600_000_000_000, 'H'),
        (60_000_000_000, 'M'),
        (1_000_000_000, 'S'),
        (1_000_000, 'm'),
        (1_000, 'u'),
        (1, 'n'),
    ]
    .into_iter()
    .map(|(per, unit)| {
        let number = (nanos / per).min(MOST);
        (number, unit, number * per)
    })
    // The most time; of two units that say the same, the finer (the last
    // of the greatest, counting from the coarsest).
    .max_by_key(|&(_, _, time)| time)?;
    HeaderValue::from_str(&format!("{number}{unit}")).ok()
}

/// A request as its call's attempts send it: its head, its body as recorded
/// ([`ReplayBody`]), and when the call's `grpc-timeout` passes, if it has
/// one. What the retry layer and the hedge layer both make each attempt's
/// request from.
pub(crate) struct Recorded<B: ReplayBody> {
    head: Parts,
    pub(crate) source: B::Source,
    at: Option<Instant>,
}

impl<B: ReplayBody> Recorded<B> {
    /// The call of a request (`head`, `body`) under the layer's policy: the policy with
    /// its deadline the nearer of its own and the call's `grpc-timeout` (gRFC
    /// A6: the timeout bounds the whole call, retries included), the first
    /// attempt's body (recording up to the layer's `max_body` bytes of it,
    /// within its buffer), and the call.
    pub(crate) fn start<C>(head: Parts, body: B, layer: &Settings<C>) -> (Policy, B, Self) {
        let policy: &Policy = &layer.policy;
        let (first, source) = body.record_in(layer.max_body, &layer.buffer);
        let timeout = timeout(&head.headers);
        let at = timeout.and_then(|timeout| Clock::Async.now().checked_add(timeout));
        let nearer = timeout.map(|timeout| policy.deadline().unwrap_or(timeout).min(timeout));
        let policy = nearer.map_or(*policy, |nearer| policy.with_deadline(nearer));
        (policy, first, Recorded { head, source, at })
    }

    /// The request with `body`; a `later` attempt tells the server the time
    /// the call has left, not the time the first attempt had.
    pub(crate) fn request(&self, body: B, later: bool) -> Request<B> {
        let mut head = self.head.clone();
        let left = self.at.filter(|_| later).map(|at| Clock::Async.until(at));
        if let Some(left) = left.and_then(value) {
            head.headers.insert(GRPC_TIMEOUT, left);
        }
        Request::from_parts(head, body)
    }
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

    /// The value read back from `value(left)`.
    fn heard(left: Duration) -> Duration {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, value(left).unwrap());
        timeout(&headers).unwrap()
    }

    /// More time left never tells the server less: at each change of unit
    /// (99,999,999 of one unit is more than the next unit's count of the
    /// same time), around it, and at spread-out points.
    #[test]
    fn more_time_left_never_writes_less() {
        // 1e8 s wrote `1666666M` (99,999,960 s), less than the
        // `99999999S` of a second less.
        assert_eq!(
            value(Duration::from_secs(100_000_000)).unwrap(),
            "99999999S"
        );
        assert!(heard(Duration::from_secs(100_000_000)) >= heard(Duration::from_secs(99_999_999)));
        let mut points = Vec::new();
        for per in [
            1_u128,
            1_000,
            1_000_000,
            1_000_000_000,
            60_000_000_000,
            3_600_000_000_000,
        ] {
            let edge = 100_000_000 * per;
            for delta in [0, 1, 999, per, 60 * per, 3_600 * per, 1_000 * per] {
                points.push(edge.saturating_sub(delta));
                points.push(edge + delta);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Spread over every magnitude up to past 1e8 hours.
            let bits = state % 70;
            points.push(u128::from(state) >> (64 - bits.min(63)) << (bits.saturating_sub(63)));
        }
        points.sort_unstable();
        let durations: Vec<Duration> = points
            .into_iter()
            .map(|nanos| {
                let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
                Duration::new(secs, u32::try_from(nanos % 1_000_000_000).unwrap())
            })
            .chain([Duration::MAX])
            .collect();
        let mut last = Duration::ZERO;
        for left in durations {
            let heard = heard(left);
            assert!(heard <= left, "{left:?}: {heard:?}");
            assert!(heard >= last, "{left:?}: {heard:?} after {last:?}");
            last = heard;
        }
    }

    /// Any bytes a header value can hold read as a duration or `None`.
    #[test]
    fn any_header_bytes_read_as_a_duration_or_none() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"0123456789HMSmunhs.-+ \t\x80\xff";
        for _ in 0..20_000 {
            let len = usize::try_from(next() % 12).unwrap();
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let pick = next();
                    if pick % 4 == 0 {
                        // Any byte at all.
                        u8::try_from(pick >> 8 & 0xff).unwrap()
                    } else {
                        alphabet[usize::try_from(pick >> 8).unwrap() % alphabet.len()]
                    }
                })
                .collect();
            let Ok(header) = HeaderValue::from_bytes(&bytes) else {
                continue;
            };
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_TIMEOUT, header);
            if let Some(read) = timeout(&headers) {
                assert!(read <= Duration::from_secs(99_999_999 * 3600), "{bytes:?}");
                assert!(bytes.len() >= 2 && bytes.len() <= 9, "{bytes:?}");
            }
        }
    }
}
