//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::driver::{
    classifier, every_error, no_hint, no_value, with_timeout, Attempts, Classifier, Outcome,
};
pub use core::ops::ControlFlow;
pub use core::option::Option::{None, Some};
pub use tokio::time::sleep;
