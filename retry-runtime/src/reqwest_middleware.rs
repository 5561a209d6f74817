//! A [`reqwest_middleware`] middleware that retries
//! with the runtime's [`Policy`]: backoff and jitter, `deadline`, a shared
//! [`RetryBudget`], a [`CircuitBreaker`] (one, or one per upstream host) and
//! the server's `Retry-After`, decided exactly as `#[retry]` decides.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use retry_runtime::{idempotency::WithIdempotencyKey, reqwest_middleware::RetryMiddleware};
//! use retry_runtime::{CircuitBreaker, Policy, RetryBudget};
//!
//! # async fn run() -> reqwest_middleware::Result<()> {
//! // Built at start-up from configuration: no `'static` needed.
//! let budget = Arc::new(RetryBudget::new(100, 0.1));
//! let breaker = Arc::new(CircuitBreaker::new().with_consecutive_failures(5));
//! let policy = Policy::new().with_max_attempts(4).with_deadline(Duration::from_secs(10));
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryMiddleware::new(policy).with_budget(budget).with_breaker(breaker).named("payments"))
//!     .build();
//!
//! // A GET is retried on 503 (after its Retry-After), 429, timeouts, refused
//! // or dropped connections.
//! client.get("http://127.0.0.1:8080/balance").send().await?;
//! // A POST is retried only with an idempotency key.
//! client.post("http://127.0.0.1:8080/charge").idempotency_key().send().await?;
//! # Ok(()) }
//! ```
//!
//! # What is retried
//!
//! With the default [`HttpClassifier`], only requests that are safe to
//! repeat: an idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or
//! one carrying an `Idempotency-Key` header. For those, a response with
//! status 408, 429 or 5xx except 501 (its `Retry-After` as the hint), and an
//! error that
//! [`classify::reqwest::is_transient_repeatable`](crate::classify::reqwest::is_transient_repeatable)
//! accepts, including a connection closed before the response. A request
//! whose body cannot be cloned (a stream) is sent once.
//!
//! Every request is a call for the budget, the breaker and the counters,
//! those not retried too: a POST without a key that gets a 503 takes a
//! token and counts against the breaker, and ends as `not_retryable`; one
//! that gets a 200 gives `token_ratio` back (gRFC A6's rule, as in the tower
//! layer and `#[retry]`).
//!
//! Any other rule is a closure given to
//! [`with_classifier`](RetryMiddleware::with_classifier):
//! `Fn(&reqwest::Request, &Outcome) -> Classification`.
//!
//! # Breakers
//!
//! [`with_breaker`](RetryMiddleware::with_breaker) asks one
//! [`CircuitBreaker`] before every attempt;
//! [`per_authority`](RetryMiddleware::per_authority) one per upstream
//! `host:port`, from a [`Registry`]. A request refused by an open circuit
//! fails with `reqwest_middleware::Error::Middleware` holding a
//! [`CircuitOpen`] (`error.is::<CircuitOpen>()`); a failed attempt whose
//! retry is refused returns its own answer.
//!
//! When the retries stop, the caller gets the last response or error,
//! unchanged. Dropping the future cancels the call; nothing is spawned.
//!
//! [`reqwest_middleware`]: https://docs.rs/reqwest-middleware/0.5/reqwest_middleware/

use std::error::Error;
use std::sync::Arc;

use ::reqwest_middleware::{Middleware, Next};
use http::Extensions;
use reqwest::{Request, Response};

use crate::classify::grpc::RetryableCodes;
use crate::integration::{classify_http, Call};
use crate::registry::{Registry, Upstream};
use crate::{CircuitBreaker, CircuitOpen, Classification, Policy, RetryBudget, Shared};

/// What a request's attempt came to.
pub type Outcome = ::reqwest_middleware::Result<Response>;

/// Judges an attempt's outcome for the middleware: a closure
/// `Fn(&Request, &Outcome) -> Classification`, or the [`HttpClassifier`].
pub trait Classify: Send + Sync + 'static {
    /// What the outcome of `request` means for a retry.
    fn classify(&self, request: &Request, outcome: &Outcome) -> Classification;
}

impl<F> Classify for F
where
    F: Fn(&Request, &Outcome) -> Classification + Send + Sync + 'static,
{
    fn classify(&self, request: &Request, outcome: &Outcome) -> Classification {
        self(request, outcome)
    }
}

/// The default classifier; see the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpClassifier {
    grpc_codes: RetryableCodes,
}

impl HttpClassifier {
    /// Retries gRPC statuses (of a trailers-only response) with these codes
    /// instead of `UNAVAILABLE` alone.
    #[must_use]
    pub const fn with_grpc_codes(mut self, codes: RetryableCodes) -> Self {
        self.grpc_codes = codes;
        self
    }
}

impl Classify for HttpClassifier {
    fn classify(&self, request: &Request, outcome: &Outcome) -> Classification {
        let outcome = match outcome {
            Ok(response) => Ok((response.status(), response.headers())),
            Err(::reqwest_middleware::Error::Reqwest(error)) => {
                Err(error as &(dyn Error + 'static))
            }
            Err(::reqwest_middleware::Error::Middleware(error)) => {
                Err(AsRef::<dyn Error + Send + Sync + 'static>::as_ref(error)
                    as &(dyn Error + 'static))
            }
        };
        classify_http(
            request.method(),
            request.headers(),
            self.grpc_codes,
            outcome,
        )
    }
}

/// The retrying middleware; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct RetryMiddleware<C = HttpClassifier> {
    policy: Policy,
    budget: Option<Shared<RetryBudget>>,
    breaker: Option<Shared<CircuitBreaker>>,
    upstreams: Option<Shared<Registry>>,
    /// What keys the registry: the URL's `host:port` when `None`.
    key: Option<KeyFn>,
    name: &'static str,
    classifier: C,
}

/// A function deriving a registry key from a request.
type DeriveKey = dyn Fn(&Request) -> Option<String> + Send + Sync;

/// A key of the caller's own, derived from the request.
#[derive(Clone)]
struct KeyFn(Arc<DeriveKey>);

impl core::fmt::Debug for KeyFn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("KeyFn(..)")
    }
}

impl RetryMiddleware {
    /// Retries under `policy`, with the [`HttpClassifier`].
    #[must_use]
    pub const fn new(policy: Policy) -> Self {
        RetryMiddleware {
            policy,
            budget: None,
            breaker: None,
            upstreams: None,
            key: None,
            name: "reqwest",
            classifier: HttpClassifier {
                grpc_codes: RetryableCodes::UNAVAILABLE,
            },
        }
    }
}

impl<C> RetryMiddleware<C> {
    /// Draws retries from a budget shared by every call that names it (a
    /// `&'static RetryBudget` or an `Arc<RetryBudget>`).
    #[must_use]
    pub fn with_budget(mut self, budget: impl Into<Shared<RetryBudget>>) -> Self {
        self.budget = Some(budget.into());
        self
    }

    /// Asks `breaker` (a `&'static CircuitBreaker` or an `Arc`) before every
    /// attempt and tells it every outcome as the classifier judged it. A
    /// request it refuses fails with `Error::Middleware` holding a
    /// [`CircuitOpen`]; a retry it refuses returns the failed attempt's
    /// answer.
    #[must_use]
    pub fn with_breaker(mut self, breaker: impl Into<Shared<CircuitBreaker>>) -> Self {
        self.breaker = Some(breaker.into());
        self
    }

    /// One breaker and one budget per upstream: each request uses the
    /// [`Upstream`] that `registry` holds for its URL's `host:port`, made on
    /// first use, in place of the middleware's own breaker and budget; an
    /// upstream without a budget draws from the middleware's (as the tower
    /// layer's `per_authority` does).
    /// A breaker the registry's factory leaves unnamed is named after the
    /// `host:port`, so its `tracing` events and metrics say which host it
    /// guards (see [Names](crate::registry#names)).
    #[must_use]
    pub fn per_authority(mut self, registry: impl Into<Shared<Registry>>) -> Self {
        self.upstreams = Some(registry.into());
        self.key = None;
        self
    }

    /// One breaker and one budget per key that `key` derives from each
    /// request (a tenant header, say), from `registry`, made on first use,
    /// in place of the middleware's own (an upstream without a budget draws
    /// from the middleware's). A request `key` gives no key to
    /// uses the middleware's breaker and budget.
    #[must_use]
    pub fn per_key(
        mut self,
        registry: impl Into<Shared<Registry>>,
        key: impl Fn(&Request) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.upstreams = Some(registry.into());
        self.key = Some(KeyFn(Arc::new(key)));
        self
    }

    /// Names the calls in `tracing` events and the `function` label of
    /// metrics (default `"reqwest"`).
    #[must_use]
    pub const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Classifies outcomes with `classifier`, such as a closure
    /// `Fn(&Request, &Outcome) -> Classification`.
    #[must_use]
    pub fn with_classifier<C2: Classify>(self, classifier: C2) -> RetryMiddleware<C2> {
        RetryMiddleware {
            policy: self.policy,
            budget: self.budget,
            breaker: self.breaker,
            upstreams: self.upstreams,
            key: self.key,
            name: self.name,
            classifier,
        }
    }

    /// The upstream of a request, when the middleware keys by authority.
    fn upstream(&self, request: &Request) -> Option<Arc<Upstream>> {
        let registry = self.upstreams.as_ref()?;
        if let Some(KeyFn(key)) = &self.key {
            return key(request).map(|key| registry.get(&key));
        }
        let url = request.url();
        let host = url.host_str()?;
        let key = crate::registry::host_key(host, url.port_or_known_default());
        Some(registry.get(&key))
    }
}

#[async_trait::async_trait]
impl<C: Classify> Middleware for RetryMiddleware<C> {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Outcome {
        let upstream = self.upstream(&request);
        // An upstream's breaker and budget replace the middleware's; one
        // without a budget draws from the middleware's, as the tower
        // layer's do.
        let (budget, breaker) = match &upstream {
            Some(upstream) => (
                upstream.budget().or(self.budget.as_deref()),
                upstream.breaker(),
            ),
            None => (self.budget.as_deref(), self.breaker.as_deref()),
        };
        let mut call = Call::start(&self.policy, budget, breaker, self.name);
        call.waiting();
        // With a breaker, a failed attempt's answer is kept through the
        // wait: a retry the breaker then refuses returns it.
        let mut kept = None;
        loop {
            if !call.acquire() {
                // Refused: the call stops with reason `open`.
                let _ = call.judge(Classification::Permanent);
                return kept
                    .unwrap_or_else(|| Err(::reqwest_middleware::Error::middleware(CircuitOpen)));
            }
            // Let go of the answer kept through the wait before the next
            // attempt.
            drop(kept.take());
            let span = crate::observe::http_attempt_span(self.name, call.attempt());
            let Some(attempt) = request.try_clone() else {
                // A streaming body: sent once, and counted and traced as any
                // attempt.
                let head = head_of(&request);
                // Marked with the attempt's permit, as below.
                let result =
                    crate::observe::in_span(span, call.marked(|| next.run(request, extensions)))
                        .await;
                let outcome = match self.classifier.classify(&head, &result) {
                    Classification::Transient(_) => Classification::Unrepeatable,
                    outcome => outcome,
                };
                let _ = call.judge_answer(&result, outcome);
                return result;
            };
            // Marked with the attempt's breaker permit: a middleware below
            // that asks the same breaker runs under it, and its outcome is
            // counted once (`CircuitBreaker::acquire`).
            let result = crate::observe::in_span(
                span,
                call.marked(|| next.clone().run(attempt, extensions)),
            )
            .await;
            let outcome = self.classifier.classify(&request, &result);
            let wait = match call.judge_answer(&result, outcome) {
                Ok(wait) => wait,
                Err(_) => return result,
            };
            // Without a breaker, the failed attempt's response (and the
            // connection it holds) is let go before the wait.
            kept = if breaker.is_some() {
                Some(result)
            } else {
                drop(result);
                None
            };
            crate::sleep::sleep(wait).await;
        }
    }
}

/// A request's method, URL and headers, without its body: what a classifier
/// reads of a request whose body was sent.
fn head_of(request: &Request) -> Request {
    let mut head = Request::new(request.method().clone(), request.url().clone());
    head.headers_mut().clone_from(request.headers());
    head
}
