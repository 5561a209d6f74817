//! The one HTTP driver: the tower layer (`tower::RetryService`) and the
//! reqwest middleware (`reqwest_middleware::RetryMiddleware`) each say how
//! to send an attempt, judge it (with `classify::http`'s `HttpClassifier`
//! or a closure, through its one `Classify` trait) and copy the request
//! ([`Exchange`]); [`exchange`] runs the call through the loop's own
//! decision ([`Attempts`]: backoff, jitter, deadline, budget, breaker,
//! server hints), and [`Selected`] is how both pick a request's breaker and
//! budget, by host or by a key of the user's. (`tower::RetryPolicy`, which
//! tower's own `Retry` drives, judges through the same [`Attempts`].)

use core::future::Future;
use std::sync::Arc;

use crate::attempts::Attempts;
use crate::decision::Resent;
use crate::propagate::Stamp;
use crate::registry::{Registry, Upstream};
use crate::{CircuitBreaker, Classification, Policy, RetryBudget, Shared};

/// What an HTTP layer tells [`exchange`] about its requests.
pub(crate) trait Exchange {
    /// What one attempt sends.
    type Request;
    /// An attempt's answer.
    type Response;
    /// An attempt's error.
    type Error;
    /// What the call returns: the last answer, or why nothing was sent.
    type Output;

    /// Waits until an attempt can be sent (a tower service's readiness);
    /// an error ends the call unsent. Always ready by default.
    fn ready(&mut self) -> impl Future<Output = Result<(), Self::Output>> {
        async { Ok(()) }
    }

    /// Sends one attempt, stamped with its number and the time it has left.
    fn send(
        &mut self,
        request: Self::Request,
        stamp: Stamp,
    ) -> impl Future<Output = Result<Self::Response, Self::Error>>;

    /// What the attempt's answer means for a retry.
    fn classify(&self, answer: &Result<Self::Response, Self::Error>) -> Classification;

    /// The request for the next attempt, or `None` when it cannot be made
    /// (a body over the replay limit, a stream): the call then stops.
    fn copy(&mut self) -> Option<Self::Request>;

    /// The call's output for an attempt's answer.
    fn output(answer: Result<Self::Response, Self::Error>) -> Self::Output;

    /// The call's output when its breaker refused the first attempt;
    /// `None` for a layer without a breaker, which is never refused.
    fn refused() -> Option<Self::Output>;
}

/// One HTTP call: each attempt asks the breaker, sends, is judged by the
/// loop's decision, and waits. A failed attempt's answer is kept through the
/// wait when the call has a breaker (a retry it then refuses returns that
/// answer, the last real one) and let go before it otherwise (with the
/// connection it holds).
///
/// A request that cannot be copied for the next attempt ([`Exchange::copy`]
/// gives `None`: a body above the replay limit, or one that cannot be
/// recorded) was sent once; a failure of it that would have been retried is
/// returned as [`Classification::Unrepeatable`], the stop reason
/// `not_retryable`, a budget token and a breaker failure, as a POST without
/// an idempotency key is: the same on both layers.
///
/// A request the server never processed ([`Classification::Unsent`],
/// [`Classification::Unprocessed`]) is sent again at once as the same
/// attempt, while [`Resent`] allows: no backoff, no budget token, and its
/// permit freed unrecorded by the next `acquire`.
pub(crate) async fn exchange<X: Exchange>(
    mut exchange: X,
    policy: &Policy,
    selected: &Selected,
    own: Option<&RetryBudget>,
    name: &'static str,
    first: X::Request,
) -> X::Output {
    let (budget, breaker) = match selected {
        Selected::Upstream(upstream) => (upstream.budget().or(own), upstream.breaker()),
        Selected::Breaker(breaker) => (own, Some(&**breaker)),
        Selected::Own => (own, None),
    };
    let mut call = Attempts::start(policy, budget, name).with_breaker_if(breaker);
    // Under way from here: a fan-out of HTTP calls inside a retried attempt
    // is judged as one of retried functions is.
    call.waiting();
    let mut request = first;
    let mut kept = None;
    let mut resent = Resent::default();
    loop {
        if !call.acquire() {
            // Refused: the call stops with reason `open`.
            let _ = call.judge(Classification::Permanent);
            if let Some(output) = kept.take().or_else(X::refused) {
                return output;
            }
        }
        // Let go of the answer kept through the wait before the next attempt.
        drop(kept.take());
        if let Err(unready) = exchange.ready().await {
            // Not sent: not retryable, and the breaker hears nothing.
            call.unsent();
            return unready;
        }
        let span = crate::observe::http_attempt_span(name, call.attempt());
        // Made and polled in the attempt's context, as a retried function's
        // attempt is: a retried call inside it (in a `service_fn`, or a
        // layer or middleware below) sees the attempt and its deadline, and
        // its give-up is seen here. Marked with the attempt's breaker
        // permit: a layer below that asks the same breaker runs under it,
        // and counts the attempt once.
        let answer = {
            let stamp = call.stamp();
            let attempt = call.make(|| exchange.send(request, stamp));
            call.scoped_in(attempt, span)
        }
        .await;
        crate::context::judging();
        let mut outcome = exchange.classify(&answer);
        let mut next = outcome.retries().then(|| exchange.copy()).flatten();
        if next.is_none() && outcome.is_transient() {
            outcome = Classification::Unrepeatable;
        }
        crate::observe::failed_with(&answer, &outcome);
        // A request the server never processed is sent again at once, as
        // the same attempt, with no budget token (gRFC A6).
        if let Some(again) = next.take_if(|_| call.send_again(outcome, &mut resent)) {
            kept = breaker.is_some().then(|| X::output(answer));
            request = again;
            continue;
        }
        let (Ok(wait), Some(next)) = (call.judge(outcome), next) else {
            return X::output(answer);
        };
        kept = breaker.is_some().then(|| X::output(answer));
        crate::sleep::sleep(wait).await;
        request = next;
    }
}

/// A request's breaker and budget, as a layer picked them: [`exchange`]
/// takes the upstream's budget, or else the layer's own.
#[derive(Debug)]
pub enum Selected {
    /// The layer's budget; no breaker.
    Own,
    /// One breaker for every request, and the layer's budget.
    Breaker(Shared<CircuitBreaker>),
    /// The request's upstream's breaker, and its budget or else the layer's.
    Upstream(Arc<Upstream>),
}

impl Selected {
    /// The upstream `registry` holds for `key`, made on first use; `own`
    /// for a request with no key.
    pub(crate) fn keyed(registry: &Registry, key: Option<&str>, own: Self) -> Self {
        key.map_or(own, |key| Selected::Upstream(registry.get(key)))
    }
}
