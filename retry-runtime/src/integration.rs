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
    /// an error ends the call unsent.
    fn ready(&mut self) -> impl Future<Output = Result<(), Self::Output>>;

    /// Sends one attempt.
    fn send(
        &mut self,
        request: Self::Request,
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
pub(crate) async fn exchange<X: Exchange>(
    mut exchange: X,
    policy: &Policy,
    budget: Option<&RetryBudget>,
    breaker: Option<&CircuitBreaker>,
    name: &'static str,
    first: X::Request,
) -> X::Output {
    let mut call = Attempts::start(policy, budget, name).with_breaker_if(breaker);
    // Under way from here: a fan-out of HTTP calls inside a retried attempt
    // is judged as one of retried functions is.
    call.waiting();
    let mut request = first;
    let mut kept = None;
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
        // Marked with the attempt's breaker permit: a layer below that asks
        // the same breaker runs under it, and counts the attempt once.
        let answer = crate::observe::in_span(span, call.marked(|| exchange.send(request))).await;
        let mut outcome = exchange.classify(&answer);
        let next = match outcome {
            Classification::Transient(_) => exchange.copy(),
            _ => None,
        };
        if next.is_none() && outcome.is_transient() {
            outcome = Classification::Unrepeatable;
        }
        crate::observe::failed_with(&answer, &outcome);
        let (Ok(wait), Some(next)) = (call.judge(outcome), next) else {
            return X::output(answer);
        };
        kept = breaker.is_some().then(|| X::output(answer));
        crate::sleep::sleep(wait).await;
        request = next;
    }
}

/// A request's breaker and budget, as a layer picked them.
#[derive(Debug, Default)]
pub enum Selected {
    /// The layer's budget; no breaker.
    #[default]
    Own,
    /// One breaker for every request, and the layer's budget.
    Breaker(Shared<CircuitBreaker>),
    /// The request's upstream's breaker, and its budget or else the layer's.
    Upstream(Arc<Upstream>),
}

impl Selected {
    /// The upstream `registry` holds for `key`, made on first use; `own`
    /// for a request with no key.
    pub(crate) fn keyed(registry: &Registry<Upstream>, key: Option<&str>, own: Self) -> Self {
        key.map_or(own, |key| Selected::Upstream(registry.get(key)))
    }

    /// The budget the call draws from, given the layer's own.
    pub(crate) fn budget<'a>(&'a self, own: Option<&'a RetryBudget>) -> Option<&'a RetryBudget> {
        match self {
            Selected::Upstream(upstream) => upstream.budget().or(own),
            Selected::Own | Selected::Breaker(_) => own,
        }
    }

    /// The breaker the call asks.
    pub(crate) fn breaker(&self) -> Option<&CircuitBreaker> {
        match self {
            Selected::Upstream(upstream) => upstream.breaker(),
            Selected::Breaker(breaker) => Some(breaker),
            Selected::Own => None,
        }
    }
}

/// The registry key of a request's upstream: its host, in lower case, and
/// port, the scheme's default when the URI gives none (`host:port`, as the
/// reqwest middleware keys by the URL); credentials (`user:secret@`) are no
/// part of it, so they never reach a breaker's name. Borrowed from the URI
/// when it already spells it so, and built on the stack otherwise: no
/// allocation either way (`tests/per_host_key_allocations.rs`). A port the
/// URI writes that is not one (`h:99999`) keys as written.
#[cfg(feature = "tower")]
pub(crate) fn authority_key(uri: &http::Uri) -> Option<HostPort<'_>> {
    let authority = uri.authority()?;
    let host = authority.host();
    let lower = !host.bytes().any(|byte| byte.is_ascii_uppercase());
    let plain = lower && !authority.as_str().contains('@');
    let written = authority
        .as_str()
        .rsplit_once(':')
        .and_then(|(before, port)| {
            let digits = !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit());
            (digits && before.ends_with(host)).then_some(port)
        });
    let key = match (authority.port_u16(), written) {
        (Some(_), Some(as_written)) if plain && !as_written.starts_with('0') => {
            HostPort::written(authority.as_str())
        }
        (Some(port), _) => HostPort::new(host, Some(port)),
        (None, Some(as_written)) => HostPort::long(host, as_written),
        (None, None) => match default_port(uri.scheme_str()) {
            Some(port) => HostPort::new(host, Some(port)),
            None if lower => HostPort::written(host),
            None => HostPort::new(host, None),
        },
    };
    Some(key)
}

/// The port a URI of this scheme means when it gives none.
#[cfg(feature = "tower")]
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

/// An upstream's registry key, `host:port` with the host in lower case, as
/// the tower layer and the middleware both key their per-host breakers:
/// made for every request, so built on the stack (or borrowed, when the
/// request already spells it so); only a host longer than DNS allows is
/// written to the heap.
// Large on purpose: it lives on the stack for one lookup, where boxing the
// bytes would be the allocation it is there to avoid.
#[allow(clippy::large_enum_variant)]
pub(crate) enum HostPort<'a> {
    /// Only the tower layer's URIs can be borrowed from.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    Written(&'a str),
    Built {
        bytes: [u8; HostPort::ROOM],
        len: usize,
    },
    Long(String),
}

impl<'a> HostPort<'a> {
    /// A host of 255 bytes (DNS allows 253), `:` and five digits.
    const ROOM: usize = 255 + 1 + 5;

    /// The key as the request already writes it: checked by the caller to
    /// be a lower-case `host:port` (or a host alone, for a scheme without a
    /// default port).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn written(key: &'a str) -> Self {
        HostPort::Written(key)
    }

    /// `host` in lower case, then `:port` when there is a port.
    pub(crate) fn new(host: &str, port: Option<u16>) -> Self {
        let mut bytes = [0; HostPort::ROOM];
        let mut len = 0;
        let mut push = |byte: u8| {
            let slot = bytes.get_mut(len)?;
            *slot = byte;
            len += 1;
            Some(())
        };
        let built = host
            .bytes()
            .try_for_each(|byte| push(byte.to_ascii_lowercase()))
            .and_then(|()| match port {
                Some(port) => {
                    push(b':')?;
                    let mut digits = [0; 5];
                    let mut rest = port;
                    let mut count = 0;
                    loop {
                        // `rest % 10` is below 10.
                        let digit = u8::try_from(rest % 10).unwrap_or(0);
                        *digits.get_mut(count)? = b'0' + digit;
                        count += 1;
                        rest /= 10;
                        if rest == 0 {
                            break;
                        }
                    }
                    digits[..count]
                        .iter()
                        .rev()
                        .try_for_each(|&digit| push(digit))
                }
                None => Some(()),
            });
        let key = HostPort::Built { bytes, len };
        if built.is_some() && core::str::from_utf8(&bytes[..len]).is_ok() {
            return key;
        }
        let host = host.to_ascii_lowercase();
        HostPort::Long(match port {
            Some(port) => format!("{host}:{port}"),
            None => host,
        })
    }

    /// A port written in the request that is none (above 65535): the key
    /// keeps it as written, so that such requests share no breaker with the
    /// host's real ports.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn long(host: &str, port: &str) -> Self {
        HostPort::Long(format!("{}:{port}", host.to_ascii_lowercase()))
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            HostPort::Written(key) => key,
            // Checked to be UTF-8 when built.
            HostPort::Built { bytes, len } => core::str::from_utf8(&bytes[..*len]).unwrap_or(""),
            HostPort::Long(key) => key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HostPort;

    #[test]
    fn keys_are_host_and_port_in_lower_case() {
        assert_eq!(
            HostPort::new("Payments.Internal", Some(443)).as_str(),
            "payments.internal:443"
        );
        assert_eq!(HostPort::new("h", Some(0)).as_str(), "h:0");
        assert_eq!(HostPort::new("h", Some(65535)).as_str(), "h:65535");
        assert_eq!(HostPort::new("[::1]", Some(8080)).as_str(), "[::1]:8080");
        assert_eq!(HostPort::new("h", None).as_str(), "h");
        let long = "a".repeat(300);
        assert_eq!(HostPort::new(&long, Some(1)).as_str(), format!("{long}:1"));
        let exact = "b".repeat(255);
        assert!(matches!(
            HostPort::new(&exact, Some(65535)),
            HostPort::Built { .. }
        ));
        assert_eq!(
            HostPort::new(&exact, Some(65535)).as_str(),
            format!("{exact}:65535")
        );
    }
}
