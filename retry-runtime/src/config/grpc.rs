//! A gRPC service config, as gRPC clients in every language read it
//! (gRFC A6): one JSON file drives this library and them alike.
//!
//! A method config's `retryPolicy` becomes a [`Policy`] and the
//! [`RetryableCodes`] it retries; the service config's `retryThrottling`
//! becomes a [`RetryBudget`]; `hedgingPolicy` becomes the attempts, the
//! non-fatal codes and a [`Hedge`]. Values
//! are taken as gRPC takes them: durations as protobuf JSON writes them
//! (`"0.1s"`, seconds with up to nine decimals), numbers as protobuf JSON
//! writes them (a JSON number or a string holding one: `"maxAttempts": "3"`),
//! status codes by name (`"UNAVAILABLE"`) or number, and a `maxAttempts`
//! above 5 treated as 5. Every value gRFC A6 accepts loads (a
//! `backoffMultiplier` between 0 and 1 included); every value it refuses,
//! and a value of the wrong JSON type, is an error that names the field
//! and the rule, never a panic.
//!
//! The policies follow gRFC A6 as amended (grpc/proposal#452), as grpc-go
//! and grpc-java do, wherever they drive the loop (the attribute's `policy`
//! key, the closure API, the tower layer, a hedged call):
//!
//! - the wait before retry n (from 1) is
//!   `min(initialBackoff * backoffMultiplier^(n-1), maxBackoff) *
//!   uniform(0.8, 1.2)`: `base` is `initialBackoff`, `cap` is `maxBackoff`,
//!   and a wait may reach 1.2 x `cap`;
//! - a pushback (`grpc-retry-pushback-ms`, read by
//!   [`classify::grpc::pushback`](crate::classify::grpc::pushback)) is waited
//!   out exactly, even past `maxBackoff`, and the backoff restarts after it;
//!   one that says not to retry stops the call and counts against the
//!   throttle;
//! - a hedge is sent only while the throttle's count is above half, and
//!   takes no token.
//!
//! The attribute's own keys keep their rules (docs/semantics.md, "Under a
//! gRPC service config"). A method's `timeout` is the whole call's, retries
//! included: the policy's `deadline`.
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::config::grpc::ServiceConfig;
//! use tonic::{Code, Status};
//!
//! let config: ServiceConfig = serde_json::from_str(r#"{
//!     "methodConfig": [{
//!         "name": [{ "service": "helloworld.Greeter" }],
//!         "timeout": "5s",
//!         "retryPolicy": {
//!             "maxAttempts": 4,
//!             "initialBackoff": "0.1s",
//!             "maxBackoff": "1s",
//!             "backoffMultiplier": 2,
//!             "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
//!         }
//!     }],
//!     "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
//! }"#).unwrap();
//!
//! let method = config.for_path("/helloworld.Greeter/SayHello").unwrap();
//! let policy = method.policy();
//! assert_eq!(policy.max_attempts(), 4);
//! assert_eq!(policy.base(), Duration::from_millis(100));
//! assert_eq!(policy.deadline(), Some(Duration::from_secs(5)));
//! assert!(method.retryable().contains(Code::ResourceExhausted));
//! assert!(!method.retryable().is_retryable(&Status::invalid_argument("no")));
//!
//! let budget = config.budget().unwrap(); // RetryBudget::new(10, 0.1)
//! assert_eq!(budget.max_tokens(), 10.0);
//! ```
//!
//! Run a call under it with the closure API, or with the attribute's
//! `policy` key and the codes in `on`:
//!
//! ```
//! # use std::sync::LazyLock;
//! use retry_runtime::config::grpc::{MethodConfig, ServiceConfig};
//! use retry_runtime::{retry, Policy};
//!
//! static CONFIG: LazyLock<ServiceConfig> = LazyLock::new(|| {
//!     serde_json::from_str(r#"{ "methodConfig": [{ "name": [{}], "retryPolicy": {
//!         "maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "1s",
//!         "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] } }] }"#)
//!     .unwrap()
//! });
//! static SAY_HELLO: LazyLock<&MethodConfig> =
//!     LazyLock::new(|| CONFIG.method("helloworld.Greeter", "SayHello").unwrap());
//! // No per-attempt timeout (a service config has none), so it runs
//! // calls that fail with `tonic::Status`, which cannot express one.
//! static POLICY: LazyLock<Policy> = LazyLock::new(|| SAY_HELLO.policy());
//!
//! #[retry(policy = &POLICY, on = |status| SAY_HELLO.retryable().is_retryable(status))]
//! async fn say_hello(calls: &mut u32) -> Result<String, tonic::Status> {
//!     *calls += 1;
//!     if *calls < 3 { Err(tonic::Status::unavailable("restarting")) } else { Ok("hello".into()) }
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut calls = 0;
//! assert_eq!(say_hello(&mut calls).await.unwrap(), "hello");
//! assert_eq!(calls, 3);
//! # }
//! ```
//!
//! Other fields of a service config (`loadBalancingConfig`, `waitForReady`,
//! message size limits) are left to the channel: they are accepted and
//! ignored here.

use core::time::Duration;

use serde::Deserialize;

use crate::classify::grpc::RetryableCodes;
use crate::hedge::Hedge;
use crate::{Policy, RetryBudget};

mod load;

/// A gRPC service config's method configs and retry throttling.
/// Deserialize it from the service config's JSON.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "load::raw::ServiceConfig")]
pub struct ServiceConfig {
    methods: Vec<MethodConfig>,
    // `retryThrottling`'s `maxTokens` and `tokenRatio`.
    throttling: Option<(u32, f32)>,
}

/// One entry of `methodConfig`: the methods it names, and how calls to them
/// are retried.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodConfig {
    // Each `name`, as `[service, method]`. Without its method it names every
    // method of the service, and empty (`{}`) every method of every service;
    // a method without its service, or a name given more than once, makes
    // the service config an error, as gRPC clients have it.
    names: Vec<[String; 2]>,
    timeout: Option<Duration>,
    // `retryPolicy` without its codes, which are `retryable`.
    retry: Option<Policy>,
    hedging: Option<HedgingPolicy>,
    // `retryableStatusCodes`, or `nonFatalStatusCodes`, or none.
    retryable: RetryableCodes,
}

/// A method config's `hedgingPolicy`: send up to `maxAttempts` copies of a
/// call, one each `hedgingDelay`, until one answers; a copy that fails
/// with one of `nonFatalStatusCodes` starts the next at once.
///
/// [`MethodConfig::policy`] carries its attempts and
/// [`MethodConfig::retryable`] its non-fatal codes; [`hedge`](Self::hedge)
/// is the delay, for the closure API's `.hedge(..)`:
///
/// ```
/// use retry_runtime::config::grpc::ServiceConfig;
///
/// # use std::sync::LazyLock;
/// static CONFIG: LazyLock<ServiceConfig> = LazyLock::new(|| serde_json::from_str(r#"{ "methodConfig": [{
///     "name": [{ "service": "search.Index" }],
///     "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"] }
/// }] }"#).unwrap());
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let query = CONFIG.method("search.Index", "Query").unwrap();
/// let answer: Result<&str, tonic::Status> = query
///     .policy()
///     .on(|status: &tonic::Status| query.retryable().is_retryable(status))
///     .hedge(query.hedging_policy().unwrap().hedge())
///     .run(|| async { Ok("found") })
///     .await;
/// assert_eq!(answer.unwrap(), "found");
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgingPolicy {
    max_attempts: u32,
    delay: Duration,
    non_fatal: RetryableCodes,
}

impl ServiceConfig {
    /// The method config for `method` of `service` (`"helloworld.Greeter"`,
    /// `"SayHello"`), found as gRPC finds it: the config naming that method,
    /// else the one naming the whole service, else the default one (an
    /// empty name).
    #[must_use]
    pub fn method(&self, service: &str, method: &str) -> Option<&MethodConfig> {
        // A name without its service has no method either (`load`).
        let wanted = [(service, method), (service, ""), ("", "")];
        wanted.into_iter().find_map(|wanted| {
            let named = |[service, method]: &[String; 2]| (&**service, &**method) == wanted;
            self.methods
                .iter()
                .find(|config| config.names.iter().any(named))
        })
    }

    /// The method config for a request path as gRPC sends it,
    /// `"/helloworld.Greeter/SayHello"`. `None` for a path of another shape.
    #[must_use]
    pub fn for_path(&self, path: &str) -> Option<&MethodConfig> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        self.method(service, method)
    }

    /// Every method config, in the file's order.
    #[must_use]
    pub fn methods(&self) -> &[MethodConfig] {
        &self.methods
    }

    /// A new retry budget from `retryThrottling` (its `maxTokens` and
    /// `tokenRatio`: [`RetryBudget::max_tokens`], [`RetryBudget::token_ratio`]),
    /// to be shared by every call to the service (put it in a `static` or an
    /// `Arc`); `None` without `retryThrottling`.
    #[must_use]
    pub fn budget(&self) -> Option<RetryBudget> {
        let (max_tokens, token_ratio) = self.throttling?;
        Some(RetryBudget::new(max_tokens, token_ratio))
    }
}

impl MethodConfig {
    /// The names this config applies to, as `(service, method)`: the method
    /// (`"SayHello"`) empty for every method of the service
    /// (`"helloworld.Greeter"`), and both empty for every method of every
    /// service.
    ///
    /// ```
    /// use retry_runtime::config::grpc::ServiceConfig;
    ///
    /// let config: ServiceConfig = serde_json::from_str(r#"{ "methodConfig": [{
    ///     "name": [{ "service": "a.S", "method": "M" }, { "service": "b.S" }]
    /// }] }"#).unwrap();
    /// let names: Vec<_> = config.methods()[0].names().collect();
    /// assert_eq!(names, [("a.S", "M"), ("b.S", "")]);
    /// ```
    pub fn names(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.names
            .iter()
            .map(|[service, method]| (service.as_str(), method.as_str()))
    }

    /// `timeout`: the time for the whole call, retries included.
    #[must_use]
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// `retryPolicy`'s `maxAttempts`, `initialBackoff`, `maxBackoff` and
    /// `backoffMultiplier`, as a policy that follows gRFC A6 (see the
    /// [module docs](self)), if the config has a `retryPolicy`; its `retryableStatusCodes` are
    /// [`retryable`](Self::retryable). [`policy`](Self::policy) adds the
    /// method's `timeout` as the deadline.
    #[must_use]
    pub const fn retry_policy(&self) -> Option<Policy> {
        self.retry
    }

    /// `hedgingPolicy`, if the config has one.
    #[must_use]
    pub const fn hedging_policy(&self) -> Option<HedgingPolicy> {
        self.hedging
    }

    /// How calls to these methods run: the retry policy's attempts and
    /// backoff, or the hedging policy's attempts, with `timeout` as the
    /// deadline. Without either, one attempt, as gRPC makes. A service
    /// config sets no per-attempt timeout, so the policy runs calls whose
    /// error type cannot express one, `tonic::Status` among them. For a
    /// hedging policy, run it with [`HedgingPolicy::hedge`].
    #[must_use]
    pub fn policy(&self) -> Policy {
        let attempts = self.hedging.map_or(1, |hedging| hedging.max_attempts);
        let hedged_or_once = || load::a6(Policy::new().with_max_attempts(attempts));
        let policy = self.retry.unwrap_or_else(hedged_or_once);
        self.timeout
            .map_or(policy, |timeout| policy.with_deadline(timeout))
    }

    /// The status codes a failed attempt is followed by another on: the
    /// retry policy's `retryableStatusCodes`, or the hedging policy's
    /// `nonFatalStatusCodes`; none without either. Use it as the rule `on`
    /// (`RetryableCodes::is_retryable` also honours the server's pushback).
    #[must_use]
    pub fn retryable(&self) -> RetryableCodes {
        self.retryable
    }
}

impl HedgingPolicy {
    /// `maxAttempts`: copies of the call in all, the first included (5 at
    /// most).
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `hedgingDelay`: the time between two copies (zero: all at once).
    #[must_use]
    pub const fn delay(&self) -> Duration {
        self.delay
    }

    /// `nonFatalStatusCodes`: codes after which the other copies go on.
    #[must_use]
    pub const fn non_fatal(&self) -> RetryableCodes {
        self.non_fatal
    }

    /// `hedgingDelay` as the closure API's hedge: another copy each time the
    /// newest has run that long.
    #[must_use]
    pub const fn hedge(&self) -> Hedge {
        Hedge::after(self.delay)
    }
}
