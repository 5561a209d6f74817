//! A tower [`Layer`] that retries HTTP and gRPC calls with the runtime's
//! [`Policy`]: backoff and jitter, `deadline`, a shared [`RetryBudget`](crate::RetryBudget), a
//! [`CircuitBreaker`] (one, or one per upstream), and the server's hint
//! (`Retry-After` on HTTP responses, `grpc-retry-pushback-ms` on gRPC ones),
//! decided exactly as `#[retry]` decides.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::time::Duration;
//! use http::{Request, Response, StatusCode};
//! use retry_runtime::{tower::RetryLayer, Policy, RetryBudget};
//! use tower::{Service, ServiceBuilder, ServiceExt};
//!
//! static POLICY: Policy = Policy::new().with_max_attempts(4).with_deadline(Duration::from_secs(10));
//! static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! static CALLS: AtomicU32 = AtomicU32::new(0);
//! let flaky = tower::service_fn(|_request: Request<String>| async {
//!     let status = if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
//!         StatusCode::SERVICE_UNAVAILABLE
//!     } else {
//!         StatusCode::OK
//!     };
//!     let response = Response::builder().status(status).header("retry-after", "1");
//!     Ok::<_, std::io::Error>(response.body(()).unwrap())
//! });
//! let mut client = ServiceBuilder::new()
//!     .layer(RetryLayer::new(&POLICY).with_budget(&BUDGET).named("users"))
//!     .service(flaky);
//!
//! let started = tokio::time::Instant::now();
//! let response = client.ready().await.unwrap().call(Request::new(String::new())).await.unwrap();
//! assert_eq!(response.status(), StatusCode::OK);
//! assert!(started.elapsed() >= Duration::from_secs(1)); // Retry-After: 1 was honoured
//! # }
//! ```
//!
//! # tonic channels
//!
//! The layer goes around a `tonic::transport::Channel` as it does around a
//! hyper client, under `tonic::client::Grpc` or a generated client:
//!
//! ```
//! use retry_runtime::tower::{HttpClassifier, NoUpstreams, RetryLayer, RetryService};
//! use retry_runtime::Policy;
//! use tonic::transport::Channel;
//!
//! static POLICY: Policy = Policy::new().with_max_attempts(3);
//!
//! type Retried = RetryService<Channel, HttpClassifier, NoUpstreams>;
//!
//! fn users_client(channel: Channel) -> tonic::client::Grpc<Retried> {
//!     let channel = tower::ServiceBuilder::new()
//!         .layer(RetryLayer::new(&POLICY))
//!         .service(channel);
//!     tonic::client::Grpc::new(channel) // or a generated `UsersClient::new(channel)`
//! }
//! ```
//!
//! An `UNAVAILABLE` status is retried after the server's pushback; the
//! request body (the encoded message, or a client stream) is recorded as it
//! is sent and played back to the next attempts, up to
//! [`with_max_body`](RetryLayer::with_max_body) bytes (64 KiB by default),
//! and [`with_max_buffered`](RetryLayer::with_max_buffered) bytes across
//! all the calls of the layer at once (16 MiB by default): a call past
//! either is sent once and not retried (reason `not_retryable`). See
//! [`ReplayBody`].
//!
//! # What is retried
//!
//! The default [`HttpClassifier`] works on `http::Request` and
//! `http::Response` (hyper, hyper-util, axum, tonic channels):
//!
//! - a response with `grpc-status` in its headers (a trailers-only gRPC
//!   error) is retried when its code is in the classifier's
//!   [`RetryableCodes`](crate::classify::grpc::RetryableCodes)
//!   (`UNAVAILABLE` by default), its pushback the hint (gRFC A6); a
//!   pushback that says not to retry (negative or malformed) is not waited
//!   out: the status is returned and counts against the budget and the
//!   breaker, as A6 counts it, and the call stops `nested`, since that is
//!   the mark of a server whose inner call gave up ([`ServerLayer`]). A
//!   status in trailers after a response body is not
//!   seen: once the server has answered, the call is committed (A6);
//! - a response to a gRPC call (`content-type: application/grpc`) with an
//!   HTTP status other than 200 and no `grpc-status`, which something in
//!   front of the server sent (a proxy, a load balancer), is judged by the
//!   code gRPC maps the status to: 429, 502, 503 and 504 are `UNAVAILABLE`,
//!   400 `INTERNAL`, 401 `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 404
//!   `UNIMPLEMENTED`, any other `UNKNOWN`;
//! - any other response with status 408, 429 or 5xx except 501 is retried,
//!   with its `Retry-After` as the hint, when the request is safe to repeat:
//!   an idempotent method, or an `Idempotency-Key` header;
//! - an error is retried when the request is safe to repeat and
//!   [`classify::chain`](crate::classify::chain) finds it transient
//!   (including a connection closed before the response), or, for any
//!   request, when the connection failed before sending;
//! - a request the server never processed (a refused connection:
//!   [`Unsent`](crate::Classification::Unsent); an HTTP/2 `REFUSED_STREAM`,
//!   or a stream above a graceful `GOAWAY`'s last stream id:
//!   [`Unprocessed`](crate::Classification::Unprocessed)), whatever its
//!   method, is sent again at once as the same attempt, with no budget
//!   token (gRFC A6's transparent retry): up to 3 times a call while it
//!   never left, once after a refusal, never past the deadline; then
//!   retried as any transient failure.
//!
//! A transient failure of a request that is not safe to repeat (a POST
//! without a key that got a 503) is returned, and counts against the budget
//! and the breaker all the same ([`Classification::Unrepeatable`](crate::Classification::Unrepeatable)), as gRFC
//! A6 has it: the budget sees the same traffic whatever the method.
//!
//! Any other classification is a closure
//! `Fn(&Req, &Result<Res, E>) -> Classification` given to
//! [`RetryLayer::with_classifier`] (any [`Classify`]); it sees the request's head (its body
//! was sent).
//!
//! # Guarantees
//!
//! - The policy, budget, breaker and registry are `&'static` or in an
//!   `Arc` ([`Shared`]): a configuration built at run time needs no leak.
//! - A gRPC call's own timeout (the `grpc-timeout` header that
//!   `tonic::Request::set_timeout` sends) bounds the whole call, retries
//!   included (gRFC A6): the call's deadline is the nearer of it and the
//!   policy's `deadline`, and each retried attempt carries the time the call
//!   has left, not the time the first attempt had.
//! - The call's `deadline` runs from the first attempt. A hint above `cap`
//!   (a pushback under a gRPC service config's policy is waited out: gRFC
//!   A6), the deadline, the budget, an open breaker and `max` stop the
//!   retries and return the last response or error, unchanged.
//! - Waits are on the timer of wherever the call runs (tokio's in a tokio
//!   runtime, one that needs no runtime elsewhere). The layer takes a
//!   [`Policy`], which has no per-attempt `timeout`: add `tower::timeout` inside this layer for that,
//!   with [`HttpClassifier::boxed_errors`] ([`BoxedHttpClassifier`]) as the classifier (a timeout
//!   fails with tower's `BoxError`; an attempt it cuts off is retried).
//! - [`RetryLayer::with_breaker`] ([`OneBreaker`]) asks a shared [`CircuitBreaker`] before
//!   every attempt: while it is open, requests fail at once with
//!   [`BreakerError::Open`] without reaching the service, and retries stop
//!   (a retry refused returns the failed attempt's answer).
//!   [`RetryLayer::per_authority`] ([`PerAuthority`]) does the same with one breaker and one
//!   budget per upstream host, from a [`Registry`].
//! - Each attempt runs in the call's attempt context, as a retried
//!   function's does: code in the service (a `service_fn`, a layer below)
//!   reads it with [`current_attempt`](crate::current_attempt), a retried
//!   call inside it never runs past the layer's deadline, and when that
//!   call gives up on what fails the attempt, the layer does not retry it
//!   (reason `nested`; DESIGN §4.11), unless the policy says
//!   [`Nested::Retry`](crate::Nested::Retry). A [`HedgeLayer`](crate::hedge::HedgeLayer)
//!   below is such a call.
//! - Each attempt carries its number and the time it has left, the nearer
//!   of the call's deadline and that of the attempt it runs inside (a
//!   request under [`ServerLayer`], an outer `#[retry]`):
//!   `x-envoy-attempt-count` and `x-envoy-expected-rq-timeout-ms`, or for
//!   a gRPC call one `grpc-timeout` and, on retries,
//!   `grpc-previous-rpc-attempts`. An answer a server marked as one its
//!   inner call gave up on (a [`ServerLayer`]'s `retry-exhausted` or
//!   negative pushback, Envoy's `x-envoy-overloaded`) is not retried, with
//!   the default classifier: reason `nested`, counted against the budget
//!   and the breaker (DESIGN §4.17).
//! - Nothing is spawned; dropping the response future cancels the call.
//! - For requests that are not `http::Request`s, [`RetryPolicy`] is a
//!   [`tower::retry::Policy`] for any cloneable request:
//!   `tower::retry::RetryLayer::new(RetryPolicy::new(&POLICY))`.
//!
//! [`Layer`]: https://docs.rs/tower/0.5/tower/trait.Layer.html
//! [`tower::retry::Policy`]: https://docs.rs/tower/0.5/tower/retry/trait.Policy.html

mod body;
mod breaker;
pub(crate) mod deadline;
mod policy;
mod server;
mod service;
mod upstreams;

use std::sync::Arc;

use ::tower::Layer;

pub(crate) use self::body::Buffer;
pub use self::body::ReplayBody;
pub use self::breaker::{BreakerError, CircuitBreakerLayer, CircuitBreakerService};
pub use self::policy::RetryPolicy;
pub use self::server::{ServerBody, ServerLayer, ServerService};
pub(crate) use self::service::ResponseFuture;
pub use self::service::RetryService;
pub(crate) use self::service::Settings;
pub(crate) use self::upstreams::PerKey;
pub use self::upstreams::{NoUpstreams, OneBreaker, PerAuthority};
pub use crate::classify::http::{BoxedHttpClassifier, Classify, HttpClassifier};
use crate::give_up::Hooked;
use crate::registry::Registry;
use crate::{CircuitBreaker, Policy, Shared};

/// The builder methods a retry and a hedge layer share, on their
/// [`Settings`] in a field `settings`.
macro_rules! layer_settings {
    () => {
        /// Draws retries (and a hedge layer's copies) from a budget shared
        /// by every request that names it (a `&'static RetryBudget` or an
        /// `Arc<RetryBudget>`).
        #[must_use]
        pub fn with_budget(
            mut self,
            budget: impl Into<$crate::Shared<$crate::RetryBudget>>,
        ) -> Self {
            self.settings.budget = Some(budget.into());
            self
        }

        /// Names the calls in `tracing` events and metrics (default `"tower"`).
        #[must_use]
        pub fn named(mut self, name: &'static str) -> Self {
            self.settings.name = name;
            self
        }

        /// Records at most `bytes` of a streaming request body for the later
        /// attempts (default 64 KiB); a larger body is sent once, not
        /// retried nor hedged.
        #[must_use]
        pub fn with_max_body(mut self, bytes: usize) -> Self {
            self.settings.max_body = bytes;
            self
        }

        /// Records at most `bytes` across all the calls of the layer at
        /// once (default 16 MiB; gRFC A6's per-channel limit): a call whose
        /// recording would pass it is sent once, not retried nor hedged,
        /// as a body over [`with_max_body`](Self::with_max_body) is. The
        /// services the layer makes, and its clones, share it.
        #[must_use]
        pub fn with_max_buffered(mut self, bytes: usize) -> Self {
            self.settings.buffer = $crate::tower::Buffer::new(bytes);
            self
        }

        /// The policy each request's attempts follow.
        #[must_use]
        pub fn policy(&self) -> &$crate::Policy {
            &self.settings.policy
        }
    };
}
pub(crate) use layer_settings;

/// A [`Layer`](https://docs.rs/tower/0.5/tower/trait.Layer.html) that retries each `http::Request` under a [`Policy`]; see
/// the [module docs](self).
///
/// `G` is the layer's [`on_give_up`](RetryLayer::on_give_up) hook, `()`
/// for none.
#[derive(Clone, Debug)]
pub struct RetryLayer<C = HttpClassifier, U = NoUpstreams, G = ()> {
    settings: Settings<C>,
    upstreams: U,
    give_up: G,
}

impl RetryLayer {
    /// Retries under `policy` (a `&'static Policy` or an `Arc<Policy>`) with
    /// the [`HttpClassifier`].
    #[must_use]
    pub fn new(policy: impl Into<Shared<Policy>>) -> Self {
        RetryLayer {
            settings: Settings::new(policy.into(), HttpClassifier::new()),
            upstreams: NoUpstreams,
            give_up: (),
        }
    }
}

impl<C, U, G> RetryLayer<C, U, G> {
    layer_settings!();

    /// Classifies outcomes with `classifier`, such as a closure
    /// `Fn(&Req, &Result<Res, E>) -> Classification`.
    #[must_use]
    pub fn with_classifier<C2>(self, classifier: C2) -> RetryLayer<C2, U, G> {
        RetryLayer {
            settings: self.settings.map(|_| classifier),
            upstreams: self.upstreams,
            give_up: self.give_up,
        }
    }

    /// Asks `breaker` (a `&'static CircuitBreaker` or an `Arc`) before
    /// every attempt and tells it every outcome as the classifier judged it,
    /// and stops retrying while it is open. Attempts it refuses fail with
    /// [`BreakerError::Open`]; the service's own errors come as
    /// [`BreakerError::Service`].
    #[must_use]
    pub fn with_breaker(
        self,
        breaker: impl Into<Shared<CircuitBreaker>>,
    ) -> RetryLayer<C, OneBreaker, G> {
        self.with_upstreams(OneBreaker(breaker.into()))
    }

    /// One breaker and one budget per upstream: each request's call uses
    /// the [`Upstream`](crate::registry::Upstream) that `registry` holds for its URI's authority
    /// (`host:port`), made on first use. Refusals fail with
    /// [`BreakerError::Open`]. An upstream without a budget, and a request
    /// without an authority, draw from the layer's budget; the latter has
    /// no breaker. A breaker the registry's factory
    /// leaves unnamed is named after the authority, so its `tracing`
    /// events and metrics say which host it guards (see
    /// [Names](crate::registry#names)). The layer's `U` is then
    /// [`PerAuthority`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use http::{Request, Response, StatusCode};
    /// use retry_runtime::registry::{Registry, Upstream};
    /// use retry_runtime::tower::{BreakerError, RetryLayer};
    /// use retry_runtime::{CircuitBreaker, Policy, RetryBudget};
    /// use tower::{Service, ServiceBuilder, ServiceExt};
    ///
    /// static POLICY: Policy = Policy::new().with_max_attempts(2);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let upstreams = Arc::new(Registry::new(256, |_host: &str| {
    ///     Upstream::new()
    ///         .with_breaker(CircuitBreaker::new().with_consecutive_failures(2))
    ///         .with_budget(RetryBudget::new(100, 0.1))
    /// }));
    /// // `down.example` answers 503, `up.example` 200.
    /// let hosts = tower::service_fn(|request: Request<String>| async move {
    ///     let down = request.uri().host() == Some("down.example");
    ///     let status = if down { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    ///     Ok::<_, std::io::Error>(Response::builder().status(status).body(()).unwrap())
    /// });
    /// let mut client = ServiceBuilder::new()
    ///     .layer(RetryLayer::new(&POLICY).per_authority(Arc::clone(&upstreams)))
    ///     .service(hosts);
    /// let get = |url: &str| Request::get(url).body(String::new()).unwrap();
    ///
    /// let first = client.ready().await.unwrap().call(get("http://down.example/")).await;
    /// assert_eq!(first.unwrap().status(), 503); // two attempts: the circuit opens
    /// let refused = client.ready().await.unwrap().call(get("http://down.example/")).await;
    /// assert!(matches!(refused, Err(BreakerError::Open(_))));
    /// let other = client.ready().await.unwrap().call(get("http://up.example/")).await;
    /// assert_eq!(other.unwrap().status(), 200); // its own circuit is closed
    /// # }
    /// ```
    #[must_use]
    pub fn per_authority(
        self,
        registry: impl Into<Shared<Registry>>,
    ) -> RetryLayer<C, PerAuthority, G> {
        self.with_upstreams(PerAuthority(registry.into()))
    }

    /// One breaker and one budget per key that `key` derives from each
    /// request's head (a tenant header, say), from `registry`, made on
    /// first use. Refusals fail with [`BreakerError::Open`]. A request
    /// `key` gives no key to uses the layer's budget and no breaker.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retry_runtime::registry::{Registry, Upstream};
    /// use retry_runtime::tower::RetryLayer;
    /// use retry_runtime::{CircuitBreaker, Policy};
    ///
    /// static POLICY: Policy = Policy::new();
    ///
    /// let tenants = Arc::new(Registry::new(1024, |_tenant: &str| {
    ///     Upstream::new().with_breaker(CircuitBreaker::new())
    /// }));
    /// let layer = RetryLayer::new(&POLICY).per_key(tenants, |head: &http::request::Parts| {
    ///     let tenant = head.headers.get("x-tenant")?.to_str().ok()?;
    ///     Some(tenant.to_owned())
    /// });
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn per_key<F>(
        self,
        registry: impl Into<Shared<Registry>>,
        key: F,
    ) -> RetryLayer<C, PerKey<F>, G>
    where
        F: Fn(&http::request::Parts) -> Option<String> + Clone + Send + Sync + 'static,
    {
        self.with_upstreams(PerKey(registry.into(), key))
    }

    fn with_upstreams<U2>(self, upstreams: U2) -> RetryLayer<C, U2, G> {
        RetryLayer {
            settings: self.settings,
            upstreams,
            give_up: self.give_up,
        }
    }

    /// Calls `on_give_up` once when a request's call returns an error or a
    /// response the classifier retried (a 503 after the last attempt), with
    /// what the caller gets and how the call stopped: the reason, the
    /// attempts made and the time taken, as `#[retry]`'s key does. Not
    /// called for a success. `on_give_up` is a
    /// `Fn(&Result<Response<B>, E>, &Stopped) + Clone + Send + Sync + 'static`,
    /// where `Result<Response<B>, E>` is what the layer's service returns
    /// (with a breaker, `E` is a [`BreakerError`]); it is checked against
    /// the service the layer wraps. With `tracing`, the call's give-up event
    /// is emitted all the same: the hook is for what the program does about
    /// it, not to log it again (docs/observability.md).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use http::{Request, Response, StatusCode};
    /// use retry_runtime::{tower::RetryLayer, Policy, Stop, Stopped};
    /// use tower::{Service, ServiceBuilder, ServiceExt};
    ///
    /// static POLICY: Policy = Policy::new().with_max_attempts(2);
    /// static GAVE_UP: AtomicU32 = AtomicU32::new(0);
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let down = tower::service_fn(|_: Request<String>| async {
    ///     Ok::<_, std::io::Error>(Response::builder().status(503).body(()).unwrap())
    /// });
    /// let layer = RetryLayer::new(&POLICY).on_give_up(
    ///     |outcome: &Result<Response<()>, std::io::Error>, stopped: &Stopped| {
    ///         let status = outcome.as_ref().map(Response::status);
    ///         assert_eq!((status.ok(), stopped.reason()), (Some(StatusCode::SERVICE_UNAVAILABLE), Stop::Exhausted));
    ///         GAVE_UP.fetch_add(1, Ordering::Relaxed);
    ///     },
    /// );
    /// let mut client = ServiceBuilder::new().layer(layer).service(down);
    /// let response = client.ready().await.unwrap().call(Request::new(String::new())).await;
    /// assert_eq!(response.unwrap().status(), 503);
    /// assert_eq!(GAVE_UP.load(Ordering::Relaxed), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn on_give_up<F>(self, on_give_up: F) -> RetryLayer<C, U, Hooked<F>> {
        RetryLayer {
            settings: self.settings,
            upstreams: self.upstreams,
            give_up: Hooked(on_give_up),
        }
    }
}

impl<S, C: Clone, U: Clone, G: Clone> Layer<S> for RetryLayer<C, U, G> {
    type Service = RetryService<S, C, U, G>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService {
            inner,
            settings: Arc::new(self.settings.clone()),
            upstreams: self.upstreams.clone(),
            give_up: self.give_up.clone(),
        }
    }
}
