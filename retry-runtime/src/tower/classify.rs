//! What the layer makes of an attempt's outcome: the [`Classify`] trait and
//! the default [`HttpClassifier`].

use std::error::Error;

use crate::classify::grpc::RetryableCodes;
use crate::integration::classify_http;
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
        let outcome = match result {
            Ok(response) => Ok(response),
            Err(error) => Err(error as &(dyn Error + 'static)),
        };
        self.judge(request, outcome)
    }
}

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

    fn judge<B, ResB>(
        &self,
        request: &::http::Request<B>,
        outcome: Result<&::http::Response<ResB>, &(dyn Error + 'static)>,
    ) -> Classification {
        let outcome = outcome.map(|response| (response.status(), response.headers()));
        classify_http(
            request.method(),
            request.headers(),
            self.grpc_codes,
            outcome,
        )
    }
}

/// [`HttpClassifier`] for a service below the layer that fails with tower's
/// `BoxError`, from [`HttpClassifier::boxed_errors`]. A
/// `tower::timeout::error::Elapsed` is a transient error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoxedHttpClassifier(HttpClassifier);

impl<B, ResB> Classify<::http::Request<B>, ::http::Response<ResB>, Box<dyn Error + Send + Sync>>
    for BoxedHttpClassifier
{
    fn classify(
        &self,
        request: &::http::Request<B>,
        result: &Result<::http::Response<ResB>, Box<dyn Error + Send + Sync>>,
    ) -> Classification {
        let outcome = match result {
            Ok(response) => Ok(response),
            Err(error) => Err(&**error as &(dyn Error + 'static)),
        };
        self.0.judge(request, outcome)
    }
}
