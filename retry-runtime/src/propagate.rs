//! Retry at one layer across services (DESIGN §4.17): the time a request
//! has left as a server reads it (`tower::ServerLayer`). The marks a server
//! answers with are read by the classifiers (`classify::http`,
//! `classify::grpc`).

use core::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// The time the request has left, in whole milliseconds: the header Envoy
/// sends upstream.
pub(crate) const EXPECTED_TIMEOUT: HeaderName =
    HeaderName::from_static("x-envoy-expected-rq-timeout-ms");
/// The time a request has left, as its caller sent it: the nearer of
/// `grpc-timeout` and `x-envoy-expected-rq-timeout-ms`. A header that is
/// repeated, empty, malformed, negative, zero or out of range is ignored,
/// as if it were not there (DESIGN §4.17).
#[cfg(feature = "tower")]
pub(crate) fn time_left(headers: &HeaderMap) -> Option<Duration> {
    let grpc = one(headers, crate::tower::deadline::GRPC_TIMEOUT)
        .and_then(|value| crate::tower::deadline::parse(value.as_bytes()));
    let envoy = one(headers, EXPECTED_TIMEOUT.as_str()).and_then(|value| millis(value.as_bytes()));
    [grpc, envoy]
        .into_iter()
        .flatten()
        .filter(|left| !left.is_zero())
        .min()
}

/// The header's value when it has exactly one.
#[cfg(feature = "tower")]
fn one<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(value)
}

/// Whole milliseconds: digits only, within a `u64`.
#[cfg(feature = "tower")]
fn millis(value: &[u8]) -> Option<Duration> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let millis = core::str::from_utf8(value).ok()?.parse().ok()?;
    Some(Duration::from_millis(millis))
}

#[cfg(test)]
#[cfg(feature = "tower")]
mod tests {
    use super::*;

    fn read(pairs: &[(&'static str, &'static str)]) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        time_left(&headers)
    }

    #[test]
    fn the_nearer_of_the_two_headers() {
        let ms = Duration::from_millis;
        assert_eq!(
            read(&[("x-envoy-expected-rq-timeout-ms", "250")]),
            Some(ms(250))
        );
        assert_eq!(read(&[("grpc-timeout", "2S")]), Some(ms(2000)));
        let both = [
            ("grpc-timeout", "100m"),
            ("x-envoy-expected-rq-timeout-ms", "250"),
        ];
        assert_eq!(read(&both), Some(ms(100)));
        assert_eq!(read(&[]), None);
    }

    #[test]
    fn a_bad_value_is_as_none() {
        for bad in [
            "",
            "0",
            "-5",
            "1.5",
            "25 ",
            "+25",
            "99999999999999999999",
            "x",
        ] {
            assert_eq!(
                read(&[("x-envoy-expected-rq-timeout-ms", bad)]),
                None,
                "{bad:?}"
            );
        }
        for bad in ["0n", "0S", "-1S", "123456789m", ""] {
            assert_eq!(read(&[("grpc-timeout", bad)]), None, "{bad:?}");
        }
        let twice = [
            ("x-envoy-expected-rq-timeout-ms", "250"),
            ("x-envoy-expected-rq-timeout-ms", "250"),
        ];
        assert_eq!(read(&twice), None);
        // A bad one does not hide a good one.
        let one_bad = [
            ("grpc-timeout", "-1S"),
            ("x-envoy-expected-rq-timeout-ms", "70"),
        ];
        assert_eq!(read(&one_bad), Some(Duration::from_millis(70)));
    }
}
