//! Errors that travel as chains (`anyhow::Error`, `eyre::Report`,
//! `Box<dyn Error>`, `Box<dyn Error + Send + Sync>`): walk `source()` to the first error of a known type and
//! apply its classifier.
//!
//! | found in the chain | classifier | feature |
//! |---|---|---|
//! | `std::io::Error` | `classify::io::is_transient` | always |
//! | `reqwest::Error` | `classify::reqwest::is_transient` | `reqwest` |
//! | `hyper::Error` | timeouts and a connection closed before the response | `hyper` (with `reqwest`) |
//! | `tonic::Status` | `classify::grpc::is_retryable`, with its pushback | `grpc` |
//! | [`TimedOut`](crate::TimedOut) (an attempt cut off by `timeout`) | the `io` classifier, as an `io::Error` of kind `TimedOut` | always |
//! | `tower::timeout::error::Elapsed` | the same | `tower` |
//!
//! The outermost known error decides: a `reqwest::Error` that wraps an
//! `io::Error` is judged as a `reqwest::Error`. A chain with no known error
//! is not retried.
//!
//! ```
//! use retry_runtime::{classify::chain, retry};
//!
//! #[retry(max = 3, on = chain::is_transient, retry_after = chain::retry_after)]
//! async fn load(attempts: &mut u32) -> anyhow::Result<String> {
//!     *attempts += 1;
//!     if *attempts == 1 {
//!         let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
//!         return Err(anyhow::Error::new(reset).context("loading the profile"));
//!     }
//!     Ok("profile".to_owned())
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut attempts = 0;
//! assert_eq!(load(&mut attempts).await.unwrap(), "profile");
//! assert_eq!(attempts, 2);
//! # }
//! ```
//!
//! A [`Chain`] swaps any of the classifiers: `Chain::new().io(my_rule)`.
//! For a repeatable request (an idempotent method or one with an
//! idempotency key), [`Chain::repeatable`] also retries a connection closed
//! before the response.

use core::ops::Deref;
use core::time::Duration;
use std::error::Error;

#[cfg_attr(not(feature = "grpc"), allow(unused_imports))]
use super::source::find;
use super::source::{sources, DynError};

/// A classifier per known error type, applied to the first known error of a
/// chain.
#[derive(Clone, Copy, Debug)]
pub struct Chain {
    io: fn(&std::io::Error) -> bool,
    #[cfg(feature = "reqwest")]
    reqwest: fn(&::reqwest::Error) -> bool,
    #[cfg(feature = "hyper")]
    hyper: fn(&::hyper::Error) -> bool,
    #[cfg(feature = "grpc")]
    grpc: fn(&::tonic::Status) -> bool,
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

impl Chain {
    /// The default classifiers, for a request that may not be repeated once
    /// sent: a connection closed before the response is not retried.
    #[must_use]
    pub const fn new() -> Self {
        Chain {
            io: crate::classify::io::is_transient,
            #[cfg(feature = "reqwest")]
            reqwest: crate::classify::reqwest::is_transient,
            #[cfg(feature = "hyper")]
            hyper: super::hyper::is_transient,
            #[cfg(feature = "grpc")]
            grpc: crate::classify::grpc::is_retryable,
        }
    }

    /// The default classifiers, for a repeatable request (an idempotent
    /// method, or one with an idempotency key): a connection closed before
    /// the response is retried too.
    #[must_use]
    pub const fn repeatable() -> Self {
        Chain {
            #[cfg(feature = "reqwest")]
            reqwest: crate::classify::reqwest::is_transient_repeatable,
            #[cfg(feature = "hyper")]
            hyper: super::hyper::is_transient_repeatable,
            ..Chain::new()
        }
    }

    /// Sets the classifier of `std::io::Error`s.
    #[must_use]
    pub const fn io(mut self, on: fn(&std::io::Error) -> bool) -> Self {
        self.io = on;
        self
    }

    /// Sets the classifier of `reqwest::Error`s.
    #[cfg(feature = "reqwest")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
    #[must_use]
    pub const fn reqwest(mut self, on: fn(&::reqwest::Error) -> bool) -> Self {
        self.reqwest = on;
        self
    }

    /// Sets the classifier of `hyper::Error`s.
    #[cfg(feature = "hyper")]
    #[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
    #[must_use]
    pub const fn hyper(mut self, on: fn(&::hyper::Error) -> bool) -> Self {
        self.hyper = on;
        self
    }

    /// Sets the classifier of `tonic::Status`es.
    #[cfg(feature = "grpc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
    #[must_use]
    pub const fn grpc(mut self, on: fn(&::tonic::Status) -> bool) -> Self {
        self.grpc = on;
        self
    }

    /// Applies the classifier of the first known error in the chain; false
    /// when there is none.
    #[must_use]
    pub fn is_transient(&self, error: &(dyn Error + 'static)) -> bool {
        sources(error)
            .find_map(|error| self.judge(error))
            .unwrap_or(false)
    }

    fn judge(&self, error: &(dyn Error + 'static)) -> Option<bool> {
        #[cfg(feature = "reqwest")]
        if let Some(error) = error.downcast_ref::<::reqwest::Error>() {
            return Some((self.reqwest)(error));
        }
        #[cfg(feature = "hyper")]
        if let Some(error) = error.downcast_ref::<::hyper::Error>() {
            return Some((self.hyper)(error));
        }
        #[cfg(feature = "grpc")]
        if let Some(status) = error.downcast_ref::<::tonic::Status>() {
            return Some((self.grpc)(status));
        }
        // An attempt cut off by `timeout` fails with `E::from(TimedOut)`
        // (by `tower::timeout`, with `Elapsed`): judged as the `io::Error`
        // that `TimedOut` converts into, so that an `anyhow` or boxed error
        // retries it as an `io::Result` would.
        if is_cut_off(error) {
            return Some((self.io)(&std::io::ErrorKind::TimedOut.into()));
        }
        error
            .downcast_ref::<std::io::Error>()
            .map(|error| (self.io)(error))
    }
}

/// Whether `error` is an attempt cut off by a timeout of this crate's
/// (`TimedOut`) or tower's (`Elapsed`).
pub(crate) fn is_cut_off(error: &(dyn Error + 'static)) -> bool {
    #[cfg(feature = "tower")]
    if error.is::<::tower::timeout::error::Elapsed>() {
        return true;
    }
    error.is::<crate::TimedOut>()
}

/// [`Chain::new`]'s verdict on an `anyhow::Error`, `eyre::Report`,
/// `Box<dyn Error>` or `Box<dyn Error + Send + Sync>` (tower's `BoxError`).
/// For `on`.
#[must_use]
pub fn is_transient<E>(error: &E) -> bool
where
    E: Deref + ?Sized,
    E::Target: DynError,
{
    Chain::new().is_transient(error.deref().as_dyn_error())
}

/// [`Chain::repeatable`]'s verdict, for a request that is safe to repeat.
/// For `on`.
#[must_use]
pub fn is_transient_repeatable<E>(error: &E) -> bool
where
    E: Deref + ?Sized,
    E::Target: DynError,
{
    Chain::repeatable().is_transient(error.deref().as_dyn_error())
}

/// The wait a server asked for, from the chain: a `tonic::Status`'s pushback
/// (with the `grpc` feature). For `retry_after`.
#[must_use]
#[cfg_attr(not(feature = "grpc"), allow(unused_variables))]
pub fn retry_after<E>(error: &E) -> Option<Duration>
where
    E: Deref + ?Sized,
    E::Target: DynError,
{
    #[cfg(feature = "grpc")]
    if let Some(status) = find::<::tonic::Status>(error.deref().as_dyn_error()) {
        return crate::classify::grpc::pushback(status);
    }
    None
}
