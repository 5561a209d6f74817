//! What the layer makes of an attempt's outcome: the [`Classify`] trait and
//! the default [`HttpClassifier`].

use std::error::Error;

use crate::classify::grpc::{Pushback, RetryableCodes, PUSHBACK};
use crate::Classification;

/// Judges an attempt's outcome for the layer.
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

/// The default classifier: HTTP statuses and `Retry-After`, gRPC statuses
/// and pushback, connection errors; see the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpClassifier {
    grpc_codes: RetryableCodes,
}

impl HttpClassifier {
    /// Retries gRPC statuses with these codes instead of `UNAVAILABLE` alone.
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
        self.judge(
            request,
            result
                .as_ref()
                .map_err(|error| error as &(dyn Error + 'static)),
        )
    }
}

impl HttpClassifier {
    fn judge<B, ResB>(
        &self,
        request: &::http::Request<B>,
        result: Result<&::http::Response<ResB>, &(dyn Error + 'static)>,
    ) -> Classification {
        let repeatable = crate::idempotency::is_repeatable(request.method(), request.headers());
        match result {
            Ok(response) => {
                let headers = response.headers();
                if let Some(code) = headers.get("grpc-status") {
                    let code = code
                        .to_str()
                        .ok()
                        .and_then(|code| code.parse::<i32>().ok())
                        .unwrap_or(2); // UNKNOWN, as gRPC reads a malformed status
                    if code == 0 {
                        return Classification::Done;
                    }
                    let pushback = Pushback::parse(headers.get(PUSHBACK).map(|v| v.as_bytes()));
                    return if self.grpc_codes.allows(code, pushback) {
                        Classification::Transient(pushback.wait())
                    } else {
                        Classification::Permanent
                    };
                }
                if !crate::classify::http::is_transient_status(response.status()) {
                    Classification::Done
                } else if repeatable {
                    Classification::Transient(crate::classify::http::retry_after(headers))
                } else {
                    Classification::Permanent
                }
            }
            Err(error) => {
                let chain = if repeatable {
                    crate::classify::chain::Chain::repeatable()
                } else {
                    crate::classify::chain::Chain::new()
                };
                if chain.is_transient(error) {
                    Classification::Transient(None)
                } else {
                    Classification::Permanent
                }
            }
        }
    }
}
