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

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::error::Error;

use ::tower::layer::util::Stack;
use ::tower::{Layer, Service};

use crate::classify::grpc::{Pushback, RetryableCodes, PUSHBACK};
use crate::integration::Call;
use crate::{CircuitBreaker, CircuitOpen, CircuitPermit, Classification, Policy, RetryBudget};

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

/// The [`tower::retry::Policy`]: one per request
/// (tower clones it for each), holding that call's attempts.
pub struct RetryPolicy<C = HttpClassifier> {
    policy: &'static Policy,
    budget: Option<&'static RetryBudget>,
    name: &'static str,
    classifier: C,
    /// A breaker whose open circuit ends the retries: the next attempt
    /// would be refused.
    breaker: Option<&'static CircuitBreaker>,
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
            breaker: None,
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
            breaker: self.breaker,
            call: None,
        }
    }

    /// Stops retrying while `breaker` is open (the next attempt would be
    /// refused). [`RetryLayer::with_breaker`] also puts the breaker in front
    /// of every attempt.
    #[must_use]
    pub fn with_breaker(mut self, breaker: &'static CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
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
            breaker: self.breaker,
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
        // The breaker's layer, just under this one, refused the attempt:
        // the call stops there, for the reason `open`.
        let refused = self.breaker.is_some() && take_refused();
        let outcome = self.classifier.classify(request, result);
        let (policy, budget, name) = (self.policy, self.budget, self.name);
        let call = self
            .call
            .get_or_insert_with(|| Call::start(policy, budget, name));
        // The attempt's outcome is recorded by the breaker's own layer; an
        // open circuit would refuse the retry, so do not wait for it.
        let open = refused
            || (matches!(outcome, Classification::Transient(_))
                && self.breaker.is_some_and(|breaker| breaker.is_open(false)));
        if open {
            call.stop(crate::Stop::Open);
            return None;
        }
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

/// A [`Layer`] that asks a shared [`CircuitBreaker`] before every call and
/// tells it how each call went, as judged by the classifier (a transient
/// failure counts against the dependency; a success or a permanent answer
/// counts for it). A refused call fails at once with
/// [`BreakerError::Open`], without reaching the inner service.
///
/// [`RetryLayer::with_breaker`] puts it under the retries, so that each
/// attempt asks; use it alone to guard calls that are not retried.
#[derive(Clone, Debug)]
pub struct CircuitBreakerLayer<C = HttpClassifier> {
    breaker: &'static CircuitBreaker,
    classifier: C,
}

impl CircuitBreakerLayer {
    /// Guards calls with `breaker`, judging outcomes with the
    /// [`HttpClassifier`].
    #[must_use]
    pub fn new(breaker: &'static CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breaker,
            classifier: HttpClassifier::default(),
        }
    }
}

impl<C> CircuitBreakerLayer<C> {
    /// Judges outcomes with `classifier`.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> CircuitBreakerLayer<C2> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier,
        }
    }
}

impl<S, C: Clone> Layer<S> for CircuitBreakerLayer<C> {
    type Service = CircuitBreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService {
            inner,
            breaker: self.breaker,
            classifier: self.classifier.clone(),
        }
    }
}

/// The service of a [`CircuitBreakerLayer`].
#[derive(Clone, Debug)]
pub struct CircuitBreakerService<S, C = HttpClassifier> {
    inner: S,
    breaker: &'static CircuitBreaker,
    classifier: C,
}

impl<S, C, Req> Service<Req> for CircuitBreakerService<S, C>
where
    S: Service<Req>,
    C: Classify<Req, S::Response, S::Error> + Clone,
    Req: Clone,
{
    type Response = S::Response;
    type Error = BreakerError<S::Error>;
    type Future = CircuitBreakerFuture<S::Future, C, Req>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(BreakerError::Service)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        match self.breaker.acquire() {
            Ok(permit) => CircuitBreakerFuture {
                future: Some(self.inner.call(request.clone())),
                permit: Some(permit),
                request: Some(request),
                classifier: self.classifier.clone(),
            },
            Err(CircuitOpen) => CircuitBreakerFuture {
                future: None,
                permit: None,
                request: None,
                classifier: self.classifier.clone(),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// A call a [`CircuitBreakerService`] let through (its outcome is
    /// recorded when it ends; dropped before, it frees its probe slot), or
    /// one it refused.
    #[must_use = "futures do nothing unless polled"]
    pub struct CircuitBreakerFuture<F, C, Req> {
        #[pin]
        future: Option<F>,
        permit: Option<CircuitPermit<'static>>,
        request: Option<Req>,
        classifier: C,
    }
}

impl<F, C, Req, Res, E> Future for CircuitBreakerFuture<F, C, Req>
where
    F: Future<Output = Result<Res, E>>,
    C: Classify<Req, Res, E>,
{
    type Output = Result<Res, BreakerError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(future) = this.future.as_pin_mut() else {
            REFUSED.with(|refused| refused.set(true));
            return Poll::Ready(Err(BreakerError::Open(CircuitOpen)));
        };
        let Poll::Ready(result) = future.poll(cx) else {
            return Poll::Pending;
        };
        REFUSED.with(|refused| refused.set(false));
        if let (Some(permit), Some(request)) = (this.permit.take(), this.request.as_ref()) {
            let failed = matches!(
                this.classifier.classify(request, &result),
                Classification::Transient(_)
            );
            permit.record(!failed);
        }
        Poll::Ready(result.map_err(BreakerError::Service))
    }
}

// A breaker's refusal, from its future to the retry policy just above it:
// tower's retry future calls the policy in the same poll that saw the
// inner future finish, on the same thread. Cleared by every call the
// breaker let through, so a refusal nobody read is not taken for a later
// call's.
thread_local! {
    static REFUSED: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether the breaker's layer just refused the attempt being judged.
fn take_refused() -> bool {
    REFUSED.with(|refused| refused.replace(false))
}

/// The error of a service behind a [`CircuitBreakerLayer`].
#[derive(Debug)]
#[non_exhaustive]
pub enum BreakerError<E> {
    /// The breaker refused the call: the circuit is open.
    Open(CircuitOpen),
    /// The service's own error.
    Service(E),
}

impl<E> core::fmt::Display for BreakerError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BreakerError::Open(open) => open.fmt(f),
            // The service's error is the source: saying it here too would
            // print it twice in a report that walks the chain (`{:#}`).
            BreakerError::Service(_) => {
                f.write_str("the service behind the circuit breaker failed")
            }
        }
    }
}

/// The service's error is the source, so that classifiers walking the chain
/// ([`classify::chain`](crate::classify::chain), the [`HttpClassifier`]) find
/// it; a refusal has none and is not retried.
impl<E: Error + 'static> Error for BreakerError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BreakerError::Open(_) => None,
            BreakerError::Service(error) => Some(error),
        }
    }
}
