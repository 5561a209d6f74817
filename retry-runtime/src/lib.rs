//! Retries done right: capped exponential backoff with jitter, deadlines,
//! retry budgets, server hints and circuit breakers, as an attribute.
//!
//! ```
//! use retry_runtime::retry;
//!
//! #[derive(Debug)]
//! enum ApiError { Timeout, BadRequest }
//!
//! fn is_transient(error: &ApiError) -> bool {
//!     matches!(error, ApiError::Timeout)
//! }
//!
//! /// Fetches a user's name.
//! #[retry(max = 4, base = "200ms", cap = "10s", deadline = "10s", on = is_transient)]
//! async fn fetch_user(id: u64) -> Result<String, ApiError> {
//!     if id == 0 { Err(ApiError::BadRequest) } else { Ok(format!("user {id}")) }
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() { assert_eq!(fetch_user(7).await.unwrap(), "user 7"); }
//! ```
//!
//! `#[retry]` rewrites the function into a loop: each attempt runs the
//! original body afresh; an error that `on` accepts is retried after a wait of
//! capped exponential backoff with jitter, until `max` attempts or the
//! `deadline` are used up; the caller always gets the last attempt's result,
//! unchanged. The keys are checked while compiling: a typo in a key or a
//! duration is a compile error on that token.
//!
//! # Which entry point
//!
//! Four entry points run the same loop, and decide through the same code: the
//! same [`Policy`] (backoff, jitter, `max`, `deadline`), the same
//! [`RetryBudget`] and [`CircuitBreaker`], the same handling of a server's
//! hint.
//!
//! | you have | use | |
//! |---|---|---|
//! | a function whose policy is known while compiling | [`#[retry(..)]`](retry) | every key checked by the compiler; no allocation; adds a `# Retries` section to the function's docs |
//! | a policy read at run time, or a closure to retry | [`policy.on(..).run(..)`](Policy::on), [`policy.retry(..)`](Policy::retry) | the same loop over a closure, with any error type (a `Policy<TimedOut>`, made by [`with_timeout`](Policy::with_timeout), asks for `From<TimedOut>` or [`timed_out`](Policy::timed_out)); `run_blocking` for blocking code |
//! | a tower stack: hyper, axum, tonic channels | [`RetryLayer`] (feature `tower`) | each request cloned per attempt; `Retry-After` and gRPC pushback read from responses |
//! | a `reqwest-middleware` client | [`RetryMiddleware`] (feature `reqwest-middleware`) | only requests that are safe to repeat are retried |
//!
//! The closure API, with a policy built at run time (from configuration, say):
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::{Jitter, Policy};
//! # #[derive(Debug)] struct ApiError;
//! # impl From<retry_runtime::TimedOut> for ApiError { fn from(_: retry_runtime::TimedOut) -> Self { ApiError } }
//! # fn is_transient(_: &ApiError) -> bool { true }
//! # async fn get_user(id: u64) -> Result<u64, ApiError> { Ok(id) }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!
//! let policy = Policy::new()
//!     .with_max_attempts(5)
//!     .with_base(Duration::from_millis(50))
//!     .with_jitter(Jitter::Equal);
//! policy.validate()?; // the rules the attribute checks while compiling
//! let user = policy.on(is_transient).run(|| get_user(7)).await;
//! # assert_eq!(user.unwrap(), 7);
//! # Ok(())
//! # }
//! ```
//!
//! # Keeping a failing dependency from being overwhelmed
//!
//! Per-call limits do not stop a fleet-wide storm: when every call fails,
//! `max = 4` makes every call four. Shared guards do:
//!
//! - [`RetryBudget`] (`budget = &BUDGET`): gRPC's retry throttling, shared by
//!   every call that names it, lock-free. During a total outage,
//!   `RetryBudget::new(100, 0.1)` allows about 50 retries in all, however many
//!   calls fail.
//! - [`CircuitBreaker`] (`breaker = &BREAKER`): when most calls fail, callers
//!   get an error at once, and a few probe calls test whether the dependency
//!   is back. [`CircuitBreaker::acquire`] gives a [`CircuitPermit`] outside
//!   the loop.
//! - [`hedge`] (`hedge = "50ms"` or `hedge = "p95"`): another attempt for a
//!   slow one, before it has failed, within the same budget and breaker; for
//!   tail latency rather than failures.
//! - Nesting: a retried function called inside another's attempt retries as
//!   it would alone; when it gives up, the outer attempt is not retried
//!   ([`Nested`], [`Stop::Nested`]), so three layers of three attempts cost
//!   three calls at the bottom, not 27.
//! - `deadline` bounds the whole call and `timeout` each attempt
//!   ([`TimedOut`]); inside the body, [`current_attempt`] gives the attempt
//!   number, the time left and the call's [`IdempotencyKey`].
//!
//! # Watching it
//!
//! - `on_retry` calls a function of yours before each wait.
//! - `on_give_up` ([`Retry::on_give_up`] on the closure API) is told once
//!   why a call gave up, after how many attempts and how long; [`last_call`]
//!   says the same of the call that just ended on this thread.
//! - The `tracing` feature emits one event per retry and one when a call
//!   gives up, with the reason ([`Stop`]).
//! - The [`metrics`] module counts retries and give-ups in process; with the
//!   `metrics` feature, `retry_runtime_calls_total`,
//!   `retry_runtime_retries_total`, `retry_runtime_wait_seconds` and the
//!   breaker's transitions go through the `metrics` facade.
//!
//! # What `cargo doc` shows for a retried function
//!
//! The attribute adds a `# Retries` section to the documentation of a
//! documented function, so a reader of your crate's docs sees the policy.
//! For `fetch_user` above, the section reads:
//!
//! > **Retries**
//! >
//! > Retried with `#[retry]`: up to 4 attempts (the call and 3 retries) on
//! > errors `is_transient` accepts.
//! >
//! > | retry | ceiling |
//! > |---|---|
//! > | 1 | 200ms |
//! > | 2 | 400ms |
//! > | 3 | 800ms |
//! >
//! > Each wait is drawn by full jitter: uniform between zero and the ceiling.
//! >
//! > Worst-case total wait: 1.4s; the whole call is bounded by a deadline of 10s.
//! >
//! > - A failure that a retried function it calls already retried is returned
//! >   at once, not retried again here.
//! > - The caller gets the last attempt's result, unchanged.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `macros` | yes | the [`#[retry]`](retry) attribute |
//! | `classify-io` | | [`classify::io`]: `std::io::Error` kinds that are worth a retry |
//! | `http` | | `classify::http`: HTTP status codes and the `Retry-After` header (`http` crate) |
//! | `reqwest` | | `classify::reqwest`: reqwest errors and responses; `.idempotency_key()` on request builders |
//! | `hyper` | | `hyper::Error` in error chains ([`classify::chain`]) |
//! | `tower` | | [`RetryLayer`], a `tower::retry::Policy`, a circuit breaker layer, `hedge::HedgeLayer`, and `tower::ServerLayer`, which runs a server's requests under their callers' deadlines and marks a failure an inner call gave up on, so that services retry at one layer |
//! | `reqwest-middleware` | | [`RetryMiddleware`] |
//! | `tonic` | | `classify::grpc`: `tonic::Status` codes and pushback (gRFC A6) |
//! | `tracing` | | events per retry and per give-up |
//! | `attempt-spans` | | a `tracing` span per attempt (`retry.attempt`, OpenTelemetry's attribute names); the successful first attempt included |
//! | `metrics` | | metrics through the `metrics` facade, labelled by function and stop reason |
//! | `serde` | | [`Policy`] from and to configuration (TOML, JSON, ...), gRPC service configs |
//!
//! `io` and `grpc` still work as other names for `classify-io` and `tonic`,
//! until 0.2.
//!
//! # Guarantees
//!
//! - A retried function spawns no task; dropping its future cancels the
//!   call. Inside a tokio runtime it allocates nothing, and its waits are
//!   `tokio::time::sleep`, so a paused test clock runs a whole schedule
//!   instantly; each wait ends on tokio's next 1 ms tick. Exceptions:
//!   outside tokio, waits go to one timer thread that the process starts
//!   on the first such wait; hedging through the closure API or the tower
//!   layer allocates a little per call (see [`hedge`]); and with the
//!   `metrics` feature, the facade builds a labelled key for each metric it
//!   records (two allocations per call, three per retry).
//! - The generated future (and the closure API's) is `Send` whenever the
//!   body's is; the error of a failed attempt is dropped before the wait
//!   (except with `breaker`, which keeps the last one through the wait, to
//!   return it should the breaker refuse the retry: the error must then be
//!   `Send` too).
//! - A panic in the body propagates and is not retried.
//! - No input makes the runtime panic or overflow: no header, no policy, no
//!   attempt count.
//!
//! The whole contract, rule by rule, is in `docs/semantics.md` of the
//! repository; where each kind of executor gets its timer, clock and
//! randomness, in `docs/runtimes.md`.
//!
// Links to items behind features: to the item when the feature is on, to the
// table of Cargo features above otherwise, so that no build shows an
// unresolved link or links to a page that does not exist.
#![cfg_attr(feature = "tower", doc = "[`RetryLayer`]: tower::RetryLayer")]
#![cfg_attr(not(feature = "tower"), doc = "[`RetryLayer`]: crate#cargo-features")]
#![cfg_attr(
    feature = "reqwest-middleware",
    doc = "[`RetryMiddleware`]: reqwest_middleware::RetryMiddleware"
)]
#![cfg_attr(
    not(feature = "reqwest-middleware"),
    doc = "[`RetryMiddleware`]: crate#cargo-features"
)]
#![cfg_attr(feature = "io", doc = "[`classify::io`]: classify::io")]
#![cfg_attr(not(feature = "io"), doc = "[`classify::io`]: crate#cargo-features")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attempts;
mod breaker;
mod budget;
mod call_state;
mod circuit;
pub mod classify;
mod clock;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod config;
mod context;
mod decision;
mod driver;
mod give_up;
mod guard;
pub mod hedge;
pub mod idempotency;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod integration;
pub mod metrics;
mod observe;
mod policy;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod propagate;
pub mod registry;
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod reqwest_middleware;
pub mod retry_after;
mod ring;
mod rng;
mod rules;
mod shared;
mod sleep;
mod slots;
mod stopped;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod timeout;
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[doc(hidden)]
pub mod __private;

pub use breaker::{CircuitBreaker, CircuitOpen, CircuitPermit};
pub use budget::RetryBudget;
pub use circuit::{CircuitState, Transition};
pub use context::{current_attempt, AttemptContext};
pub use decision::{Classification, Stop};
pub use driver::Retry;
pub use idempotency::IdempotencyKey;
pub use policy::{Jitter, Nested, Policy, PolicyError};
pub use retry_core::{parse_duration, DurationError};
pub use rng::seed_thread_rng;
pub use shared::Shared;
pub use stopped::{last_call, Stopped};
pub use timeout::TimedOut;

/// Retries a function, `async` or not, that returns a `Result`.
///
/// ```
/// use retry_runtime::retry;
/// # #[derive(Debug)] struct ApiError;
/// # fn is_transient(_: &ApiError) -> bool { true }
///
/// #[retry(max = 4, base = "200ms", cap = "10s", on = is_transient)]
/// async fn fetch_user(id: u64) -> Result<String, ApiError> {
///     Ok(format!("user {id}"))
/// }
/// ```
///
/// The function keeps its signature, visibility, generics, attributes and
/// docs. Each attempt runs the body afresh, borrowing the arguments, and
/// starts from them as the caller passed them. A by-value `mut` argument
/// whose type is `Clone` where the function is written (a generic type only
/// with a `Clone` bound) is restored from a copy of the caller's value before
/// each retry, so that what a failed attempt changed (a batch it drained) is
/// not seen by the next; one whose type is not `Clone` (a generic
/// `F: FnMut() -> Fut`, a channel receiver) is carried from one attempt to the
/// next, as a `&mut` argument would be. Nothing else is cloned. Rules (`on`,
/// `retry_after`, hooks) may capture the arguments (`on = |e| idempotent &&
/// is_transient(e)`), and parameters configured out by `#[cfg]` are left
/// alone. The caller gets the last attempt's result, unchanged.
///
/// # Keys
///
/// | key | value | default | meaning |
/// |---|---|---|---|
/// | `max` | integer >= 1 | `3` | attempts in total, the first call included |
/// | `base` | duration string > 0 | `"100ms"` | ceiling of the first backoff |
/// | `cap` | duration string >= base | `"10s"` | no computed backoff exceeds it |
/// | `multiplier` | number >= 1 | `2` | `ceiling(n) = min(cap, base * multiplier^n)`, `n = 0` before the first retry |
/// | `jitter` | `"full"`, `"equal"`, `"decorrelated"`, `"none"` | `"full"` | see [`Jitter`] |
/// | `deadline` | duration string | none | total time from the start of the first attempt; no wait that would pass it is started |
/// | `on` | `Fn(&E) -> bool` | every error | which errors may succeed on a repeat |
/// | `retry_after` | `Fn(&E) -> Option<Duration>` | none | a wait the server asked for; wait `max(hint, backoff) + uniform[0, hint/10]`; a hint above `cap` returns at once |
/// | `on_ok` | `Fn(&T) -> bool` | none | `Ok` values to retry (an HTTP 503); the last one is returned as it came |
/// | `retry_after_ok` | `Fn(&T) -> Option<Duration>` | none | the server's wait, read from an `Ok` value `on_ok` retries |
/// | `budget` | `&'static RetryBudget` | none | a [`RetryBudget`] shared by every call that names it |
/// | `timeout` | duration string | none | each attempt is cut off and fails with `E::from(`[`TimedOut`]`)`, or with what `timed_out` builds |
/// | `timed_out` | `Fn(TimedOut) -> E`, a path or a closure that captures nothing | `E::from` | how a cut-off attempt fails (under `timeout` or a `policy`'s), for an error type without `From<TimedOut>`: `timed_out = \|_\| Status::deadline_exceeded("attempt timed out")` |
/// | `breaker` | `&CircuitBreaker` | none | a [`CircuitBreaker`] shared by every call that names it; a refused call fails with `E::from(`[`CircuitOpen`]`)`, or with what `circuit_open` builds |
/// | `circuit_open` | `Fn(CircuitOpen) -> E` (with `hedge`, a path or a closure that captures nothing) | `E::from` | how a refused call fails, for an error type without `From<CircuitOpen>`: `circuit_open = \|_\| Status::unavailable("circuit open")` |
/// | `hedge` | duration string, or a percentile `"p50"` .. `"p99.9"` | none | while no attempt has answered, start another each time the newest has run this long (or for this percentile of the function's recent successful latencies, `base` until 100 were seen), up to `max` at once; the first answer wins and the rest are dropped; `async fn` only, with no `&mut` or `mut` argument; see [`hedge`] |
/// | `on_retry` | `Fn(&E, u32, Duration)` | none | called before each wait with the error, the attempt number and the wait |
/// | `on_retry_ok` | `Fn(&T, u32, Duration)` | none | the same for an `Ok` value `on_ok` retries |
/// | `on_give_up` | `Fn(&Result<T, E>, &Stopped)` | none | called once when a call returns an error or a retried `Ok` (never for a success), with the outcome and how the call ended: see [`Stopped`] |
/// | `nested` | `"once"`, `"retry"` | `"once"` | on an outer function: return at once a failed attempt in which an inner retried function already gave up after retrying, or retry it anyway; see [`Nested`] |
/// | `policy` | `&Policy` or `&Policy<TimedOut>` | none | a [`Policy`] built at run time instead of the keys `max`, `base`, `cap`, `multiplier`, `jitter`, `deadline`, `timeout` and `nested`; a `&Policy` runs with any error type; a `&Policy<TimedOut>` (one with a timeout) needs `E: From<TimedOut>` or `timed_out` |
/// | `crate` | string holding a path | `"::retry_runtime"` | where this crate is, if renamed |
///
/// A plain (non-async) `fn` works too: waits are `std::thread::sleep`, the
/// deadline runs on the real clock, and every key applies; since a blocking
/// call cannot be cut off, an attempt that returns after its `timeout` counts
/// as timed out.
///
/// For an error type that can be neither extended nor built
/// (`reqwest::Error`), return an error enum of your own that holds it, and
/// `CircuitOpen` or `TimedOut` next to it:
///
/// ```
/// # mod thiserror_free {
/// use retry_runtime::{CircuitOpen, TimedOut};
///
/// #[derive(Debug)]
/// pub enum FetchError {
///     Http(std::io::Error), // `reqwest::Error` in a real client
///     Open(CircuitOpen),
///     TimedOut(TimedOut),
/// }
///
/// impl From<CircuitOpen> for FetchError {
///     fn from(open: CircuitOpen) -> Self { FetchError::Open(open) }
/// }
///
/// impl From<TimedOut> for FetchError {
///     fn from(timed_out: TimedOut) -> Self { FetchError::TimedOut(timed_out) }
/// }
/// # }
/// ```
///
/// (with `thiserror`, `#[from] CircuitOpen` on a variant writes the `From`).
///
/// `#[retry]` works under `#[async_trait]` (on impls and on default methods of
/// traits), and above or below `#[tracing::instrument]`, `#[tokio::test]`,
/// `#[test]`, `#[tokio::main]` and axum's `#[debug_handler]`.
///
/// Durations are a number and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`),
/// largest first: `"200ms"`, `"1.5s"`, `"1m30s"`. Every key is checked while
/// compiling; a mistake is one error on the token at fault.
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use retry_macros::retry;
