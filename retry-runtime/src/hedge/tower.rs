//! Hedging as a tower layer, for requests that are safe to repeat: cloned
//! ([`CloneRequests`]), or `http::Request`s whose body is recorded as it is
//! sent and played back to the copies ([`ReplayBodies`]).

use core::convert::identity;
use core::task::{Context, Poll};
use std::sync::Arc;

use ::tower::{Layer, Service};
use http::Request;

use super::copies::{Copies, Judged};
use super::parts::Unbounded;
use super::slots::Boxed;
use super::{Hedge, Hedged, Setup};
use crate::tower::deadline;
use crate::tower::{
    BoxedHttpClassifier, Classify, HttpClassifier, ReplayBody, ResponseFuture, DEFAULT_MAX_BODY,
};
use crate::{Classification, Policy, RetryBudget, Shared};

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
/// failure it retries starts the next copy at once (after `Retry-After`
/// or gRPC pushback, if given). The service is cloned for each copy
/// (`S: Clone`), and each clone is driven to readiness before it is called.
///
/// Requests are cloned for each copy ([`CloneRequests`], the default).
/// For an `http::Request<B>` whose body is not `Clone` (any body with a
/// [`ReplayBody`]: a tonic channel's, or a boxed body, into which a proxy
/// boxes hyper's `Incoming` or axum's `Body` with `.boxed_unsync()`),
/// [`replay_bodies`](Self::replay_bodies) records the
/// body as the first copy sends it, up to a bound, and plays it back to the
/// later copies ([`ReplayBodies`], [`ReplayBody`]); a body over the bound,
/// or one still being sent when a copy is due, is sent once, unhedged. The
/// policy and budget are `&'static` or `Arc` ([`Shared`]).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use retry_runtime::hedge::{AllRepeatable, Hedge, HedgeLayer, HedgeService, ReplayBodies};
/// use retry_runtime::tower::HttpClassifier;
/// use retry_runtime::Policy;
/// use tonic::transport::Channel;
///
/// type Hedged = HedgeService<Channel, AllRepeatable<HttpClassifier>, ReplayBodies>;
///
/// // gRPC calls are POSTs: this layer hedges every call it is given.
/// fn hedged(channel: Channel, policy: Arc<Policy>) -> tonic::client::Grpc<Hedged> {
///     let layer = HedgeLayer::new(policy, Hedge::after(Duration::from_millis(20)))
///         .with_classifier(HttpClassifier::default())
///         .replay_bodies();
///     tonic::client::Grpc::new(tower::ServiceBuilder::new().layer(layer).service(channel))
/// }
/// ```
///
/// Each call's future is boxed (as [`RetryLayer`](crate::tower::RetryLayer)'s),
/// besides the slots its copies run in. The policy's per-attempt `timeout`
/// is not applied: add `tower::timeout` inside this layer, with
/// [`boxed_errors`](Self::boxed_errors) for the `BoxError` it fails with. The layer asks
/// no breaker: a [`CircuitBreakerLayer`](crate::tower::CircuitBreakerLayer)
/// inside it guards each copy (with
/// [`request_heads`](crate::tower::CircuitBreakerLayer::request_heads) when
/// the body is not `Clone`). A copy it refuses sends nothing and starts no
/// other; the call waits for the copies already sent (a half-open circuit's
/// probe among them) or returns the earlier failure, and ends with
/// [`BreakerError::Open`](crate::tower::BreakerError::Open) only when the
/// first copy is refused.
#[derive(Clone, Debug)]
pub struct HedgeLayer<C = HttpClassifier, M = CloneRequests> {
    policy: Shared<Policy>,
    hedge: Hedge,
    budget: Option<Shared<RetryBudget>>,
    name: &'static str,
    classifier: C,
    copies: M,
}

/// How a [`HedgeLayer`] makes the copies of a request: by cloning it (any
/// `Req: Clone`). The default.
#[derive(Clone, Copy, Debug, Default)]
pub struct CloneRequests;

/// How a [`HedgeLayer`] made with [`replay_bodies`](HedgeLayer::replay_bodies)
/// or [`with_max_body`](HedgeLayer::with_max_body) makes the copies of an
/// `http::Request<B>`: its head is cloned, and its body ([`ReplayBody`]) is
/// recorded as the first copy sends it, up to a bound, and played back to
/// the later copies. A body over the bound, or one still being sent when a
/// copy is due (a client stream that has not ended), cannot be played back:
/// the request is then not hedged, and a failure of it is retried only if
/// its whole body was recorded by the time the failure came back.
#[derive(Clone, Copy, Debug)]
pub struct ReplayBodies {
    max_body: usize,
}

impl HedgeLayer {
    /// Hedges under `policy` (a `&'static Policy` or an `Arc<Policy>`): its
    /// `max`, `deadline`, `cap` for hints, and `base` for a percentile hedge
    /// still warming up.
    #[must_use]
    pub fn new(policy: impl Into<Shared<Policy>>, hedge: Hedge) -> Self {
        HedgeLayer {
            policy: policy.into(),
            hedge,
            budget: None,
            name: "tower",
            classifier: HttpClassifier::default(),
            copies: CloneRequests,
        }
    }
}

impl<M> HedgeLayer<HttpClassifier, M> {
    /// Keeps the default classifier's rules (which requests are hedged, and
    /// which outcomes retried) for a service that fails with tower's
    /// `BoxError`: one with `tower::timeout` inside this layer, its
    /// per-attempt timeout. A copy cut off by the timeout is a transient
    /// failure; see [`HttpClassifier::boxed_errors`].
    #[must_use]
    pub fn boxed_errors(self) -> HedgeLayer<BoxedHttpClassifier, M> {
        self.with(HttpClassifier::boxed_errors, identity)
    }
}

impl<C, M> HedgeLayer<C, M> {
    /// Hedges and retries draw from a shared budget (a `&'static
    /// RetryBudget` or an `Arc<RetryBudget>`).
    #[must_use]
    pub fn with_budget(mut self, budget: impl Into<Shared<RetryBudget>>) -> Self {
        self.budget = Some(budget.into());
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
    pub fn with_classifier<C2>(self, classifier: C2) -> HedgeLayer<AllRepeatable<C2>, M> {
        self.with(|_| AllRepeatable(classifier), identity)
    }

    /// Hedges `http::Request<B>`s whose body `B` need not be `Clone` (any
    /// [`ReplayBody`]: a tonic channel's, or a boxed body): the body is
    /// recorded as the first
    /// copy sends it, up to 64 KiB, and played back to
    /// the copies that follow; see [`ReplayBodies`].
    #[must_use]
    pub fn replay_bodies(self) -> HedgeLayer<C, ReplayBodies> {
        self.with_max_body(DEFAULT_MAX_BODY)
    }

    /// As [`replay_bodies`](Self::replay_bodies), recording at most `bytes`
    /// of each request body: a larger body is sent once, unhedged.
    #[must_use]
    pub fn with_max_body(self, bytes: usize) -> HedgeLayer<C, ReplayBodies> {
        self.with(identity, |_| ReplayBodies { max_body: bytes })
    }

    /// This layer with its classifier and its way of copying requests
    /// changed.
    fn with<C2, M2>(
        self,
        classifier: impl FnOnce(C) -> C2,
        copies: impl FnOnce(M) -> M2,
    ) -> HedgeLayer<C2, M2> {
        HedgeLayer {
            policy: self.policy,
            hedge: self.hedge,
            budget: self.budget,
            name: self.name,
            classifier: classifier(self.classifier),
            copies: copies(self.copies),
        }
    }

    /// The policy each request's copies follow.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
}

impl<S, C: Clone, M: Clone> Layer<S> for HedgeLayer<C, M> {
    type Service = HedgeService<S, C, M>;

    fn layer(&self, inner: S) -> Self::Service {
        HedgeService {
            inner,
            layer: Arc::new(self.clone()),
        }
    }
}

/// The service [`HedgeLayer`] makes.
#[derive(Debug)]
pub struct HedgeService<S, C = HttpClassifier, M = CloneRequests> {
    inner: S,
    layer: Arc<HedgeLayer<C, M>>,
}

impl<S: Clone, C, M> Clone for HedgeService<S, C, M> {
    fn clone(&self) -> Self {
        HedgeService {
            inner: self.inner.clone(),
            layer: Arc::clone(&self.layer),
        }
    }
}

impl<S, C, M> HedgeService<S, C, M> {
    /// The service polled ready, which sends the first copy; a clone of it
    /// stays behind for the next request (as tower's `Retry` does).
    fn take_ready(&mut self) -> S
    where
        S: Clone,
    {
        let clone = self.inner.clone();
        core::mem::replace(&mut self.inner, clone)
    }

    /// The hedge for `request`: none for a request that is not safe to
    /// repeat (its failure is still retried if the classifier says so).
    fn hedge_for<Req>(&self, request: &Req) -> Hedge
    where
        C: Repeatable<Req>,
    {
        if self.layer.classifier.is_repeatable(request) {
            self.layer.hedge
        } else {
            Hedge::never()
        }
    }
}

/// Requests that are `Clone`: each copy is a clone.
impl<S, C, Req> Service<Req> for HedgeService<S, C, CloneRequests>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    C: Classify<Req, S::Response, S::Error> + Repeatable<Req> + Send + Sync + 'static,
    Req: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let hedge = self.hedge_for(&request);
        let service = self.take_ready();
        let layer = Arc::clone(&self.layer);
        ResponseFuture::new(async move {
            let policy = *layer.policy;
            let judged = request.clone();
            let source = request.clone();
            let copy = move || Some(source.clone());
            run(
                service,
                &layer,
                &policy,
                hedge,
                request,
                judged,
                copy,
                || true,
            )
            .await
        })
    }
}

/// `http::Request`s whose body is recorded as the first copy sends it and
/// played back to the others ([`ReplayBody`]). A gRPC call's own timeout
/// (`grpc-timeout`) bounds the call, and each later copy carries the time
/// the call has left, as the retry layer does.
impl<S, C, B, ResB> Service<Request<B>> for HedgeService<S, C, ReplayBodies>
where
    S: Service<Request<B>, Response = http::Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    C: Classify<Request<B>, http::Response<ResB>, S::Error>
        + Repeatable<Request<B>>
        + Send
        + Sync
        + 'static,
    B: ReplayBody,
    B::Source: Sync,
    ResB: Send + 'static,
{
    type Response = http::Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<http::Response<ResB>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let hedge = self.hedge_for(&request);
        let service = self.take_ready();
        let layer = Arc::clone(&self.layer);
        ResponseFuture::new(async move {
            let (head, body) = request.into_parts();
            // A gRPC call's own timeout bounds the whole call.
            let (policy, grpc_deadline) = deadline::bound(&layer.policy, &head.headers);
            let (first, source) = body.record(layer.copies.max_body);
            let judged = Request::from_parts(head.clone(), B::empty());
            let first = Request::from_parts(head.clone(), first);
            let source = &source;
            let copy = move || {
                let body = B::replay(source)?;
                let mut head = head.clone();
                deadline::tell_time_left(&mut head.headers, grpc_deadline);
                Some(Request::from_parts(head, body))
            };
            let can_copy = move || B::can_replay(source);
            run(
                service, &layer, &policy, hedge, first, judged, copy, can_copy,
            )
            .await
        })
    }
}

/// One request's copies, hedged under `policy` (the layer's, or this
/// call's, bounded by its `grpc-timeout`).
#[allow(clippy::too_many_arguments)]
async fn run<S, C, M, Req, F, K>(
    service: S,
    layer: &HedgeLayer<C, M>,
    policy: &Policy,
    hedge: Hedge,
    first: Req,
    judged: Req,
    copy: F,
    can_copy: K,
) -> Result<S::Response, S::Error>
where
    S: Service<Req> + Clone,
    C: Classify<Req, S::Response, S::Error>,
    F: Fn() -> Option<Req>,
    K: Fn() -> bool + Copy,
{
    Hedged::new(
        Setup {
            policy,
            hedge,
            budget: layer.budget.as_deref(),
            breaker: None,
            limit: Unbounded,
            name: layer.name,
        },
        Boxed::new(policy.max_attempts()),
        Judged {
            classifier: &layer.classifier,
            request: judged,
            can_copy,
        },
        Copies {
            service,
            first: Some(first),
            copy,
            can_copy,
        },
    )
    .await
}

/// Which requests may be hedged: sent again while a copy is outstanding.
/// The [`HttpClassifier`] of a [`HedgeLayer`] hedges requests safe to
/// repeat; one given with [`HedgeLayer::with_classifier`] hedges every
/// request ([`AllRepeatable`]).
///
/// ```
/// use retry_runtime::hedge::{AllRepeatable, Repeatable};
/// use retry_runtime::tower::HttpClassifier;
///
/// let get = http::Request::get("/").body(()).unwrap();
/// let post = http::Request::post("/").body(()).unwrap();
/// let keyed = http::Request::post("/").header("idempotency-key", "7f3a").body(()).unwrap();
/// let http = HttpClassifier::default();
/// assert!(http.is_repeatable(&get) && http.is_repeatable(&keyed));
/// assert!(!http.is_repeatable(&post));
/// assert!(AllRepeatable(()).is_repeatable(&post));
/// ```
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

/// As [`HttpClassifier`]'s.
impl<B> Repeatable<::http::Request<B>> for BoxedHttpClassifier {
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
