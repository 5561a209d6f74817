//! Classifiers for common error and response types, ready for `on`, `on_ok`
//! and `retry_after`. Each sits behind a cargo feature, so nobody pays for
//! what they do not use.
//!
//! | feature | module | classifies |
//! |---|---|---|
//! | `classify-io` | `classify::io` | `std::io::Error` by kind |
//! | `http` | `classify::http` | status codes, `Retry-After` headers, `http::Response` |
//! | `reqwest` | `classify::reqwest` | `reqwest::Error` and `reqwest::Response` |
//! | `tonic` | `classify::grpc` | `tonic::Status` by code, `grpc-retry-pushback-ms` (gRFC A6) |
//! | always | [`chain`] | the first known error in a `source()` chain (anyhow, eyre, `Box<dyn Error>`) |
//!
//! They retry what can succeed on a repeat (timeouts, refused and reset
//! connections, 408, 429 and 5xx except 501) and nothing else. Whether an
//! operation is safe to repeat is for you to decide: retry a request the
//! server may already have acted on only if it is idempotent.

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "io")]
#[cfg_attr(docsrs, doc(cfg(feature = "io")))]
pub mod io;
// The error-chain classifier reads I/O errors with or without the feature.
pub mod chain;
#[cfg(any(feature = "grpc", feature = "tower", feature = "reqwest-middleware"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "grpc", feature = "tower", feature = "reqwest-middleware")))
)]
pub mod grpc;
#[cfg(not(feature = "io"))]
#[allow(dead_code)]
mod io;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod reqwest;
// Below `chain` and `reqwest`, which share them.
#[cfg(feature = "hyper")]
mod hyper;
mod source;
