//! The one place where the tower layer and the reqwest middleware reach the
//! runtime's decision: the same backoff, jitter, deadline, budget, breaker
//! and server-hint handling as `#[retry]`, through the same state; and the
//! one reading of an HTTP exchange both of them share.

use core::time::Duration;
use std::error::Error;

use crate::attempts::Attempts;
use crate::breaker::AttemptPermit;
use crate::classify::chain::Chain;
use crate::classify::grpc::{Pushback, RetryableCodes, PUSHBACK};
use crate::slots::Watching;
use crate::{CircuitBreaker, Classification, Policy, RetryBudget, Stop};

/// One call's retry state under a policy, with its breaker `B`: one it
/// asks before each attempt and tells each outcome, or ([`Watching`]) one a
/// breaker layer below asks and tells.
#[derive(Debug)]
pub(crate) struct Call<'p, B = Option<AttemptPermit<'p>>> {
    attempts: Attempts<'p, B, Option<&'p RetryBudget>>,
}

impl<'p> Call<'p> {
    /// Starts a call: its first attempt begins now.
    pub(crate) fn start(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        breaker: Option<&'p CircuitBreaker>,
        name: &'static str,
    ) -> Self {
        Call {
            attempts: Attempts::start(policy, budget, name).with_breaker_if(breaker),
        }
    }
}

impl<'p> Call<'p, Watching<'p>> {
    /// Starts a call whose attempts a breaker layer below asks `breaker`
    /// for and records: the call only stops, rather than wait, once a
    /// failure finds it open.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn watching(
        policy: &'p Policy,
        budget: Option<&'p RetryBudget>,
        breaker: Option<&'p CircuitBreaker>,
        name: &'static str,
    ) -> Self {
        Call {
            attempts: Attempts::start(policy, budget, name).watching(breaker),
        }
    }

    /// As [`Call::judge_answer`]: its breaker only watched.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn judge_answer<T, E>(
        &mut self,
        answer: &Result<T, E>,
        outcome: Classification,
    ) -> Result<Duration, Stop> {
        crate::observe::failed_with(answer, &outcome);
        self.attempts.judge(outcome)
    }

    /// As [`Call::attempt`].
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempts.attempt()
    }
}

impl<'p> Call<'p> {
    /// The request is under way: it counts as in flight in the attempt it
    /// runs inside until it is judged for the last time (or [`finish`]ed).
    /// The layer and the middleware call it before their first attempt (an
    /// HTTP call nearly always waits on the network), so that a fan-out of
    /// their calls inside a retried attempt is judged as one of retried
    /// functions is. Not `start`'s own doing: tower clones a
    /// `RetryPolicy`, and so starts a call, for requests that may never be
    /// sent through it.
    ///
    /// [`finish`]: Call::finish
    pub(crate) fn waiting(&mut self) {
        self.attempts.waiting();
    }

    /// The call ends before its attempt could be sent (the service failed
    /// to become ready): it stops as not retryable, counted as every call
    /// is, and the attempt's breaker permit, if any, is freed unrecorded
    /// (the dependency was not reached).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn unsent(&mut self) {
        self.attempts.unsent();
    }

    /// Call before each attempt: whether the breaker, if any, lets it be
    /// made. When it does not, [`judge`](Call::judge) then stops with
    /// [`Stop::Open`] whatever it is given.
    pub(crate) fn acquire(&mut self) -> bool {
        self.attempts.acquire()
    }

    /// Makes the attempt's future with `make`, and polls it, with the
    /// thread marked by the attempt's breaker permit: a breaker layer below
    /// naming the same breaker runs under it, and counts nothing twice.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn marked<'a, F: core::future::Future + 'a, M: FnOnce() -> F>(
        &'a mut self,
        make: M,
    ) -> impl core::future::Future<Output = F::Output> + use<'a, 'p, F, M> {
        self.attempts.marked(make)
    }

    /// Judges the attempt that just ended: the wait before the next, or why
    /// the call stops.
    pub(crate) fn judge(&mut self, outcome: Classification) -> Result<Duration, Stop> {
        self.attempts.judge(outcome)
    }

    /// [`judge`](Call::judge)s an attempt that ended with `answer`,
    /// classified `outcome`: an error's type is the `error.type` of the
    /// event the judgment emits.
    pub(crate) fn judge_answer<T, E>(
        &mut self,
        answer: &Result<T, E>,
        outcome: Classification,
    ) -> Result<Duration, Stop> {
        crate::observe::failed_with(answer, &outcome);
        self.judge(outcome)
    }

    /// The attempt about to run or just judged, from 1.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempts.attempt()
    }
}

/// What an HTTP exchange means for a retry, for the tower layer's
/// [`HttpClassifier`](crate::tower::HttpClassifier) and the reqwest
/// middleware alike, from the request's method and headers (whether it is
/// safe to repeat, and whether it is a gRPC call) and its outcome:
///
/// - a response with `grpc-status` in its headers (a trailers-only gRPC
///   error) is transient when its code is in `grpc_codes` and its pushback
///   allows it, the pushback being the hint (gRFC A6);
/// - a response to a gRPC call ([`is_grpc`]) with an HTTP
///   status other than 200 and no `grpc-status`, which something in front
///   of the server sent, is judged by the code gRPC maps the status to
///   ([`grpc_code_of`]): 429, 502, 503 and 504 are `UNAVAILABLE`;
/// - any other response with status 408, 429 or 5xx except 501 is
///   transient, with its `Retry-After` as the hint; for a request that is
///   not safe to repeat it is [`Classification::Unrepeatable`];
/// - an error is transient when [`Chain`] finds it so: for a request that
///   is not repeatable, only one that shows the request was not sent (a
///   refused connection); a connection closed before the response is then
///   [`Classification::Unrepeatable`].
pub(crate) fn classify_http(
    method: &::http::Method,
    request_headers: &::http::HeaderMap,
    grpc_codes: RetryableCodes,
    outcome: Result<(::http::StatusCode, &::http::HeaderMap), &(dyn Error + 'static)>,
) -> Classification {
    let repeatable = crate::idempotency::is_repeatable(method, request_headers);
    let grpc = is_grpc(request_headers);
    match outcome {
        Ok((status, headers)) => {
            if let Some(code) = headers.get("grpc-status") {
                // UNKNOWN, as gRPC reads a malformed status.
                let code = grpc_status(code.as_bytes()).unwrap_or(2);
                if code == 0 {
                    return Classification::Done;
                }
                let pushback = Pushback::parse(headers.get(PUSHBACK).map(|v| v.as_bytes()));
                return if grpc_codes.allows(code, pushback) {
                    Classification::Transient(pushback.wait())
                } else {
                    Classification::Permanent
                };
            }
            if grpc && status != ::http::StatusCode::OK {
                // A gRPC call answered with an HTTP error and no gRPC status:
                // something in front of the server (a proxy, a load
                // balancer) answered. Judged by the code gRPC maps it to.
                let code = grpc_code_of(status);
                return if grpc_codes.allows(code, Pushback::Absent) {
                    Classification::Transient(None)
                } else {
                    Classification::Permanent
                };
            }
            if !crate::classify::http::is_transient_status(status) {
                Classification::Done
            } else if repeatable {
                Classification::Transient(crate::classify::http::retry_after(headers))
            } else {
                Classification::Unrepeatable
            }
        }
        Err(error) => {
            if repeatable {
                if Chain::repeatable().is_transient(error) {
                    return Classification::Transient(None);
                }
            } else if crate::classify::chain::was_cut_off(error) {
                // Cut off by a timeout: the request may have been sent and
                // acted on, so one that may not be repeated is not.
                return Classification::Unrepeatable;
            } else if Chain::new().is_transient(error) {
                return Classification::Transient(None);
            } else if Chain::repeatable().is_transient(error) {
                return Classification::Unrepeatable;
            }
            Classification::Permanent
        }
    }
}

/// A `grpc-status` value: `1*DIGIT` (gRPC over HTTP/2), so a sign or a
/// blank is malformed, not a code. `str::parse` alone took `"+14"` for
/// UNAVAILABLE and `"-0"` for OK.
fn grpc_status(value: &[u8]) -> Option<i32> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(value).ok()?.parse().ok()
}

/// Whether a request is a gRPC call: its `content-type` is
/// `application/grpc`, alone or followed by `+` (a codec) or `;`.
fn is_grpc(headers: &::http::HeaderMap) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    headers
        .get(::http::header::CONTENT_TYPE)
        .is_some_and(|value| {
            let value = value.as_bytes();
            value.len() >= GRPC.len()
                && value[..GRPC.len()].eq_ignore_ascii_case(GRPC)
                && matches!(value.get(GRPC.len()), None | Some(b'+' | b';'))
        })
}

/// The gRPC code of an HTTP status answered to a gRPC call without a gRPC
/// status, as gRPC clients map it ("HTTP to gRPC Status Code Mapping" in
/// gRPC's documentation).
fn grpc_code_of(status: ::http::StatusCode) -> i32 {
    match status.as_u16() {
        400 => 13,                   // INTERNAL
        401 => 16,                   // UNAUTHENTICATED
        403 => 7,                    // PERMISSION_DENIED
        404 => 12,                   // UNIMPLEMENTED
        429 | 502 | 503 | 504 => 14, // UNAVAILABLE
        _ => 2,                      // UNKNOWN
    }
}

#[cfg(test)]
mod tests {
    use super::classify_http;
    use crate::classify::grpc::RetryableCodes;
    use crate::Classification;

    /// The classification of a trailers-only gRPC answer with this
    /// `grpc-status` value.
    fn grpc_status(value: &'static str) -> Classification {
        let mut headers = ::http::HeaderMap::new();
        headers.insert("grpc-status", ::http::HeaderValue::from_static(value));
        classify_http(
            &::http::Method::GET,
            &::http::HeaderMap::new(),
            RetryableCodes::UNAVAILABLE,
            Ok((::http::StatusCode::OK, &headers)),
        )
    }

    /// `grpc-status` is `1*DIGIT` (gRPC over HTTP/2); anything else is
    /// malformed and read as UNKNOWN (2), as tonic reads it. A sign made
    /// `"+14"` UNAVAILABLE (retried) and `"-0"` or `"+0"` OK (a success).
    #[test]
    fn grpc_status_is_digits_only() {
        assert_eq!(grpc_status("14"), Classification::Transient(None));
        assert_eq!(grpc_status("014"), Classification::Transient(None));
        assert_eq!(grpc_status("0"), Classification::Done);
        assert_eq!(grpc_status("00"), Classification::Done);
        for malformed in [
            "+14",
            "-0",
            "+0",
            "",
            " 14",
            "14 ",
            "1e1",
            "x",
            "-14",
            "99999999999",
        ] {
            assert_eq!(
                grpc_status(malformed),
                Classification::Permanent,
                "{malformed:?}"
            );
        }
    }
}
