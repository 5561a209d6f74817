//! What `#[retry]` expansions call. Not public API: it may change in any
//! release.

pub use crate::attempt::{sleep_blocking, Attempts};
pub use crate::rules::{classifier, every_error, no_hint, no_hook, no_value, Classifier, Outcome};
pub use crate::sleep::sleep;
pub use crate::timeout::{limited, or_timed_out};
pub use core::ops::ControlFlow;
pub use core::option::Option::{None, Some};

use crate::{Policy, RetryBudget};

/// `budget = ...` as the loop takes it; a function argument, so that `&LAZY`
/// and other references that deref to a `RetryBudget` coerce.
#[inline]
#[must_use]
pub fn budget(budget: &RetryBudget) -> Option<&RetryBudget> {
    Some(budget)
}

/// `policy = ...`, copied, so that the loop does not keep borrowing what
/// the expression borrows (`&self.policy` in a `&mut self` method).
#[inline]
#[must_use]
pub fn policy(policy: &Policy) -> Policy {
    *policy
}
