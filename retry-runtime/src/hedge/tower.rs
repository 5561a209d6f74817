//! Hedging as a tower layer, for `http::Request`s whose body is played back
//! to the copies ([`ReplayBody`]).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use ::tower::util::Oneshot;
use ::tower::{Layer, Service};
use http::Request;

use super::parts::{MakeAttempt, Unbounded};
use super::slots::Boxed;
use super::{Hedge, Hedged, Setup};
use crate::idempotency::is_repeatable;
use crate::rules::RulesFor;
use crate::tower::deadline::Recorded;
use crate::tower::{
    layer_settings, BoxedHttpClassifier, Classify, HttpClassifier, ReplayBody, ResponseFuture,
    Settings,
};
use crate::{Classification, Policy, Shared};

/// The hedge of a request that is not safe to repeat: none, as its delay
/// never ends (its failure is still retried if the classifier says so).
const NEVER: Hedge = Hedge::after(core::time::Duration::MAX);

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
/// The layer takes `http::Request<B>`s of any body with a [`ReplayBody`]
/// (a `Clone` body such as `String` or `Full`, a tonic channel's, or a
/// boxed body, into which a proxy boxes hyper's `Incoming` or axum's `Body`
/// with `.boxed_unsync()`): the body is recorded as the first copy sends
/// it, up to [`with_max_body`](Self::with_max_body) bytes (64 KiB by
/// default), and played back to the later copies, as the retry layer does.
/// A request whose body cannot be played back (over the bound, or still
/// being sent when a copy is due) is sent once and starts no hedge; its
/// transient failure is returned as it came, and the call stops with
/// [`Stop::NotRetryable`](crate::Stop::NotRetryable). A gRPC call's own
/// timeout (`grpc-timeout`) bounds the call, and each later copy carries
/// the time the call has left. The policy and budget are `&'static` or
/// `Arc` ([`Shared`]).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use retry_runtime::hedge::{Hedge, HedgeLayer, HedgeService};
/// use retry_runtime::tower::HttpClassifier;
/// use retry_runtime::Policy;
/// use tonic::transport::Channel;
///
/// type Hedged = HedgeService<Channel, HttpClassifier>;
///
/// // gRPC calls are POSTs: this layer hedges every call it is given.
/// fn hedged(channel: Channel, policy: Arc<Policy>) -> tonic::client::Grpc<Hedged> {
///     let layer = HedgeLayer::new(policy, Hedge::after(Duration::from_millis(20)))
///         .with_classifier(HttpClassifier::default());
///     tonic::client::Grpc::new(tower::ServiceBuilder::new().layer(layer).service(channel))
/// }
/// ```
///
/// Each call's future is boxed (as [`RetryLayer`](crate::tower::RetryLayer)'s),
/// besides the slots its copies run in. It takes a [`Policy`],
/// which has no per-attempt `timeout`: add `tower::timeout` inside this layer, with
/// [`boxed_errors`](Self::boxed_errors) for the `BoxError` it fails with. The layer asks
/// no breaker: a [`CircuitBreakerLayer`](crate::tower::CircuitBreakerLayer)
/// inside it (its [`CircuitBreakerService`](crate::tower::CircuitBreakerService))
/// guards each copy. A copy it refuses sends nothing and starts no
/// other; the call waits for the copies already sent (a half-open circuit's
/// probe among them) or returns the earlier failure, and ends with
/// [`BreakerError::Open`](crate::tower::BreakerError::Open) only when the
/// first copy is refused.
#[derive(Clone, Debug)]
pub struct HedgeLayer<C = HttpClassifier> {
    settings: Settings<C>,
    hedge: Hedge,
    /// Every request is hedged, not only those safe to repeat (a
    /// classifier of the user's).
    all_repeatable: bool,
}

impl HedgeLayer {
    /// Hedges under `policy` (a `&'static Policy` or an `Arc<Policy>`): its
    /// `max`, `deadline`, `cap` for hints, and `base` for a percentile hedge
    /// still warming up.
    #[must_use]
    pub fn new(policy: impl Into<Shared<Policy>>, hedge: Hedge) -> Self {
        HedgeLayer {
            settings: Settings::new(policy.into(), HttpClassifier::default()),
            hedge,
            all_repeatable: false,
        }
    }

    /// Keeps the default classifier's rules (which requests are hedged, and
    /// which outcomes retried) for a service that fails with tower's
    /// `BoxError`: one with `tower::timeout` inside this layer, its
    /// per-attempt timeout. A copy cut off by the timeout is a transient
    /// failure; see [`HttpClassifier::boxed_errors`].
    #[must_use]
    pub fn boxed_errors(self) -> HedgeLayer<BoxedHttpClassifier> {
        HedgeLayer {
            settings: self.settings.map(HttpClassifier::boxed_errors),
            hedge: self.hedge,
            all_repeatable: self.all_repeatable,
        }
    }
}

impl<C> HedgeLayer<C> {
    layer_settings!();

    /// Judges outcomes with `classifier` instead of [`HttpClassifier`]
    /// (a closure `Fn(&Req, &Result<Res, E>) -> Classification`), and
    /// hedges every request: only put requests that are safe to repeat
    /// through this layer.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> HedgeLayer<C2> {
        HedgeLayer {
            settings: self.settings.map(|_| classifier),
            hedge: self.hedge,
            all_repeatable: true,
        }
    }
}

impl<S, C: Clone> Layer<S> for HedgeLayer<C> {
    type Service = HedgeService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        HedgeService {
            inner,
            layer: Arc::new(self.clone()),
        }
    }
}

/// The service [`HedgeLayer`] makes.
#[derive(Clone, Debug)]
pub struct HedgeService<S, C = HttpClassifier> {
    inner: S,
    layer: Arc<HedgeLayer<C>>,
}

impl<S, C, B> Service<Request<B>> for HedgeService<S, C>
where
    S: Service<Request<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    C: Classify<Request<B>, S::Response, S::Error> + Send + Sync + 'static,
    B: ReplayBody,
    B::Source: Sync,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let layer = Arc::clone(&self.layer);
        let repeatable = layer.all_repeatable || is_repeatable(request.method(), request.headers());
        let hedge = if repeatable { layer.hedge } else { NEVER };
        // The service polled ready sends the first copy; a clone of it stays
        // behind for the next request (as tower's `Retry` does).
        let clone = self.inner.clone();
        let service = core::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let (head, body) = request.into_parts();
            // A gRPC call's own timeout bounds the whole call.
            let settings = &layer.settings;
            let (policy, first, call) = Recorded::start(head, body, settings);
            let setup = Setup {
                policy: &policy.params,
                hedge,
                budget: settings.budget.as_deref(),
                breaker: None,
                limit: Unbounded,
                name: settings.name,
            };
            let judged = Judged::<C, B> {
                classifier: &settings.classifier,
                call: &call,
            };
            let copies = Copies::<S, B> {
                service,
                first: Some(first),
                call: &call,
            };
            Hedged::new(setup, Boxed::new(policy.max_attempts()), judged, copies).await
        })
    }
}

/// Makes each copy of the request: the first is sent by the service polled
/// ready, the others (the body played back) by its clones, once ready.
struct Copies<'a, S, B: ReplayBody> {
    service: S,
    first: Option<B>,
    call: &'a Recorded<B>,
}

impl<S, B> MakeAttempt for Copies<'_, S, B>
where
    S: Service<Request<B>> + Clone,
    B: ReplayBody,
{
    type Attempt = RequestCopy<S, Request<B>>;

    fn make(&mut self) -> Option<Self::Attempt> {
        if let Some(first) = self.first.take() {
            return Some(RequestCopy::First {
                future: self.service.call(self.call.request(first, false)),
            });
        }
        let copy = self.call.request(B::replay(&self.call.source)?, true);
        Some(RequestCopy::Later {
            future: Oneshot::new(self.service.clone(), copy),
        })
    }

    fn can_make(&self) -> bool {
        self.first.is_some() || B::can_replay(&self.call.source)
    }

    fn sends_http(&self) -> bool {
        true
    }
}

pin_project_lite::pin_project! {
    /// One copy of the request: the first, sent by the service polled
    /// ready, or a later one, sent by a clone of it once ready.
    #[project = RequestCopyProjection]
    enum RequestCopy<S: Service<Req>, Req> {
        First { #[pin] future: S::Future },
        Later { #[pin] future: Oneshot<S, Req> },
    }
}

impl<S: Service<Req>, Req> Future for RequestCopy<S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            RequestCopyProjection::First { future } => future.poll(cx),
            RequestCopyProjection::Later { future } => future.poll(cx),
        }
    }
}

/// The classifier, with the request it judges outcomes of: its head and an
/// empty body (the copies sent theirs).
struct Judged<'a, C, B: ReplayBody> {
    classifier: &'a C,
    call: &'a Recorded<B>,
}

impl<C, B, Res, E> RulesFor<Result<Res, E>> for Judged<'_, C, B>
where
    C: Classify<Request<B>, Res, E>,
    B: ReplayBody,
{
    fn verdict(&self, outcome: &Result<Res, E>) -> Classification {
        let request = self.call.request(B::empty(), false);
        crate::context::judging();
        match self.classifier.classify(&request, outcome) {
            // The request cannot be sent again (its body was over the bound,
            // or not sent to its end): a failure for the budget and the
            // breaker, returned as it came, as the retry layer does.
            verdict if verdict.retries() && !B::can_replay(&self.call.source) => {
                Classification::Unrepeatable
            }
            verdict => verdict,
        }
    }
}
