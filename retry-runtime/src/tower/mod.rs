//! A tower [`Layer`] and [`tower::retry::Policy`]
//! that retry with the runtime's [`Policy`]: backoff and jitter, `deadline`,
//! a shared [`RetryBudget`], and the server's hint (`Retry-After` on HTTP
//! responses, `grpc-retry-pushback-ms` on gRPC ones), decided exactly as
//! `#[retry]` decides.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::time::Duration;
//! use http::{Request, Response, StatusCode};
//! use retry_runtime::{tower::RetryLayer, Policy, RetryBudget};
//! use tower::{Service, ServiceBuilder, ServiceExt};
//!
//! static POLICY: Policy = Policy::new().with_max_attempts(4).with_deadline(Duration::from_secs(10));
//! static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! static CALLS: AtomicU32 = AtomicU32::new(0);
//! let flaky = tower::service_fn(|_request: Request<String>| async {
//!     let status = if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
//!         StatusCode::SERVICE_UNAVAILABLE
//!     } else {
//!         StatusCode::OK
//!     };
//!     let response = Response::builder().status(status).header("retry-after", "1");
//!     Ok::<_, std::io::Error>(response.body(()).unwrap())
//! });
//! let mut client = ServiceBuilder::new()
//!     .layer(RetryLayer::new(&POLICY).with_budget(&BUDGET).named("users"))
//!     .service(flaky);
//!
//! let started = tokio::time::Instant::now();
//! let response = client.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
//! assert_eq!(response.status(), StatusCode::OK);
//! assert!(started.elapsed() >= Duration::from_secs(1)); // Retry-After: 1 was honoured
//! # }
//! ```
//!
//! # What is retried
//!
//! The default [`HttpClassifier`] works on `http::Request` and
//! `http::Response` (hyper, hyper-util, axum, tonic channels):
//!
//! - a response with `grpc-status` in its headers (a trailers-only gRPC
//!   error) is retried when its code is in the classifier's
//!   [`RetryableCodes`] (`UNAVAILABLE` by default) and its pushback allows
//!   it; the pushback is the hint (gRFC A6);
//! - any other response with status 408, 429 or 5xx except 501 is retried,
//!   with its `Retry-After` as the hint, when the request is safe to repeat:
//!   an idempotent method, or an `Idempotency-Key` header;
//! - an error is retried when the request is safe to repeat and
//!   [`classify::chain`](crate::classify::chain) finds it transient
//!   (including a connection closed before the response), or, for any
//!   request, when the connection failed before sending.
//!
//! Any other classification is a closure
//! `Fn(&Req, &Result<Res, E>) -> Classification` given to
//! [`RetryLayer::with_classifier`].
//!
//! # Guarantees
//!
//! - The policy and budget are `&'static`: a layer is built once and cloned
//!   for every request. A policy read from configuration at start-up can be
//!   leaked once: `Box::leak(Box::new(policy))`.
//! - The call's `deadline` runs from the first attempt. A hint above `cap`,
//!   the deadline, the budget and `max` stop the retries and return the
//!   last response or error, unchanged.
//! - Waits are `tokio::time::sleep`; the per-attempt `timeout` of the policy
//!   is not applied here: add `tower::timeout` inside this layer for that.
//! - Requests are cloned for each attempt (`Req: Clone`); with hyper, use a
//!   body that is `Clone`, such as `http_body_util::Full<Bytes>`.
//! - [`RetryLayer::with_breaker`] puts a shared [`CircuitBreaker`] in front
//!   of every attempt ([`CircuitBreakerLayer`]): while it is open, requests
//!   fail at once with [`BreakerError::Open`] without reaching the service,
//!   and retries stop.

mod breaker;
mod classify;
mod policy;

use ::tower::layer::util::Stack;
use ::tower::Layer;

pub use self::breaker::{BreakerError, CircuitBreakerLayer, CircuitBreakerService, Guarded};
pub use self::classify::{Classify, HttpClassifier};
pub use self::policy::RetryPolicy;
use crate::{CircuitBreaker, Policy, RetryBudget};

/// A [`Layer`] that wraps a service in [`tower::retry::Retry`] with a
/// [`RetryPolicy`].
#[derive(Clone, Debug)]
pub struct RetryLayer<C = HttpClassifier> {
    policy: RetryPolicy<C>,
}

impl RetryLayer {
    /// Retries under `policy` with the [`HttpClassifier`].
    #[must_use]
    pub fn new(policy: &'static Policy) -> Self {
        RetryLayer {
            policy: RetryPolicy::new(policy),
        }
    }
}

impl<C> RetryLayer<C> {
    /// Draws retries from a budget shared by every request that names it.
    #[must_use]
    pub fn with_budget(self, budget: &'static RetryBudget) -> Self {
        RetryLayer {
            policy: self.policy.with_budget(budget),
        }
    }

    /// Names the calls in `tracing` events and metrics (default `"tower"`).
    #[must_use]
    pub fn named(self, name: &'static str) -> Self {
        RetryLayer {
            policy: self.policy.named(name),
        }
    }

    /// Classifies outcomes with `classifier`, such as a closure
    /// `Fn(&Req, &Result<Res, E>) -> Classification`.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> RetryLayer<C2> {
        RetryLayer {
            policy: self.policy.with_classifier(classifier),
        }
    }

    /// Puts `breaker` in front of every attempt ([`CircuitBreakerLayer`],
    /// judging outcomes with this layer's classifier), and stops retrying
    /// while it is open. Attempts it refuses fail with
    /// [`BreakerError::Open`], which is not retried; the service's own errors
    /// come as [`BreakerError::Service`].
    #[must_use]
    pub fn with_breaker(
        self,
        breaker: &'static CircuitBreaker,
    ) -> Stack<CircuitBreakerLayer<C>, RetryLayer<C>>
    where
        C: Clone,
    {
        let inner = CircuitBreakerLayer {
            breaker,
            classifier: self.policy.classifier.clone(),
        };
        let outer = RetryLayer {
            policy: self.policy.with_breaker(breaker),
        };
        Stack::new(inner, outer)
    }

    /// The policy each request's retries follow.
    #[must_use]
    pub fn policy(&self) -> &RetryPolicy<C> {
        &self.policy
    }
}

impl<S, C: Clone> Layer<S> for RetryLayer<C> {
    type Service = ::tower::retry::Retry<RetryPolicy<C>, S>;

    fn layer(&self, service: S) -> Self::Service {
        ::tower::retry::Retry::new(self.policy.clone(), service)
    }
}
