//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::driver::{Attempts, Outcome};
pub use core::ops::ControlFlow;
pub use tokio::time::sleep;

/// Returns `on` unchanged, with its argument typed as the error of `R`, so a
/// closure such as `|e| e.is_timeout()` needs no annotation.
#[inline]
pub fn classifier<R, On>(on: On) -> On
where
    R: Outcome,
    On: Fn(&R::Error) -> bool,
{
    on
}

/// The classifier when the attribute has no `on`: every error is retried.
#[inline]
pub fn every_error<E>(_: &E) -> bool {
    true
}
