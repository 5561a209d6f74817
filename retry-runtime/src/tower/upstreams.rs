//! Which circuit breaker and retry budget a request's call uses: the
//! layer's own, one breaker for every request, or one of each per upstream
//! from a [`Registry`], keyed by the request's authority or by a key of
//! your own. The choice itself is [`Selected`], as the middleware's is.

use super::breaker::BreakerError;
use crate::integration::Selected;
use crate::registry::{host_key, Registry};
use crate::{CircuitBreaker, CircuitOpen, Shared};

/// How a [`RetryLayer`](super::RetryLayer) finds a request's breaker and
/// budget, and the error its service fails with: [`NoUpstreams`],
/// [`OneBreaker`], [`PerAuthority`] or [`PerKey`]. Sealed: not for
/// implementing outside this crate.
pub trait Upstreams: Clone + Send + Sync + 'static {
    /// The service's error, given the inner service's `E`.
    type Error<E>;

    /// The breaker and budget of a request with this head.
    #[doc(hidden)]
    fn select(&self, head: &http::request::Parts) -> Selected;

    /// The inner service's error, as the service's.
    #[doc(hidden)]
    fn service<E>(error: E) -> Self::Error<E>;

    /// A call the breaker refused, as the service's error; `None` without
    /// a breaker (which then never refuses).
    #[doc(hidden)]
    fn refused<E>(open: CircuitOpen) -> Option<Self::Error<E>>;
}

/// No breaker; the layer's budget, if any. The service fails with the inner
/// service's error, unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoUpstreams;

impl Upstreams for NoUpstreams {
    type Error<E> = E;

    fn select(&self, _: &http::request::Parts) -> Selected {
        Selected::Own
    }

    fn service<E>(error: E) -> E {
        error
    }

    fn refused<E>(_: CircuitOpen) -> Option<E> {
        None
    }
}

/// The [`Upstreams`] whose service fails with [`BreakerError`], from how
/// each selects.
macro_rules! with_breaker_error {
    ($(impl[$($generics:tt)*] $ty:ty [$($bounds:tt)*], |$this:ident, $head:ident| $select:expr;)*) => {$(
        impl<$($generics)*> Upstreams for $ty $($bounds)* {
            type Error<E> = BreakerError<E>;

            fn select(&self, $head: &http::request::Parts) -> Selected {
                let $this = self;
                $select
            }

            fn service<E>(error: E) -> BreakerError<E> {
                BreakerError::Service(error)
            }

            fn refused<E>(open: CircuitOpen) -> Option<BreakerError<E>> {
                Some(BreakerError::Open(open))
            }
        }
    )*};
}

with_breaker_error! {
    impl[] OneBreaker [], |this, _head| Selected::Breaker(this.0.clone());
    impl[] PerAuthority [], |this, head| {
        let key = authority_key(&head.uri);
        Selected::keyed(&this.0, key.as_deref(), Selected::Own)
    };
    impl[F] PerKey<F> [where F: Fn(&http::request::Parts) -> Option<String> + Clone + Send + Sync + 'static], |this, head| {
        Selected::keyed(&this.0, (this.1)(head).as_deref(), Selected::Own)
    };
}

/// One breaker in front of every attempt
/// ([`RetryLayer::with_breaker`](super::RetryLayer::with_breaker)).
///
/// ```
/// use retry_runtime::tower::{BreakerError, HttpClassifier, OneBreaker, RetryLayer};
/// use retry_runtime::{CircuitBreaker, Policy};
/// use tower::{ServiceBuilder, ServiceExt};
///
/// static POLICY: Policy = Policy::new().with_max_attempts(3);
/// static BREAKER: CircuitBreaker = CircuitBreaker::new().with_consecutive_failures(2);
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// // Stands for a dependency that is down.
/// let down = tower::service_fn(|_: http::Request<String>| async {
///     Ok::<_, std::io::Error>(http::Response::builder().status(503).body(()).unwrap())
/// });
/// let layer: RetryLayer<HttpClassifier, OneBreaker> = RetryLayer::new(&POLICY).with_breaker(&BREAKER);
/// let client = ServiceBuilder::new().layer(layer).service(down);
/// let get = || http::Request::get("/").body(String::new()).unwrap();
/// // Two attempts open the circuit, which refuses the third: the second
/// // attempt's answer is returned.
/// assert_eq!(client.clone().oneshot(get()).await.unwrap().status(), 503);
/// let refused = client.oneshot(get()).await;
/// assert!(matches!(refused, Err(BreakerError::Open(_))));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct OneBreaker(pub(super) Shared<CircuitBreaker>);

/// A breaker and a budget per upstream, from a [`Registry`] keyed by the
/// request's `host:port` (the host in lower case, the scheme's default port
/// when the URI gives none, without credentials)
/// ([`RetryLayer::per_authority`](super::RetryLayer::per_authority)). A
/// request without one (a path-only URI, as a tonic channel's is above the
/// channel) uses the layer's budget and no breaker.
#[derive(Clone, Debug)]
pub struct PerAuthority(pub(super) Shared<Registry>);

/// A breaker and a budget per key, from a [`Registry`]: the key is what a
/// function of yours derives from the request's head (a tenant header, a
/// path prefix, a host from another header)
/// ([`RetryLayer::per_key`](super::RetryLayer::per_key)). A request it
/// gives no key uses the layer's budget and no breaker.
#[derive(Clone)]
pub struct PerKey<F>(pub(super) Shared<Registry>, pub(super) F);

/// Whatever `F` is (a closure is not `Debug`), as `RetryLayer`'s derived
/// `Debug` needs: the function shows as `..`.
impl<F> core::fmt::Debug for PerKey<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("PerKey")
            .field(&self.0)
            .finish_non_exhaustive()
    }
}

/// The registry key of a request's upstream: its host, in lower case, and
/// port, the scheme's default when the URI gives none (`host:port`, as the
/// reqwest middleware keys by the URL); credentials (`user:secret@`) are no
/// part of it, so they never reach a breaker's name. A port the URI writes
/// that is not one (`h:99999`) keys as written.
fn authority_key(uri: &http::Uri) -> Option<String> {
    let authority = uri.authority()?;
    let host = authority.host();
    let written = authority
        .as_str()
        .rsplit_once(':')
        .and_then(|(before, port)| {
            let digits = !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit());
            (digits && before.ends_with(host)).then_some(port)
        });
    Some(match (authority.port_u16(), written) {
        (Some(port), _) => host_key(host, Some(port)),
        (None, Some(as_written)) => host_key(host, Some(as_written)),
        (None, None) => host_key(host, default_port(uri.scheme_str())),
    })
}

/// The port a URI of this scheme means when it gives none.
fn default_port(scheme: Option<&str>) -> Option<u16> {
    let scheme = scheme?;
    [("http", 80), ("ws", 80), ("https", 443), ("wss", 443)]
        .into_iter()
        .find_map(|(name, port)| scheme.eq_ignore_ascii_case(name).then_some(port))
}
