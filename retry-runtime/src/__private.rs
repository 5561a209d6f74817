//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::driver::{classifier, Attempts, Classifier, Outcome};
pub use core::ops::ControlFlow;
pub use tokio::time::sleep;

/// The classifier when the attribute has no `on`: every error is retried.
#[inline]
pub fn every_error<E>(_: &E) -> bool {
    true
}
