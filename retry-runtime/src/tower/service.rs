//! The layer's service: each request's attempts, as one future.

use core::future::{poll_fn, Future};
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use ::tower::Service;
use http::{Request, Response};

use super::body::{Buffer, ReplayBody};
use super::deadline::{Recorded, GRPC_TIMEOUT};
use super::upstreams::Upstreams;
use crate::classify::http::{is_grpc, Classify};
use crate::give_up::LayerGiveUp;
use crate::integration::{exchange, Exchange};
use crate::propagate::Stamp;
use crate::{CircuitOpen, Classification, Policy, RetryBudget, Shared};

/// What every request of a retry or hedge layer shares, and the builder
/// methods both layers have for it (`layer_settings!`).
#[derive(Clone, Debug)]
pub(crate) struct Settings<C> {
    pub(crate) policy: Shared<Policy>,
    pub(crate) budget: Option<Shared<RetryBudget>>,
    pub(crate) name: &'static str,
    pub(crate) classifier: C,
    pub(crate) max_body: usize,
    /// What the recordings of all its calls may hold at once.
    pub(crate) buffer: Arc<Buffer>,
}

impl<C> Settings<C> {
    /// `policy` judged by `classifier`: no budget, named `"tower"`, bodies
    /// recorded up to 64 KiB, 16 MiB across its calls (grpc-java's
    /// `retryBufferSize`), unless told otherwise.
    pub(crate) fn new(policy: Shared<Policy>, classifier: C) -> Self {
        Settings {
            policy,
            budget: None,
            name: "tower",
            classifier,
            max_body: 64 * 1024,
            buffer: Buffer::new(16 * 1024 * 1024),
        }
    }

    /// These settings with their classifier changed.
    pub(crate) fn map<C2>(self, classifier: impl FnOnce(C) -> C2) -> Settings<C2> {
        Settings {
            policy: self.policy,
            budget: self.budget,
            name: self.name,
            classifier: classifier(self.classifier),
            max_body: self.max_body,
            buffer: self.buffer,
        }
    }
}

/// The service of a [`RetryLayer`](super::RetryLayer): retries each
/// `http::Request` under the layer's policy, sending its body again on
/// each attempt ([`ReplayBody`]).
// When this is not a `Service` (E0599 on `ready`, `call`, `oneshot`), the
// compiler shows the line of the `struct`, comment included: the usual cause
// is a classifier that cannot judge the errors of the service below, tower's
// `BoxError` (tests/ui/fail/tower_timeout_without_boxed_errors.rs).
#[derive(Clone, Debug)]
#[rustfmt::skip]
pub struct RetryService<S, C, U, G = ()> { // BoxError below? .with_classifier(HttpClassifier::default().boxed_errors())
    pub(super) inner: S,
    pub(super) settings: Arc<Settings<C>>,
    pub(super) upstreams: U,
    /// The layer's `on_give_up` hook, `()` for none.
    pub(super) give_up: G,
}

/// The future of a [`RetryService`] or a hedge layer's call: all of its
/// attempts and waits, boxed. Dropping it cancels the call.
pub(crate) type ResponseFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, C, U, G, B, ResB> Service<Request<B>> for RetryService<S, C, U, G>
where
    S: Service<Request<B>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    C: Classify<Request<B>, Response<ResB>, S::Error> + Send + Sync + 'static,
    U: Upstreams,
    U::Error<S::Error>: Send + 'static,
    B: ReplayBody,
    ResB: Send + 'static,
    G: LayerGiveUp<Result<Response<ResB>, U::Error<S::Error>>> + Clone + Send + 'static,
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
        let settings = Arc::clone(&self.settings);
        let give_up = self.give_up.clone();
        Box::pin(async move {
            let started = give_up.start();
            // A gRPC call's own timeout bounds the whole call, retries
            // included; the body is recorded up to the layer's bound.
            let (policy, first, call) = Recorded::start(head, body, &settings);
            let tower = Tower::<S, C, U, B> {
                service,
                classifier: &settings.classifier,
                call,
                upstreams: PhantomData,
            };
            let budget = settings.budget.as_deref();
            let outcome = exchange(tower, &policy, &selected, budget, settings.name, first).await;
            give_up.end(started, &outcome);
            outcome
        })
    }
}

/// A request's call as the layer makes it.
struct Tower<'a, S, C, U, B: ReplayBody> {
    service: S,
    classifier: &'a C,
    call: Recorded<B>,
    upstreams: PhantomData<U>,
}

impl<S, C, U, B, ResB> Exchange for Tower<'_, S, C, U, B>
where
    S: Service<Request<B>, Response = Response<ResB>>,
    C: Classify<Request<B>, Response<ResB>, S::Error>,
    U: Upstreams,
    B: ReplayBody,
{
    type Request = B;
    type Response = Response<ResB>;
    type Error = S::Error;
    type Output = Result<Response<ResB>, U::Error<S::Error>>;

    async fn ready(&mut self) -> Result<(), Self::Output> {
        // A service that cannot become ready (a buffer whose worker ended, a
        // balancer whose discovery failed) ends the call with its error, as
        // tower's `Retry` does.
        poll_fn(|cx| self.service.poll_ready(cx))
            .await
            .map_err(|error| Err(U::service(error)))
    }

    fn send(
        &mut self,
        body: B,
        stamp: Stamp,
    ) -> impl Future<Output = Result<Response<ResB>, S::Error>> {
        let mut request = self.call.request(body, false);
        let headers = request.headers_mut();
        if is_grpc(headers) || headers.contains_key(GRPC_TIMEOUT) {
            stamp.grpc(headers);
        } else {
            stamp.http(headers);
        }
        self.service.call(request)
    }

    fn classify(&self, answer: &Result<Response<ResB>, S::Error>) -> Classification {
        // The request's head: its body was sent.
        self.classifier
            .classify(&self.call.request(B::empty(), false), answer)
    }

    fn copy(&mut self) -> Option<B> {
        B::replay(&self.call.source)
    }

    fn output(answer: Result<Response<ResB>, S::Error>) -> Self::Output {
        answer.map_err(U::service)
    }

    fn refused() -> Option<Self::Output> {
        U::refused(CircuitOpen).map(Err)
    }
}
