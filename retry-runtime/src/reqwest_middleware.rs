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
//! A request the server never processed (a refused connection, a refused
//! HTTP/2 stream), whatever its method, is sent again at once as the same
//! attempt, with no budget token (gRFC A6's transparent retry: up to 3
//! times a call while it never left, once after a refusal, never past the
//! deadline; then retried as any transient failure). reqwest's own
//! client already sends a refused stream again unless it is built with
//! `.retry(reqwest::retry::never())` or a retry policy of its own.
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
//! Each attempt runs in the call's attempt context, as the tower layer's
//! does: a middleware after this one reads it with
//! [`current_attempt`](crate::current_attempt).
//!
//! [`reqwest_middleware`]: https://docs.rs/reqwest-middleware/0.5/reqwest_middleware/

use std::error::Error;
use std::sync::Arc;

use ::reqwest_middleware::{Middleware, Next};
use http::Extensions;
use reqwest::{Request, Response};

pub use crate::classify::http::{Classify, HttpClassifier};
use crate::give_up::{gave_up, Started};
use crate::integration::{exchange, Exchange, Selected};
use crate::propagate::Stamp;
use crate::registry::Registry;
use crate::{CircuitBreaker, CircuitOpen, Classification, Policy, RetryBudget, Shared, Stopped};

/// What a request's attempt came to: what a classifier given to
/// [`RetryMiddleware::with_classifier`] judges.
///
/// ```
/// use retry_runtime::reqwest_middleware::{Outcome, RetryMiddleware};
/// use retry_runtime::{Classification, Policy};
///
/// /// A 503 or a refused connection is retried, whatever the method.
/// fn busy_or_refused(_: &reqwest::Request, outcome: &Outcome) -> Classification {
///     match outcome {
///         Ok(response) if response.status() == 503 => Classification::Transient(None),
///         Ok(_) => Classification::Done,
///         Err(error) if error.is_connect() => Classification::Transient(None),
///         Err(_) => Classification::Permanent,
///     }
/// }
///
/// let middleware = RetryMiddleware::new(Policy::new().with_max_attempts(3))
///     .with_classifier(busy_or_refused);
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(middleware)
///     .build();
/// # let _ = client;
/// ```
pub type Outcome = ::reqwest_middleware::Result<Response>;

impl Classify<Request, Response, ::reqwest_middleware::Error> for HttpClassifier {
    fn classify(&self, request: &Request, outcome: &Outcome) -> Classification {
        let outcome: Result<_, &(dyn Error + 'static)> = match outcome {
            Ok(response) => Ok((response.status(), response.headers())),
            Err(::reqwest_middleware::Error::Reqwest(error)) => Err(error),
            Err(::reqwest_middleware::Error::Middleware(error)) => Err(error.as_ref()),
        };
        self.judge(request.method(), request.headers(), outcome)
    }
}

/// The retrying middleware; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct RetryMiddleware<C = HttpClassifier> {
    policy: Policy,
    budget: Option<Shared<RetryBudget>>,
    breaker: Option<Shared<CircuitBreaker>>,
    /// The registry of upstreams, and what keys it: the URL's `host:port`
    /// when `None`.
    upstreams: Option<(Shared<Registry>, Option<DeriveKey>)>,
    name: &'static str,
    classifier: C,
    give_up: Option<Func<Arc<Hook>>>,
}

/// A function of the caller's (what derives a registry key from a request,
/// the middleware's `on_give_up` hook), shown as `..` by `Debug`.
#[derive(Clone)]
struct Func<F>(F);

impl<F> core::fmt::Debug for Func<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("..")
    }
}

/// What `on_give_up` is given.
type Hook = dyn Fn(&Outcome, &Stopped) + Send + Sync;

/// A function deriving a registry key from a request.
type DeriveKey = Func<Arc<dyn Fn(&Request) -> Option<String> + Send + Sync>>;

impl RetryMiddleware {
    /// Retries under `policy`, with the [`HttpClassifier`].
    #[must_use]
    pub const fn new(policy: Policy) -> Self {
        RetryMiddleware {
            policy,
            budget: None,
            breaker: None,
            upstreams: None,
            name: "reqwest",
            classifier: HttpClassifier::new(),
            give_up: None,
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
    /// [`Upstream`](crate::registry::Upstream) that `registry` holds for its URL's `host:port`, made on
    /// first use, in place of the middleware's own breaker and budget; an
    /// upstream without a budget draws from the middleware's (as the tower
    /// layer's `per_authority` does).
    /// A breaker the registry's factory leaves unnamed is named after the
    /// `host:port`, so its `tracing` events and metrics say which host it
    /// guards (see [Names](crate::registry#names)).
    #[must_use]
    pub fn per_authority(mut self, registry: impl Into<Shared<Registry>>) -> Self {
        self.upstreams = Some((registry.into(), None));
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
        self.upstreams = Some((registry.into(), Some(Func(Arc::new(key)))));
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
    pub fn with_classifier<C2>(self, classifier: C2) -> RetryMiddleware<C2>
    where
        C2: Classify<Request, Response, ::reqwest_middleware::Error> + Send + Sync + 'static,
    {
        RetryMiddleware {
            policy: self.policy,
            budget: self.budget,
            breaker: self.breaker,
            upstreams: self.upstreams,
            name: self.name,
            classifier,
            give_up: self.give_up,
        }
    }

    /// Calls `on_give_up` once when a request's call returns an error or a
    /// response the classifier retried (a 503 after the last attempt), with
    /// what the caller gets and how the call stopped: the reason, the
    /// attempts made and the time taken, as `#[retry]`'s key does. Not
    /// called for a success. With `tracing`, the call's give-up event is
    /// emitted all the same: the hook is for what the program does about
    /// it, not to log it again (docs/observability.md).
    ///
    /// ```
    /// use retry_runtime::reqwest_middleware::{Outcome, RetryMiddleware};
    /// use retry_runtime::{Policy, Stopped};
    ///
    /// fn count_give_up(outcome: &Outcome, stopped: &Stopped) {
    ///     let status = outcome.as_ref().ok().map(reqwest::Response::status);
    ///     // e.g. a counter of your own, by status and `stopped.reason()`.
    ///     let _ = (status, stopped.reason(), stopped.attempts(), stopped.elapsed());
    /// }
    ///
    /// let middleware = RetryMiddleware::new(Policy::new()).on_give_up(count_give_up);
    /// # let _ = middleware;
    /// ```
    #[must_use]
    pub fn on_give_up(
        mut self,
        on_give_up: impl Fn(&Outcome, &Stopped) + Send + Sync + 'static,
    ) -> Self {
        self.give_up = Some(Func(Arc::new(on_give_up)));
        self
    }

    /// The breaker and budget of a request: its upstream's, when the
    /// middleware keys by authority or by a key of the caller's, or else
    /// the middleware's own.
    fn select(&self, request: &Request) -> Selected {
        let own = self
            .breaker
            .clone()
            .map_or(Selected::Own, Selected::Breaker);
        let Some((registry, key)) = &self.upstreams else {
            return own;
        };
        let url = request.url();
        let key = match key {
            Some(Func(key)) => key(request),
            None => url
                .host_str()
                .map(|host| crate::registry::host_key(host, url.port_or_known_default())),
        };
        Selected::keyed(registry, key.as_deref(), own)
    }
}

#[async_trait::async_trait]
impl<C> Middleware for RetryMiddleware<C>
where
    C: Classify<Request, Response, ::reqwest_middleware::Error> + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Outcome {
        let selected = self.select(&request);
        // A body that cannot be cloned (a stream) is sent once; the
        // classifier reads the request's head (method, URL and headers).
        let (judged, first, copies) = match request.try_clone() {
            Some(copy) => (request, copy, true),
            None => {
                let mut head = Request::new(request.method().clone(), request.url().clone());
                head.headers_mut().clone_from(request.headers());
                (head, request, false)
            }
        };
        let reqwest = Reqwest {
            classifier: &self.classifier,
            judged,
            copies,
            next,
            extensions,
        };
        let started = self.give_up.as_ref().map(|_| Started::tokio());
        let (budget, name) = (self.budget.as_deref(), self.name);
        let outcome = exchange(reqwest, &self.policy, &selected, budget, name, first).await;
        if let (Some(Func(hook)), Some(started)) = (&self.give_up, started) {
            gave_up(&&**hook, started, &outcome);
        }
        outcome
    }
}

/// A request's call as the middleware makes it.
struct Reqwest<'a, C> {
    classifier: &'a C,
    /// What the classifier reads: the request, or its head once its
    /// streaming body was sent.
    judged: Request,
    /// Whether `judged` can be copied for another attempt.
    copies: bool,
    next: Next<'a>,
    extensions: &'a mut Extensions,
}

impl<C> Exchange for Reqwest<'_, C>
where
    C: Classify<Request, Response, ::reqwest_middleware::Error>,
{
    type Request = Request;
    type Response = Response;
    type Error = ::reqwest_middleware::Error;
    type Output = Outcome;

    fn send(
        &mut self,
        mut request: Request,
        stamp: Stamp,
    ) -> impl core::future::Future<Output = Outcome> {
        stamp.http(request.headers_mut());
        self.next.clone().run(request, self.extensions)
    }

    fn classify(&self, outcome: &Outcome) -> Classification {
        self.classifier.classify(&self.judged, outcome)
    }

    fn copy(&mut self) -> Option<Request> {
        self.copies.then(|| self.judged.try_clone()).flatten()
    }

    fn output(outcome: Outcome) -> Outcome {
        outcome
    }

    fn refused() -> Option<Outcome> {
        Some(Err(::reqwest_middleware::Error::middleware(CircuitOpen)))
    }
}
