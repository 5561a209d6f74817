//! What the layer makes of an attempt's outcome: the [`Classify`] trait and
//! the default [`HttpClassifier`].

use std::error::Error;

use crate::classify::grpc::RetryableCodes;
use crate::integration::{classify_http, is_grpc};
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
/// and pushback, connection errors; see the [module docs](super).
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
        let repeatable = crate::idempotency::is_repeatable(request.method(), request.headers());
        let outcome = match result {
            Ok(response) => Ok((response.status(), response.headers())),
            Err(error) => Err(error as &(dyn Error + 'static)),
        };
        let grpc = is_grpc(request.headers());
        classify_http(repeatable, grpc, self.grpc_codes, outcome)
    }
}
