//! A [`reqwest_middleware`] middleware that retries
//! with the runtime's [`Policy`]: backoff and jitter, `deadline`, a shared
//! [`RetryBudget`] and the server's `Retry-After`, decided exactly as
//! `#[retry]` decides.
//!
//! ```no_run
//! use std::time::Duration;
//! use retry_runtime::{idempotency::WithIdempotencyKey, reqwest_middleware::RetryMiddleware, Policy};
//!
//! # async fn run() -> reqwest_middleware::Result<()> {
//! let policy = Policy::new().with_max_attempts(4).with_deadline(Duration::from_secs(10));
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryMiddleware::new(policy).named("payments"))
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
//! Only requests that are safe to repeat: an idempotent method (GET, HEAD,
//! OPTIONS, TRACE, PUT, DELETE) or one carrying an `Idempotency-Key` header.
//! For those, a response with status 408, 429 or 5xx except 501 (its
//! `Retry-After` as the hint), and an error that
//! [`classify::reqwest::is_transient_repeatable`](crate::classify::reqwest::is_transient_repeatable)
//! accepts, including a connection closed before the response. A request
//! whose body cannot be cloned (a stream) is sent once.
//!
//! When the retries stop, the caller gets the last response or error,
//! unchanged. Dropping the future cancels the call; nothing is spawned.

use ::reqwest_middleware::{Middleware, Next};
use http::Extensions;
use reqwest::{Request, Response};

use crate::integration::Call;
use crate::{Classification, Policy, RetryBudget};

/// The retrying middleware; see the [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct RetryMiddleware {
    policy: Policy,
    budget: Option<&'static RetryBudget>,
    name: &'static str,
}

impl RetryMiddleware {
    /// Retries under `policy`.
    #[must_use]
    pub const fn new(policy: Policy) -> Self {
        RetryMiddleware {
            policy,
            budget: None,
            name: "reqwest",
        }
    }

    /// Draws retries from a budget shared by every call that names it.
    #[must_use]
    pub const fn with_budget(mut self, budget: &'static RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Names the calls in `tracing` events and the `function` label of
    /// metrics (default `"reqwest"`).
    #[must_use]
    pub const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}

/// What the middleware makes of an attempt of a request that is safe to
/// repeat.
fn classify(result: &::reqwest_middleware::Result<Response>) -> Classification {
    match result {
        Ok(response) if crate::classify::reqwest::is_transient_response(response) => {
            Classification::Transient(crate::classify::reqwest::retry_after(response))
        }
        Ok(_) => Classification::Done,
        Err(::reqwest_middleware::Error::Reqwest(error))
            if crate::classify::reqwest::is_transient_repeatable(error) =>
        {
            Classification::Transient(None)
        }
        Err(::reqwest_middleware::Error::Middleware(error))
            if crate::classify::chain::is_transient_repeatable(error) =>
        {
            Classification::Transient(None)
        }
        Err(_) => Classification::Permanent,
    }
}

#[async_trait::async_trait]
impl Middleware for RetryMiddleware {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> ::reqwest_middleware::Result<Response> {
        if !crate::idempotency::is_repeatable(request.method(), request.headers()) {
            return next.run(request, extensions).await;
        }
        let mut call = Call::start(&self.policy, self.budget, self.name);
        loop {
            let Some(attempt) = request.try_clone() else {
                return next.run(request, extensions).await;
            };
            let span = crate::observe::http_attempt_span(self.name, call.attempt());
            let result = crate::observe::in_span(span, next.clone().run(attempt, extensions)).await;
            match call.judge(classify(&result)) {
                Ok(wait) => {
                    // The failed attempt's response holds a connection: let
                    // it go before waiting.
                    drop(result);
                    crate::sleep::sleep(wait).await;
                }
                Err(_) => return result,
            }
        }
    }
}
