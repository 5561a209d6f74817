//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::driver::{
    classifier, every_error, limited, no_hint, no_hook, no_value, or_timed_out, sleep_blocking,
    Attempts, Classifier, Outcome,
};
pub use core::ops::ControlFlow;
pub use core::option::Option::{None, Some};
pub use tokio::time::sleep;
