//! A circuit breaker in a tower stack: [`CircuitBreakerLayer`], its service
//! and [`BreakerError`].

use core::future::Future;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use std::error::Error;

use ::tower::{Layer, Service};

use super::body::ReplayBody;
use crate::classify::http::{Classify, HttpClassifier};
use crate::{CircuitBreaker, CircuitOpen, CircuitPermit};

/// A [`Layer`](https://docs.rs/tower/0.5/tower/trait.Layer.html) that asks a shared [`CircuitBreaker`] before every call and
/// tells it how each call went, as judged by the classifier (a transient
/// failure counts against the dependency; a success or a permanent answer
/// counts for it). A refused call fails at once with
/// [`BreakerError::Open`], without reaching the inner service.
///
/// It guards calls that are not retried; with retries,
/// [`RetryLayer::with_breaker`](super::RetryLayer::with_breaker) asks the
/// breaker before each attempt itself.
///
/// The classifier judges each outcome with the request's head and an
/// empty body ([`ReplayBody::empty`]; the body was sent), as the retry
/// layer's does: the service takes `http::Request<B>`s of any body with a
/// [`ReplayBody`] (`String`, `Full`, a tonic channel's, a boxed body).
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
            classifier: HttpClassifier::new(),
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
            layer: self.clone(),
        }
    }
}

/// The service of a [`CircuitBreakerLayer`].
#[derive(Clone, Debug)]
pub struct CircuitBreakerService<S, C = HttpClassifier> {
    inner: S,
    layer: CircuitBreakerLayer<C>,
}

impl<S, C, B> Service<http::Request<B>> for CircuitBreakerService<S, C>
where
    S: Service<http::Request<B>>,
    C: Classify<http::Request<B>, S::Response, S::Error> + Clone,
    B: ReplayBody,
{
    type Response = S::Response;
    type Error = BreakerError<S::Error>;
    type Future = CircuitBreakerFuture<S::Future, C, http::Request<B>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(BreakerError::Service)
    }

    /// Sends `request` if the breaker lets it through, keeping its head for
    /// the classifier; a refused request is neither sent nor kept.
    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let sent = self.layer.breaker.acquire().ok().map(|permit| {
            let (head, body) = request.into_parts();
            let kept = http::Request::from_parts(head.clone(), B::empty());
            let future = self.inner.call(http::Request::from_parts(head, body));
            (future, (permit, kept))
        });
        let (future, held) = sent.unzip();
        CircuitBreakerFuture {
            future,
            held,
            classifier: self.layer.classifier.clone(),
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
        // The permit and the request's head, until the outcome is recorded.
        held: Option<(CircuitPermit<'static>, Req)>,
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
            return Poll::Ready(Err(BreakerError::Open(CircuitOpen)));
        };
        let result = ready!(future.poll(cx));
        if let Some((permit, request)) = this.held.take() {
            // A failure the caller would retry, or one it may not repeat
            // (a POST that got a 503): either is the dependency failing.
            crate::context::judging();
            let judged = this.classifier.classify(&request, &result).is_transient();
            // An answer the server below gave up on is a failure too.
            let failed = judged || crate::context::take_below() != crate::context::Below::Nothing;
            permit.record(!failed);
        }
        Poll::Ready(result.map_err(BreakerError::Service))
    }
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
