//! Hedging as a tower layer, for requests that are safe to repeat.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use ::tower::{Layer, Service};

use super::slots::Boxed;
use super::{Hedge, Hedged, Judge, Setup, Unbounded};
use crate::tower::{Classify, HttpClassifier};
use crate::{Classification, Policy, RetryBudget};

/// A [`Layer`](https://docs.rs/tower/0.5/tower/trait.Layer.html) that hedges requests: while no attempt has answered, another
/// copy of the request is sent each time the newest has been outstanding
/// for the [`Hedge`] delay, up to the policy's `max` in all, and the first
/// answer wins; see the [module docs](crate::hedge).
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use http::{Request, Response};
/// use retry_runtime::{hedge::{Hedge, HedgeLayer}, Policy};
/// use tower::{Service, ServiceBuilder, ServiceExt};
///
/// static POLICY: Policy = Policy::new().with_max_attempts(2);
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// static SENT: AtomicU32 = AtomicU32::new(0);
/// let slow_once = tower::service_fn(|_request: Request<()>| async {
///     // The first copy hangs for a second; the hedge answers in 5 ms.
///     let first = SENT.fetch_add(1, Ordering::Relaxed) == 0;
///     tokio::time::sleep(Duration::from_millis(if first { 1000 } else { 5 })).await;
///     Ok::<_, std::io::Error>(Response::new(()))
/// });
/// let mut client = ServiceBuilder::new()
///     .layer(HedgeLayer::new(&POLICY, Hedge::after(Duration::from_millis(20))))
///     .service(slow_once);
/// let started = tokio::time::Instant::now();
/// client.ready().await.unwrap().call(Request::new(())).await.unwrap();
/// assert_eq!(started.elapsed(), Duration::from_millis(25));
/// assert_eq!(SENT.load(Ordering::Relaxed), 2);
/// # }
/// ```
///
/// The default [`HttpClassifier`] hedges only what it would retry: an
/// idempotent method, or a request with an `Idempotency-Key` header; a
/// failure it retries starts the next copy at once (after `Retry-After`,
/// if given). Requests are cloned for each copy, and so is the service
/// (`S: Clone`), whose copies are driven to readiness before each is
/// called. The policy's per-attempt `timeout` is not applied: add
/// `tower::timeout` inside this layer; for a breaker, put a
/// [`CircuitBreakerLayer`](crate::tower::CircuitBreakerLayer) inside it.
#[derive(Clone, Debug)]
pub struct HedgeLayer<C = HttpClassifier> {
    policy: &'static Policy,
    hedge: Hedge,
    budget: Option<&'static RetryBudget>,
    name: &'static str,
    classifier: C,
}

impl HedgeLayer {
    /// Hedges under `policy` (its `max`, `deadline`, `cap` for hints, and
    /// `base` for a percentile hedge still warming up).
    #[must_use]
    pub fn new(policy: &'static Policy, hedge: Hedge) -> Self {
        HedgeLayer {
            policy,
            hedge,
            budget: None,
            name: "tower",
            classifier: HttpClassifier::default(),
        }
    }
}

impl<C> HedgeLayer<C> {
    /// Hedges and retries draw from a shared budget.
    #[must_use]
    pub fn with_budget(mut self, budget: &'static RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The name in `tracing` events and metrics (`"tower"` by default).
    #[must_use]
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Judges outcomes with `classifier` instead of [`HttpClassifier`]
    /// (a closure `Fn(&Req, &Result<Res, E>) -> Classification`), and
    /// hedges every request: only put requests that are safe to repeat
    /// through this layer.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> HedgeLayer<AllRepeatable<C2>> {
        HedgeLayer {
            policy: self.policy,
            hedge: self.hedge,
            budget: self.budget,
            name: self.name,
            classifier: AllRepeatable(classifier),
        }
    }
}

impl<S, C: Clone> Layer<S> for HedgeLayer<C> {
    type Service = HedgeService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        HedgeService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`HedgeLayer`] makes.
#[derive(Clone, Debug)]
pub struct HedgeService<S, C = HttpClassifier> {
    inner: S,
    layer: HedgeLayer<C>,
}

/// The future of a hedged request.
pub type ResponseFuture<S, C, Req> = Hedged<
    'static,
    Result<<S as Service<Req>>::Response, <S as Service<Req>>::Error>,
    Copies<S, Req>,
    Judged<C, Req>,
    Boxed<super::Running<'static, RequestCopy<S, Req>>>,
    Unbounded,
>;

impl<S, C, Req> Service<Req> for HedgeService<S, C>
where
    S: Service<Req> + Clone,
    C: Classify<Req, S::Response, S::Error> + Repeatable<Req> + Clone,
    Req: Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S, C, Req>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The ready service sends the first copy; clones of it, driven to
        // readiness, the others.
        let clone = self.inner.clone();
        let ready = core::mem::replace(&mut self.inner, clone);
        let layer = &self.layer;
        // A request that is not safe to repeat is sent once, unless the
        // classifier retries its failure.
        let hedge = if layer.classifier.is_repeatable(&request) {
            layer.hedge
        } else {
            Hedge::never()
        };
        Hedged::new(
            Setup {
                policy: layer.policy,
                hedge,
                budget: layer.budget,
                breaker: None,
                limit: Unbounded,
                name: layer.name,
            },
            Boxed::new(layer.policy.max_attempts()),
            Judged {
                classifier: layer.classifier.clone(),
                request: request.clone(),
            },
            Copies {
                service: ready,
                request,
                sent: false,
            },
        )
    }
}

/// Which requests may be hedged: sent again while a copy is outstanding.
pub trait Repeatable<Req> {
    /// Whether `request` is safe to send twice.
    fn is_repeatable(&self, request: &Req) -> bool;
}

/// An idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE), or a
/// request with an `Idempotency-Key` header.
impl<B> Repeatable<::http::Request<B>> for HttpClassifier {
    fn is_repeatable(&self, request: &::http::Request<B>) -> bool {
        crate::idempotency::is_repeatable(request.method(), request.headers())
    }
}

/// A classifier of the user's, under which every request is taken as safe
/// to repeat: made by [`HedgeLayer::with_classifier`].
#[derive(Clone, Copy, Debug)]
pub struct AllRepeatable<C>(pub C);

impl<C, Req> Repeatable<Req> for AllRepeatable<C> {
    fn is_repeatable(&self, _: &Req) -> bool {
        true
    }
}

impl<C, Req, Res, E> Classify<Req, Res, E> for AllRepeatable<C>
where
    C: Classify<Req, Res, E>,
{
    fn classify(&self, request: &Req, result: &Result<Res, E>) -> Classification {
        self.0.classify(request, result)
    }
}

/// Makes each copy of the request.
#[derive(Debug)]
pub struct Copies<S, Req> {
    service: S,
    request: Req,
    sent: bool,
}

impl<S, Req> Copies<S, Req>
where
    S: Service<Req> + Clone,
    Req: Clone,
{
    fn copy(&mut self) -> RequestCopy<S, Req> {
        if core::mem::replace(&mut self.sent, true) {
            RequestCopy::Waiting {
                service: self.service.clone(),
                request: Some(self.request.clone()),
            }
        } else {
            RequestCopy::Sent {
                future: self.service.call(self.request.clone()),
            }
        }
    }
}

impl<S, Req> super::MakeAttempt for Copies<S, Req>
where
    S: Service<Req> + Clone,
    Req: Clone,
{
    type Attempt = RequestCopy<S, Req>;

    fn make(&mut self) -> RequestCopy<S, Req> {
        self.copy()
    }
}

pin_project_lite::pin_project! {
    /// One copy of the request: its service made ready, then called.
    #[project = RequestCopyProjection]
    pub enum RequestCopy<S, Req>
    where
        S: Service<Req>,
    {
        /// Waiting for its service to be ready.
        Waiting { service: S, request: Option<Req> },
        /// Sent.
        Sent { #[pin] future: S::Future },
    }
}

impl<S, Req> Future for RequestCopy<S, Req>
where
    S: Service<Req>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let future = match self.as_mut().project() {
                RequestCopyProjection::Sent { future } => return future.poll(cx),
                RequestCopyProjection::Waiting { service, request } => {
                    if let Err(error) = core::task::ready!(service.poll_ready(cx)) {
                        return Poll::Ready(Err(error));
                    }
                    let Some(request) = request.take() else {
                        return Poll::Pending;
                    };
                    service.call(request)
                }
            };
            self.set(RequestCopy::Sent { future });
        }
    }
}

/// The classifier, with the request it judges outcomes of.
#[derive(Debug)]
pub struct Judged<C, Req> {
    classifier: C,
    request: Req,
}

impl<C, Req, Res, E> Judge<Result<Res, E>> for Judged<C, Req>
where
    C: Classify<Req, Res, E>,
{
    fn verdict(&self, outcome: &Result<Res, E>) -> Classification {
        self.classifier.classify(&self.request, outcome)
    }

    fn before_next(&self, _: &Result<Res, E>, _: u32, _: Duration) {}
}
