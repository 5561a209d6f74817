//! Configuration shared by every call that names it, held either as a
//! `&'static` (a `static`) or behind an [`Arc`] (built at run time, per
//! client, or reloaded), so that nothing needs to be leaked.

use core::fmt;
use core::ops::Deref;
use std::sync::Arc;

/// A policy, budget, breaker or registry shared by the calls of a layer or
/// middleware: from a `&'static` or an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use retry_runtime::{Policy, RetryBudget, Shared};
///
/// static BUDGET: RetryBudget = RetryBudget::new(100, 0.1);
/// let from_static: Shared<RetryBudget> = (&BUDGET).into();
/// let from_arc: Shared<Policy> = Arc::new(Policy::new().with_max_attempts(5)).into();
/// assert_eq!(from_arc.max_attempts(), 5);
/// assert_eq!(from_static.max_tokens(), 100.0);
/// ```
pub struct Shared<T: 'static>(Held<T>);

enum Held<T: 'static> {
    Static(&'static T),
    Arc(Arc<T>),
}

impl<T> Shared<T> {
    /// Shares a `&'static` value (a `static`); usable in `const` items.
    #[must_use]
    pub const fn from_static(value: &'static T) -> Self {
        Shared(Held::Static(value))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.0 {
            Held::Static(value) => value,
            Held::Arc(value) => value,
        }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(match &self.0 {
            Held::Static(value) => Held::Static(value),
            Held::Arc(value) => Held::Arc(Arc::clone(value)),
        })
    }
}

impl<T> From<&'static T> for Shared<T> {
    fn from(value: &'static T) -> Self {
        Shared::from_static(value)
    }
}

impl<T> From<Arc<T>> for Shared<T> {
    fn from(value: Arc<T>) -> Self {
        Shared(Held::Arc(value))
    }
}

impl<T> From<&Arc<T>> for Shared<T> {
    fn from(value: &Arc<T>) -> Self {
        Shared(Held::Arc(Arc::clone(value)))
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        T::fmt(self, f)
    }
}
