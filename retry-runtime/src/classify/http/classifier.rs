//! The one classifier of the HTTP layers ([`HttpClassifier`]) and the one
//! trait they judge outcomes through ([`Classify`]): the tower layer, the
//! breaker and hedge layers and the reqwest middleware all read an exchange
//! as [`HttpClassifier::judge`] does.

use std::error::Error;

use crate::classify::chain::{is_cut_off, Chain};
use crate::classify::grpc::{report_pushback, Pushback, RetryableCodes, PUSHBACK};
use crate::Classification;

/// Judges an attempt's outcome for an HTTP layer: a closure
/// `Fn(&Req, &Result<Res, E>) -> Classification`, or the [`HttpClassifier`].
/// For the reqwest middleware, `Req` is `reqwest::Request` and the result
/// its `Outcome`.
///
/// A classifier of your own, for rules a closure would repeat: here, the
/// default rules, plus a 404 from a store that is still replicating, retried
/// for reads. Give it to `RetryLayer::with_classifier` (or the middleware's,
/// or the hedge and breaker layers').
///
/// ```
/// use retry_runtime::classify::http::{Classify, HttpClassifier};
/// use retry_runtime::Classification;
///
/// struct Replicating;
///
/// impl<B, ResB, E: std::error::Error + 'static>
///     Classify<http::Request<B>, http::Response<ResB>, E> for Replicating
/// {
///     fn classify(
///         &self,
///         request: &http::Request<B>,
///         result: &Result<http::Response<ResB>, E>,
///     ) -> Classification {
///         match result {
///             Ok(response) if response.status() == 404 && request.method() == "GET" => {
///                 Classification::Transient(None)
///             }
///             _ => HttpClassifier::default().classify(request, result),
///         }
///     }
/// }
///
/// let get = http::Request::get("/objects/7").body(()).unwrap();
/// let not_yet = http::Response::builder().status(404).body(()).unwrap();
/// let judged = Replicating.classify(&get, &Ok::<_, std::io::Error>(not_yet));
/// assert!(judged.is_transient());
/// // Anything else as the default rules judge it: a write's 404 is
/// // returned as it is.
/// let put = http::Request::put("/objects/7").body(()).unwrap();
/// let not_found = http::Response::builder().status(404).body(()).unwrap();
/// let judged = Replicating.classify(&put, &Ok::<_, std::io::Error>(not_found));
/// assert_eq!(judged, Classification::Done);
/// ```
pub trait Classify<Req, Res, E> {
    /// What the outcome of `request` means for a retry.
    fn classify(&self, request: &Req, result: &Result<Res, E>) -> Classification;
}

impl<F, Req, Res, E> Classify<Req, Res, E> for F
where
    F: Fn(&Req, &Result<Res, E>) -> Classification,
{
    fn classify(&self, request: &Req, result: &Result<Res, E>) -> Classification {
        self(request, result)
    }
}

/// The default classifier of the HTTP layers: HTTP statuses and
/// `Retry-After`, gRPC statuses and pushback, connection errors (the
/// rules are listed in the `tower` module's docs, "What is retried"). The same type
/// judges `http::Request`s (tower, hyper, axum, tonic channels) and
/// `reqwest::Request`s (the middleware).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpClassifier {
    grpc_codes: RetryableCodes,
}

impl HttpClassifier {
    /// The default, in a `const`.
    pub(crate) const fn new() -> Self {
        HttpClassifier {
            grpc_codes: RetryableCodes::UNAVAILABLE,
        }
    }

    /// Retries gRPC statuses (of a trailers-only response) with these codes
    /// instead of `UNAVAILABLE` alone.
    #[must_use]
    pub const fn with_grpc_codes(mut self, codes: RetryableCodes) -> Self {
        self.grpc_codes = codes;
        self
    }
}

impl<B, ResB, E> Classify<::http::Request<B>, ::http::Response<ResB>, E> for HttpClassifier
where
    E: Error + 'static,
{
    fn classify(
        &self,
        request: &::http::Request<B>,
        result: &Result<::http::Response<ResB>, E>,
    ) -> Classification {
        let outcome = match result {
            Ok(response) => Ok((response.status(), response.headers())),
            Err(error) => Err(error as &(dyn Error + 'static)),
        };
        self.judge(request.method(), request.headers(), outcome)
    }
}

#[cfg(feature = "tower")]
impl HttpClassifier {
    /// The same rules for a service whose error is tower's `BoxError`
    /// (`Box<dyn Error + Send + Sync>`): a `tower::timeout` inside the layer,
    /// a `Buffer`, a `ConcurrencyLimit`. `HttpClassifier` itself cannot
    /// judge a `BoxError`, which does not implement `Error`:
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::time::Duration;
    /// use retry_runtime::tower::{HttpClassifier, RetryLayer};
    /// use retry_runtime::Policy;
    /// use tower::{ServiceBuilder, ServiceExt};
    ///
    /// static POLICY: Policy = Policy::new().with_max_attempts(3);
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// static CALLS: AtomicU32 = AtomicU32::new(0);
    /// // Stands for your client: the first call hangs.
    /// let client = tower::service_fn(|_: http::Request<String>| async {
    ///     if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
    ///         tokio::time::sleep(Duration::from_secs(3600)).await;
    ///     }
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// });
    /// let service = ServiceBuilder::new()
    ///     .layer(RetryLayer::new(&POLICY).with_classifier(HttpClassifier::default().boxed_errors()))
    ///     .timeout(Duration::from_secs(2)) // each attempt; one cut off is retried
    ///     .service(client);
    /// let response = service.oneshot(http::Request::new(String::new())).await.unwrap();
    /// assert_eq!(response.status(), 200);
    /// assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    /// # }
    /// ```
    #[must_use]
    pub const fn boxed_errors(self) -> BoxedHttpClassifier {
        BoxedHttpClassifier(self)
    }
}

/// [`HttpClassifier`] for a service below the layer that fails with tower's
/// `BoxError`, from [`HttpClassifier::boxed_errors`]. A
/// `tower::timeout::error::Elapsed` is a transient error: the classifier
/// for a `RetryLayer` over tower's `TimeoutLayer` (each attempt's timeout).
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::classify::http::{BoxedHttpClassifier, Classify, HttpClassifier};
/// use retry_runtime::tower::RetryLayer;
/// use retry_runtime::Policy;
/// use tower::timeout::error::Elapsed;
/// use tower::ServiceBuilder;
///
/// static POLICY: Policy = Policy::new().with_max_attempts(3);
///
/// let classifier: BoxedHttpClassifier = HttpClassifier::default().boxed_errors();
/// // An attempt the timeout cut off is retried.
/// let get = http::Request::get("/").body(()).unwrap();
/// let cut_off: Result<http::Response<()>, tower::BoxError> = Err(Elapsed::new().into());
/// assert!(classifier.classify(&get, &cut_off).is_transient());
///
/// let client = tower::service_fn(|_: http::Request<String>| async {
///     Ok::<_, std::io::Error>(http::Response::new(()))
/// });
/// let service = ServiceBuilder::new()
///     .layer(RetryLayer::new(&POLICY).with_classifier(classifier))
///     .timeout(Duration::from_secs(2))
///     .service(client);
/// # let _ = service;
/// ```
#[cfg(feature = "tower")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoxedHttpClassifier(pub(crate) HttpClassifier);

#[cfg(feature = "tower")]
impl<B, ResB> Classify<::http::Request<B>, ::http::Response<ResB>, Box<dyn Error + Send + Sync>>
    for BoxedHttpClassifier
{
    fn classify(
        &self,
        request: &::http::Request<B>,
        result: &Result<::http::Response<ResB>, Box<dyn Error + Send + Sync>>,
    ) -> Classification {
        let outcome = match result {
            Ok(response) => Ok((response.status(), response.headers())),
            Err(error) => Err(&**error as &(dyn Error + 'static)),
        };
        self.0.judge(request.method(), request.headers(), outcome)
    }
}

impl HttpClassifier {
    /// What an HTTP exchange means for a retry, from the request's method and
    /// headers (whether it is safe to repeat, and whether it is a gRPC call)
    /// and its outcome:
    ///
    /// - a response with `grpc-status` in its headers (a trailers-only gRPC
    ///   error) is transient when its code is in the classifier's codes, the
    ///   pushback being the hint (gRFC A6): one that says not to retry is
    ///   `Duration::MAX`, which no policy waits out, so the failure is
    ///   counted and returned;
    /// - a response to a gRPC call ([`is_grpc`]) with an HTTP
    ///   status other than 200 and no `grpc-status`, which something in front
    ///   of the server sent, is judged by the code gRPC maps the status to
    ///   ([`grpc_code_of`]): 429, 502, 503 and 504 are `UNAVAILABLE`;
    /// - any other response with status 408, 429 or 5xx except 501 is
    ///   transient, with its `Retry-After` as the hint; for a request that is
    ///   not safe to repeat it is [`Classification::Unrepeatable`];
    /// - an error that shows the server never processed the request is
    ///   [`Classification::Unsent`] (a refused connection) or
    ///   [`Classification::Unprocessed`] (a refused HTTP/2 stream), for any
    ///   request;
    /// - any other error is transient when [`Chain`] finds it so: for a
    ///   request that is not repeatable, only one that shows the request
    ///   was not sent; a connection closed before the response is then
    ///   [`Classification::Unrepeatable`].
    pub(crate) fn judge(
        &self,
        method: &::http::Method,
        request_headers: &::http::HeaderMap,
        outcome: Result<(::http::StatusCode, &::http::HeaderMap), &(dyn Error + 'static)>,
    ) -> Classification {
        let repeatable = crate::idempotency::is_repeatable(method, request_headers);
        match outcome {
            Ok((status, headers)) => {
                if let Some(code) = headers.get("grpc-status") {
                    // A `grpc-status` value is `1*DIGIT` (gRPC over HTTP/2): a
                    // sign or a blank is malformed, not a code (`"+14"` is not
                    // UNAVAILABLE, nor `"-0"` OK), and read as UNKNOWN, as gRPC
                    // reads a malformed status.
                    let code = crate::classify::grpc::digits(code.as_bytes()).unwrap_or(2);
                    if code == 0 {
                        return Classification::Done;
                    }
                    // A pushback that says not to retry is a hint no
                    // policy waits out: the failure counts against the
                    // budget and the breaker, as gRFC A6 counts it, and is
                    // returned; reported as the mark of a give-up below
                    // (DESIGN §4.17), it stops the call `nested`.
                    let pushback = Pushback::parse(headers.get(PUSHBACK).map(|v| v.as_bytes()));
                    report_pushback(code, pushback);
                    super::report_mark(code != 0, headers);
                    return self.grpc(code, pushback.hint());
                }
                let transient = super::report_mark(super::is_transient_status(status), headers);
                if is_grpc(request_headers) && status != ::http::StatusCode::OK {
                    // A gRPC call answered with an HTTP error and no gRPC status:
                    // something in front of the server (a proxy, a load
                    // balancer) answered. Judged by the code gRPC maps it to.
                    return self.grpc(grpc_code_of(status), None);
                }
                if !transient {
                    Classification::Done
                } else if repeatable {
                    Classification::Transient(super::retry_after(headers))
                } else {
                    Classification::Unrepeatable
                }
            }
            Err(error) => {
                if let Some(unprocessed) = crate::classify::hyper::unprocessed(error) {
                    return unprocessed;
                }
                if repeatable {
                    if Chain::repeatable().is_transient(error) {
                        return Classification::Transient(None);
                    }
                } else if crate::classify::source::sources(error).any(is_cut_off) {
                    // Cut off by a timeout (anywhere in the chain): the request
                    // may have been sent and acted on, so one that may not be
                    // repeated is not.
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

    /// A gRPC failure with this `code`: retried, after `hint`, when the code
    /// is one of the classifier's.
    fn grpc(self, code: i32, hint: Option<core::time::Duration>) -> Classification {
        if self.grpc_codes.contains_number(code) {
            Classification::Transient(hint)
        } else {
            Classification::Permanent
        }
    }
}

/// Whether a request is a gRPC call: its `content-type` is
/// `application/grpc`, alone or followed by `+` (a codec) or `;`.
pub(crate) fn is_grpc(headers: &::http::HeaderMap) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    headers
        .get(::http::header::CONTENT_TYPE)
        .and_then(|value| value.as_bytes().split_at_checked(GRPC.len()))
        .is_some_and(|(head, rest)| {
            head.eq_ignore_ascii_case(GRPC) && matches!(rest.first(), None | Some(b'+' | b';'))
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
    use super::HttpClassifier;
    use crate::Classification;

    /// The classification of a trailers-only gRPC answer with this
    /// `grpc-status` value.
    fn grpc_status(value: &'static str) -> Classification {
        let mut headers = ::http::HeaderMap::new();
        headers.insert("grpc-status", ::http::HeaderValue::from_static(value));
        HttpClassifier::new().judge(
            &::http::Method::GET,
            &::http::HeaderMap::new(),
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
