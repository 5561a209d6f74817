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

use std::error::Error;

use ::tower::Layer;

use crate::classify::grpc::{Pushback, RetryableCodes, PUSHBACK};
use crate::integration::Call;
use crate::{Classification, Policy, RetryBudget};

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

/// The [`tower::retry::Policy`]: one per request
/// (tower clones it for each), holding that call's attempts.
pub struct RetryPolicy<C = HttpClassifier> {
    policy: &'static Policy,
    budget: Option<&'static RetryBudget>,
    name: &'static str,
    classifier: C,
    /// This request's retry state; started when tower clones the policy for
    /// the request, just as its first attempt begins.
    call: Option<Call<'static>>,
}

impl RetryPolicy {
    /// Retries under `policy` with the [`HttpClassifier`].
    #[must_use]
    pub fn new(policy: &'static Policy) -> Self {
        RetryPolicy {
            policy,
            budget: None,
            name: "tower",
            classifier: HttpClassifier::default(),
            call: None,
        }
    }
}

impl<C> RetryPolicy<C> {
    /// Draws retries from a budget shared by every request that names it.
    #[must_use]
    pub fn with_budget(mut self, budget: &'static RetryBudget) -> Self {
        self.budget = Some(budget);
        self.call = None;
        self
    }

    /// Names the calls in `tracing` events and the `function` label of
    /// metrics (default `"tower"`).
    #[must_use]
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Classifies outcomes with `classifier`.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> RetryPolicy<C2> {
        RetryPolicy {
            policy: self.policy,
            budget: self.budget,
            name: self.name,
            classifier,
            call: None,
        }
    }
}

impl<C: Clone> Clone for RetryPolicy<C> {
    /// A policy for a new request: tower clones the policy as each request
    /// starts, so the clone's attempts start now.
    fn clone(&self) -> Self {
        RetryPolicy {
            policy: self.policy,
            budget: self.budget,
            name: self.name,
            classifier: self.classifier.clone(),
            call: Some(Call::start(self.policy, self.budget, self.name)),
        }
    }
}

impl<C> core::fmt::Debug for RetryPolicy<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("policy", self.policy)
            .field("budget", &self.budget)
            .field("name", &self.name)
            .field("attempt", &self.call.as_ref().map(Call::attempt))
            .finish_non_exhaustive()
    }
}

impl<C, Req, Res, E> ::tower::retry::Policy<Req, Res, E> for RetryPolicy<C>
where
    C: Classify<Req, Res, E>,
    Req: Clone,
{
    type Future = tokio::time::Sleep;

    fn retry(&mut self, request: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        let outcome = self.classifier.classify(request, result);
        // CIRCUIT BREAKER PLUG-IN POINT: a breaker would record `outcome`
        // here (success or failure of this attempt) and, when open, turn a
        // `Transient` outcome into a stop before the decision below spends
        // budget on it.
        let (policy, budget, name) = (self.policy, self.budget, self.name);
        let call = self
            .call
            .get_or_insert_with(|| Call::start(policy, budget, name));
        call.judge(outcome).ok().map(tokio::time::sleep)
    }

    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}

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
