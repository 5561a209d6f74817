//! The layer's service: each request's attempts, as one future.

use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use ::tower::Service;
use http::{Request, Response};

use super::body::ReplayBody;
use super::classify::Classify;
use super::deadline;
use super::upstreams::{Selected, Upstreams};
use crate::integration::Call;
use crate::{CircuitOpen, Classification, Policy, RetryBudget, Shared};

/// What every request of a layer shares.
#[derive(Debug)]
pub(super) struct Settings<C> {
    pub(super) policy: Shared<Policy>,
    pub(super) budget: Option<Shared<RetryBudget>>,
    pub(super) name: &'static str,
    pub(super) classifier: C,
    pub(super) max_body: usize,
}

/// The service of a [`RetryLayer`](super::RetryLayer): retries each
/// `http::Request` under the layer's policy, sending its body again on
/// each attempt ([`ReplayBody`]).
#[derive(Debug)]
pub struct RetryService<S, C, U> {
    pub(super) inner: S,
    pub(super) settings: Arc<Settings<C>>,
    pub(super) upstreams: U,
}

impl<S: Clone, C, U: Clone> Clone for RetryService<S, C, U> {
    fn clone(&self) -> Self {
        RetryService {
            inner: self.inner.clone(),
            settings: Arc::clone(&self.settings),
            upstreams: self.upstreams.clone(),
        }
    }
}

/// The future of a [`RetryService`] call: all of its attempts and waits.
/// Dropping it cancels the call.
#[must_use = "futures do nothing unless polled"]
pub struct ResponseFuture<T, E> {
    inner: Pin<Box<dyn Future<Output = Result<T, E>> + Send>>,
}

impl<T, E> ResponseFuture<T, E> {
    /// Boxes `future`.
    pub(crate) fn new(future: impl Future<Output = Result<T, E>> + Send + 'static) -> Self {
        ResponseFuture {
            inner: Box::pin(future),
        }
    }
}

impl<T, E> Future for ResponseFuture<T, E> {
    type Output = Result<T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T, E> core::fmt::Debug for ResponseFuture<T, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<S, C, U, B, ResB> Service<Request<B>> for RetryService<S, C, U>
where
    S: Service<Request<B>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    C: Classify<Request<B>, Response<ResB>, S::Error> + Send + Sync + 'static,
    U: Upstreams,
    U::Error<S::Error>: Send + 'static,
    B: ReplayBody,
    ResB: Send + 'static,
{
    type Response = Response<ResB>;
    type Error = U::Error<S::Error>;
    type Future = ResponseFuture<Response<ResB>, U::Error<S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(U::service)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service that was polled ready makes the first attempt; this
        // one stays behind for the next request (as tower's `Retry` does).
        let clone = self.inner.clone();
        let service = core::mem::replace(&mut self.inner, clone);
        let (head, body) = request.into_parts();
        let selected = self.upstreams.select(&head);
        let request = Request::from_parts(head, body);
        ResponseFuture {
            inner: Box::pin(attempts::<S, C, U, B, ResB>(
                service,
                Arc::clone(&self.settings),
                selected,
                request,
            )),
        }
    }
}

/// One request's attempts: send, classify, ask the policy, wait, send the
/// body again.
async fn attempts<S, C, U, B, ResB>(
    mut service: S,
    settings: Arc<Settings<C>>,
    selected: Selected,
    request: Request<B>,
) -> Result<Response<ResB>, U::Error<S::Error>>
where
    S: Service<Request<B>, Response = Response<ResB>>,
    C: Classify<Request<B>, Response<ResB>, S::Error>,
    U: Upstreams,
    B: ReplayBody,
{
    let budget = selected.budget().or(settings.budget.as_deref());
    let breaker = selected.breaker();
    let (mut head, body) = request.into_parts();
    // A gRPC call's own timeout bounds the whole call, retries included.
    let (policy, grpc_deadline) = deadline::bound(&settings.policy, &head.headers);
    let mut call = Call::start(&policy, budget, breaker, settings.name);
    call.waiting();
    let (mut body, source) = body.record(settings.max_body);
    // With a breaker, a failed attempt's result is kept through the wait:
    // a retry the breaker then refuses returns it, the last real answer.
    let mut kept = None;
    loop {
        if !call.acquire() {
            // Refused: the call stops with reason `open`.
            let _ = call.judge(Classification::Permanent);
            if let Some(result) = kept {
                return result;
            }
            if let Some(refused) = U::refused(CircuitOpen) {
                return Err(refused);
            }
        }
        // Let go of the answer kept through the wait before the next attempt.
        drop(kept.take());
        if let Err(error) = poll_fn(|cx| service.poll_ready(cx)).await {
            // A service that cannot become ready (a buffer whose worker
            // ended, a balancer whose discovery failed) ends the call with
            // its error, as tower's `Retry` does: the request was not sent.
            call.unsent();
            return Err(U::service(error));
        }
        // The attempt's span (feature `attempt-spans`), as the middleware's.
        let span = crate::observe::http_attempt_span(settings.name, call.attempt());
        // A breaker layer below naming the same breaker runs under this
        // attempt's permit: the attempt is counted once, never refused.
        let attempt = call.marked(|| service.call(Request::from_parts(head.clone(), body)));
        let result = crate::observe::in_span(span, attempt).await;
        let mut outcome = settings
            .classifier
            .classify(&Request::from_parts(head.clone(), B::empty()), &result);
        let replay = match outcome {
            Classification::Transient(_) => B::replay(&source),
            _ => None,
        };
        if replay.is_none() && matches!(outcome, Classification::Transient(_)) {
            // The body cannot be sent again: a failure for the budget and
            // the breaker, returned as it came.
            outcome = Classification::Unrepeatable;
        }
        let wait = call.judge_answer(&result, outcome);
        let (Ok(wait), Some(replay)) = (wait, replay) else {
            return result.map_err(U::service);
        };
        // Without a breaker, the failed attempt's response (and the
        // connection it holds) is let go before the wait.
        kept = if breaker.is_some() {
            Some(result.map_err(U::service))
        } else {
            drop(result);
            None
        };
        crate::sleep::sleep(wait).await;
        deadline::tell_time_left(&mut head.headers, grpc_deadline);
        body = replay;
    }
}
