//! gRPC status codes and server pushback, as gRFC A6 defines them.
//!
//! A status is retried when its code is in a configurable set (only
//! `UNAVAILABLE` by default: the one code that promises the request was not
//! processed) and the server did not forbid it. The server's
//! `grpc-retry-pushback-ms` metadata is the hint: a non-negative integer is
//! the wait it asks for; a negative or malformed value means "do not retry".
//!
//! ```
//! use retry_runtime::{classify::grpc, retry};
//! use tonic::{Code, Status};
//!
//! // UNAVAILABLE and RESOURCE_EXHAUSTED are worth a repeat for this service.
//! const RETRYABLE: grpc::RetryableCodes = grpc::RetryableCodes::UNAVAILABLE.with(Code::ResourceExhausted);
//!
//! #[retry(max = 4, on = |status| RETRYABLE.is_retryable(status), retry_after = grpc::pushback)]
//! async fn get_user(calls: &mut u32) -> Result<String, Status> {
//!     *calls += 1;
//!     if *calls == 1 {
//!         let mut busy = Status::unavailable("busy");
//!         busy.metadata_mut().insert("grpc-retry-pushback-ms", "30".parse().unwrap());
//!         return Err(busy);
//!     }
//!     Ok("ada".to_owned())
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut calls = 0;
//! assert_eq!(get_user(&mut calls).await.unwrap(), "ada");
//! assert_eq!(calls, 2);
//! # }
//! ```
//!
//! Without the `grpc` feature (with `tower`), the code set and the pushback
//! parser work on the raw header values, for the tower layer.

use core::time::Duration;

/// The metadata key of the server's pushback, for a server that sends one:
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::classify::grpc;
///
/// let mut busy = tonic::Status::unavailable("busy");
/// busy.metadata_mut().insert(grpc::PUSHBACK, "250".parse().unwrap());
/// assert_eq!(grpc::pushback(&busy), Some(Duration::from_millis(250)));
/// ```
pub const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// What the server's pushback says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushback {
    /// No pushback: back off as usual.
    Absent,
    /// Retry after this long.
    After(Duration),
    /// A negative or malformed value: do not retry.
    DoNotRetry,
}

/// A number written as `1*DIGIT`, as the headers of gRPC and Envoy write
/// them: `None` for a sign, a blank or anything else, or one out of `T`'s
/// range. (`str::parse` alone takes `"+14"` for 14.)
pub(crate) fn digits<T: core::str::FromStr>(value: &[u8]) -> Option<T> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(value).ok()?.parse().ok()
}

impl Pushback {
    /// Reads a `grpc-retry-pushback-ms` value: A6's "ASCII encoded signed
    /// 32-bit integer", digits only (leading zeros allowed, as gRPC
    /// clients read them). Anything else, a value past `i32::MAX` included,
    /// is unparseable, which A6 reads as "do not retry".
    #[must_use]
    pub fn parse(value: Option<&[u8]>) -> Self {
        match value.map(digits::<i32>) {
            None => Pushback::Absent,
            Some(Some(millis)) => {
                Pushback::After(Duration::from_millis(millis.unsigned_abs().into()))
            }
            Some(None) => Pushback::DoNotRetry,
        }
    }

    /// The hint for the decision: the wait asked for, `Duration::MAX` (a
    /// wait no policy makes, so the failure is counted by the budget and
    /// not retried, as A6 has it) when the server said not to retry, and
    /// `None` without a pushback.
    #[must_use]
    pub const fn hint(self) -> Option<Duration> {
        match self {
            Pushback::After(wait) => Some(wait),
            Pushback::DoNotRetry => Some(Duration::MAX),
            Pushback::Absent => None,
        }
    }
}

/// A set of gRPC status codes to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryableCodes(u32);

impl RetryableCodes {
    /// No code.
    pub const NONE: Self = RetryableCodes(0);
    /// Only `UNAVAILABLE` (14), gRFC A6's example and this module's default.
    pub const UNAVAILABLE: Self = RetryableCodes(1 << 14);

    /// The set with one more code, by its number (0 to 16; others are
    /// ignored).
    #[must_use]
    pub const fn with_number(self, code: i32) -> Self {
        if 0 <= code && code <= 16 {
            RetryableCodes(self.0 | 1 << code)
        } else {
            self
        }
    }

    /// Whether a code, by its number, is in the set.
    #[must_use]
    pub const fn contains_number(self, code: i32) -> bool {
        0 <= code && code <= 16 && self.0 & (1 << code) != 0
    }
}

/// Tells the call judging a gRPC failure (a `code` other than OK) that the
/// server below gave up on it: its pushback says "do not retry" (DESIGN
/// §4.17; gRFC A6), which a `tower::ServerLayer` sends for a failure an
/// inner call gave up on.
pub(crate) fn report_pushback(code: i32, pushback: Pushback) {
    if code != 0 && pushback == Pushback::DoNotRetry {
        crate::context::below::gave_up_below(crate::context::Below::Refused);
    }
}

impl Default for RetryableCodes {
    fn default() -> Self {
        RetryableCodes::UNAVAILABLE
    }
}

#[cfg(feature = "grpc")]
mod tonic_status {
    use core::time::Duration;

    use tonic::{Code, Status};

    use super::{Pushback, RetryableCodes, PUSHBACK};

    impl RetryableCodes {
        /// The set with one more code.
        #[must_use]
        pub const fn with(self, code: Code) -> Self {
            self.with_number(code as i32)
        }

        /// Whether the set holds a code.
        #[must_use]
        pub const fn contains(self, code: Code) -> bool {
            self.contains_number(code as i32)
        }

        /// Whether a status may be retried: its code is in the set and its
        /// pushback, if any, does not forbid it. For `on`. A failure whose
        /// pushback forbids it is one the server below gave up on: the call
        /// stops with reason `nested`, and counts it as a failure (DESIGN
        /// §4.17).
        #[must_use]
        pub fn is_retryable(self, status: &Status) -> bool {
            let (code, pushback) = judged(status);
            self.contains_number(code) && pushback != Pushback::DoNotRetry
        }
    }

    impl FromIterator<Code> for RetryableCodes {
        fn from_iter<I: IntoIterator<Item = Code>>(codes: I) -> Self {
            codes
                .into_iter()
                .fold(RetryableCodes::NONE, RetryableCodes::with)
        }
    }

    /// A status's code and the server's pushback on it, told to the call
    /// judging it ([`report_pushback`](super::report_pushback)).
    fn judged(status: &Status) -> (i32, Pushback) {
        let code = status.code() as i32;
        let value = status.metadata().get(PUSHBACK);
        let pushback = Pushback::parse(value.map(|value| value.as_bytes()));
        super::report_pushback(code, pushback);
        (code, pushback)
    }

    /// Whether a status is `UNAVAILABLE` and its pushback, if any, allows a
    /// retry. For `on`.
    #[must_use]
    pub fn is_retryable(status: &Status) -> bool {
        RetryableCodes::UNAVAILABLE.is_retryable(status)
    }

    /// The wait the server's pushback asks for. For `retry_after`.
    ///
    /// A pushback that says not to retry (negative or malformed) is
    /// `Some(Duration::MAX)`: a wait no policy makes (above any `cap`, and
    /// past the longest pushback under a gRPC service config), so a status
    /// that `on` retries by its code alone is not retried, its failure
    /// counted by the budget as gRFC A6 counts it. It is also the mark of a
    /// server whose inner call gave up (a `tower::ServerLayer`'s), so the
    /// call stops with reason `nested` (`hint_too_long` under
    /// `nested = "retry"`; DESIGN §4.17). `None` without a pushback.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::classify::grpc::{self, PUSHBACK};
    ///
    /// let mut status = tonic::Status::unavailable("busy");
    /// assert_eq!(grpc::pushback(&status), None);
    /// status.metadata_mut().insert(PUSHBACK, "-1".parse().unwrap());
    /// assert_eq!(grpc::pushback(&status), Some(Duration::MAX));
    /// ```
    #[must_use]
    pub fn pushback(status: &Status) -> Option<Duration> {
        judged(status).1.hint()
    }
}

#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub use tonic_status::{is_retryable, pushback};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushback_values_follow_a6() {
        assert_eq!(Pushback::parse(None), Pushback::Absent);
        assert_eq!(
            Pushback::parse(Some(b"250")),
            Pushback::After(Duration::from_millis(250))
        );
        for forbidden in [&b"-1"[..], b"", b"1.5", b"soon", b" 250", b"\xff"] {
            assert_eq!(Pushback::parse(Some(forbidden)), Pushback::DoNotRetry);
        }
        // A6: a signed 32-bit integer; past it, unparseable.
        assert_eq!(
            Pushback::parse(Some(b"2147483647")),
            Pushback::After(Duration::from_millis(2_147_483_647))
        );
        for beyond in [&b"2147483648"[..], b"99999999999999999999999", b"+5"] {
            assert_eq!(Pushback::parse(Some(beyond)), Pushback::DoNotRetry);
        }
    }

    #[test]
    fn code_sets() {
        let codes = RetryableCodes::UNAVAILABLE.with_number(8);
        assert!(codes.contains_number(14) && codes.contains_number(8));
        assert!(
            !codes.contains_number(2) && !codes.contains_number(-1) && !codes.contains_number(99)
        );
    }

    #[cfg(feature = "grpc")]
    #[test]
    fn a_pushback_that_forbids_a_retry_wins_over_the_code() {
        let codes = RetryableCodes::UNAVAILABLE.with_number(8);
        let mut status = tonic::Status::unavailable("busy");
        assert!(codes.is_retryable(&status));
        status
            .metadata_mut()
            .insert(PUSHBACK, "-1".parse().unwrap());
        assert!(!codes.is_retryable(&status));
    }
}
