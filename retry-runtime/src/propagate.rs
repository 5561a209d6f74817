//! Retry at one layer across services (DESIGN §4.17): the headers that carry
//! an attempt's time left and number to the service it calls
//! ([`Stamp`], written by the HTTP driver's layers), and the time a request
//! has left as a server reads it (`tower::ServerLayer`). The marks a server
//! answers with are read by the classifiers (`classify::http`,
//! `classify::grpc`).

use core::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// The time the request has left, in whole milliseconds: the header Envoy
/// sends upstream.
pub(crate) const EXPECTED_TIMEOUT: HeaderName =
    HeaderName::from_static("x-envoy-expected-rq-timeout-ms");
/// The attempt's number, from 1, as Envoy sends it.
pub(crate) const ATTEMPT_COUNT: HeaderName = HeaderName::from_static("x-envoy-attempt-count");
/// gRPC's count of the attempts before this one, sent on retries (gRFC A6).
#[cfg(feature = "tower")]
const PREVIOUS_ATTEMPTS: HeaderName = HeaderName::from_static("grpc-previous-rpc-attempts");

/// What an attempt tells the service it calls: its number, from 1, and the
/// time it has left (the nearer of its call's deadline, an enclosing
/// attempt's, and its own timeout), if it has any.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    pub(crate) attempt: u32,
    pub(crate) left: Option<Duration>,
}

impl Stamp {
    /// Writes the stamp on an HTTP request: `x-envoy-attempt-count`, and the
    /// time left in `x-envoy-expected-rq-timeout-ms`, rounded down to whole
    /// milliseconds but never to 0, which tells Envoy and a `ServerLayer`
    /// "no timeout".
    pub(crate) fn http(self, headers: &mut HeaderMap) {
        headers.insert(ATTEMPT_COUNT, HeaderValue::from(self.attempt));
        if let Some(left) = self.left {
            let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            headers.insert(EXPECTED_TIMEOUT, HeaderValue::from(millis.max(1)));
        }
    }

    /// Writes the stamp on a gRPC request (or one that carries a
    /// `grpc-timeout`): one `grpc-timeout`, the smaller of the time left and
    /// the one the request carries (tonic's `set_timeout`), never 0 (read as
    /// none), and on a retry `grpc-previous-rpc-attempts`.
    #[cfg(feature = "tower")]
    pub(crate) fn grpc(self, headers: &mut HeaderMap) {
        use crate::tower::deadline::{self, GRPC_TIMEOUT};
        // The one the request carries stays as it was written unless less
        // time is left.
        let carried = deadline::timeout(headers);
        let left = self
            .left
            .filter(|left| carried.is_none_or(|carried| *left < carried));
        if let Some(value) =
            left.and_then(|left| deadline::value(left.max(Duration::from_nanos(1))))
        {
            headers.insert(GRPC_TIMEOUT, value);
        }
        if self.attempt > 1 {
            headers.insert(PREVIOUS_ATTEMPTS, HeaderValue::from(self.attempt - 1));
        }
    }
}

/// The time a request has left, as its caller sent it: the nearer of
/// `grpc-timeout` and `x-envoy-expected-rq-timeout-ms`. A header that is
/// repeated, empty, malformed, negative, zero or out of range is ignored,
/// as if it were not there (DESIGN §4.17).
#[cfg(feature = "tower")]
pub(crate) fn time_left(headers: &HeaderMap) -> Option<Duration> {
    use crate::classify::http::one;
    let grpc = one(headers, crate::tower::deadline::GRPC_TIMEOUT)
        .and_then(|value| crate::tower::deadline::parse(value.as_bytes()));
    let envoy = one(headers, EXPECTED_TIMEOUT)
        .and_then(|value| crate::classify::grpc::digits(value.as_bytes()))
        .map(Duration::from_millis);
    [grpc, envoy]
        .into_iter()
        .flatten()
        .filter(|left| !left.is_zero())
        .min()
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

    #[test]
    fn stamps() {
        let mut headers = HeaderMap::new();
        Stamp {
            attempt: 2,
            left: Some(Duration::from_micros(1_999)),
        }
        .http(&mut headers);
        assert_eq!(headers[&ATTEMPT_COUNT], "2");
        assert_eq!(headers[&EXPECTED_TIMEOUT], "1");
        Stamp {
            attempt: 3,
            left: Some(Duration::ZERO),
        }
        .http(&mut headers);
        assert_eq!(headers[&EXPECTED_TIMEOUT], "1", "0 would say no timeout");

        let mut grpc = HeaderMap::new();
        grpc.insert("grpc-timeout", HeaderValue::from_static("50m"));
        Stamp {
            attempt: 1,
            left: Some(Duration::from_secs(1)),
        }
        .grpc(&mut grpc);
        assert_eq!(grpc.get_all("grpc-timeout").iter().count(), 1);
        assert_eq!(grpc["grpc-timeout"], "50m", "kept as written");
        assert!(grpc.get(PREVIOUS_ATTEMPTS).is_none());
        Stamp {
            attempt: 3,
            left: Some(Duration::from_millis(20)),
        }
        .grpc(&mut grpc);
        assert_eq!(grpc["grpc-timeout"], "20000000n");
        assert_eq!(grpc[PREVIOUS_ATTEMPTS], "2");
        let mut none = HeaderMap::new();
        Stamp {
            attempt: 1,
            left: None,
        }
        .grpc(&mut none);
        Stamp {
            attempt: 1,
            left: None,
        }
        .http(&mut none);
        assert_eq!(none.len(), 1, "the attempt count alone: {none:?}");
    }
}
