//! Which circuit breaker and retry budget a request's call uses: the
//! layer's own, one breaker for every request, or one of each per upstream
//! from a [`Registry`], keyed by the request's authority or by a key of
//! your own.

use std::sync::Arc;

use super::breaker::BreakerError;
use crate::registry::{host_key, Registry, Upstream};
use crate::{CircuitBreaker, CircuitOpen, RetryBudget, Shared};

/// How a [`RetryLayer`](super::RetryLayer) finds a request's breaker and
/// budget, and the error its service fails with: [`NoUpstreams`],
/// [`OneBreaker`] or [`PerAuthority`].
pub trait Upstreams: Clone + Send + Sync + 'static {
    /// The service's error, given the inner service's `E`.
    type Error<E>;

    /// The breaker and budget of a request with this head.
    fn select(&self, head: &http::request::Parts) -> Selected;

    /// The inner service's error, as the service's.
    fn service<E>(error: E) -> Self::Error<E>;

    /// A call the breaker refused, as the service's error; `None` without
    /// a breaker (which then never refuses).
    fn refused<E>(open: CircuitOpen) -> Option<Self::Error<E>>;
}

/// A request's breaker and budget, as [`Upstreams::select`] found them.
#[derive(Debug, Default)]
pub struct Selected(Choice);

#[derive(Debug, Default)]
enum Choice {
    #[default]
    Layer,
    Breaker(Shared<CircuitBreaker>),
    Upstream(Arc<Upstream>),
}

impl Selected {
    pub(super) fn budget(&self) -> Option<&RetryBudget> {
        match &self.0 {
            Choice::Upstream(upstream) => upstream.budget(),
            Choice::Layer | Choice::Breaker(_) => None,
        }
    }

    pub(super) fn breaker(&self) -> Option<&CircuitBreaker> {
        match &self.0 {
            Choice::Upstream(upstream) => upstream.breaker(),
            Choice::Breaker(breaker) => Some(breaker),
            Choice::Layer => None,
        }
    }
}

/// No breaker; the layer's budget, if any. The service fails with the inner
/// service's error, unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoUpstreams;

impl Upstreams for NoUpstreams {
    type Error<E> = E;

    fn select(&self, _: &http::request::Parts) -> Selected {
        Selected::default()
    }

    fn service<E>(error: E) -> E {
        error
    }

    fn refused<E>(_: CircuitOpen) -> Option<E> {
        None
    }
}

/// One breaker in front of every attempt
/// ([`RetryLayer::with_breaker`](super::RetryLayer::with_breaker)).
#[derive(Clone, Debug)]
pub struct OneBreaker(pub(super) Shared<CircuitBreaker>);

impl Upstreams for OneBreaker {
    type Error<E> = BreakerError<E>;

    fn select(&self, _: &http::request::Parts) -> Selected {
        Selected(Choice::Breaker(self.0.clone()))
    }

    fn service<E>(error: E) -> BreakerError<E> {
        BreakerError::Service(error)
    }

    fn refused<E>(open: CircuitOpen) -> Option<BreakerError<E>> {
        Some(BreakerError::Open(open))
    }
}

/// A breaker and a budget per upstream, from a [`Registry`] keyed by the
/// request's `host:port` (the host in lower case, the scheme's default port
/// when the URI gives none, without credentials)
/// ([`RetryLayer::per_authority`](super::RetryLayer::per_authority)). A
/// request without one (a path-only URI, as a tonic channel's is above the
/// channel) uses the layer's budget and no breaker.
#[derive(Clone, Debug)]
pub struct PerAuthority(pub(super) Shared<Registry>);

impl Upstreams for PerAuthority {
    type Error<E> = BreakerError<E>;

    fn select(&self, head: &http::request::Parts) -> Selected {
        match authority_key(&head.uri) {
            Some(key) => Selected(Choice::Upstream(self.0.get(key.as_str()))),
            None => Selected::default(),
        }
    }

    fn service<E>(error: E) -> BreakerError<E> {
        BreakerError::Service(error)
    }

    fn refused<E>(open: CircuitOpen) -> Option<BreakerError<E>> {
        Some(BreakerError::Open(open))
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
    match scheme? {
        scheme if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("ws") => {
            Some(80)
        }
        scheme if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("wss") => {
            Some(443)
        }
        _ => None,
    }
}

/// A breaker and a budget per key, from a [`Registry`]: the key is what a
/// function of yours derives from the request's head (a tenant header, a
/// path prefix, a host from another header)
/// ([`RetryLayer::per_key`](super::RetryLayer::per_key)). A request it
/// gives no key uses the layer's budget and no breaker.
#[derive(Clone)]
pub struct PerKey<F>(pub(super) Shared<Registry>, pub(super) F);

impl<F> core::fmt::Debug for PerKey<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("PerKey")
            .field(&self.0)
            .finish_non_exhaustive()
    }
}

impl<F> Upstreams for PerKey<F>
where
    F: Fn(&http::request::Parts) -> Option<String> + Clone + Send + Sync + 'static,
{
    type Error<E> = BreakerError<E>;

    fn select(&self, head: &http::request::Parts) -> Selected {
        match (self.1)(head) {
            Some(key) => Selected(Choice::Upstream(self.0.get(key.as_str()))),
            None => Selected::default(),
        }
    }

    fn service<E>(error: E) -> BreakerError<E> {
        BreakerError::Service(error)
    }

    fn refused<E>(open: CircuitOpen) -> Option<BreakerError<E>> {
        Some(BreakerError::Open(open))
    }
}
