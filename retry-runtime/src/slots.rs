//! What a call may name besides its policy, as the attempt loop holds it:
//! a circuit breaker ([`BreakerSlot`]) and a retry budget
//! ([`BudgetSlot`]). A call that names neither holds [`NoBreaker`] and
//! [`NoBudget`], which take no room and compile to nothing.

use crate::breaker::Guarded;
use crate::{CircuitBreaker, RetryBudget};

/// The circuit breaker a call asks before each attempt and tells each
/// outcome.
#[doc(hidden)]
pub trait BreakerSlot {
    /// Whether the next attempt may be made: a permit is acquired for it.
    fn acquire(&mut self, blocking: bool) -> bool;
    /// Records the attempt's outcome (`success`: not a failure the rules
    /// retry); `false` when the breaker refused the attempt, which then
    /// never ran.
    fn record(&mut self, success: bool) -> bool;
    /// The breaker, if there is one.
    fn breaker(&self) -> Option<&CircuitBreaker>;
}

/// The breaker of a call that names none: every attempt is made.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBreaker;

impl BreakerSlot for NoBreaker {
    fn acquire(&mut self, _: bool) -> bool {
        true
    }

    fn record(&mut self, _: bool) -> bool {
        true
    }

    fn breaker(&self) -> Option<&CircuitBreaker> {
        None
    }
}

impl BreakerSlot for Guarded<'_> {
    fn acquire(&mut self, blocking: bool) -> bool {
        Guarded::admit(self, blocking)
    }

    fn record(&mut self, success: bool) -> bool {
        Guarded::record(self, success)
    }

    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(Guarded::breaker(self))
    }
}

/// A breaker chosen at run time, as the closure API's is.
impl<S: BreakerSlot> BreakerSlot for Option<S> {
    fn acquire(&mut self, blocking: bool) -> bool {
        self.as_mut().is_none_or(|slot| slot.acquire(blocking))
    }

    fn record(&mut self, success: bool) -> bool {
        self.as_mut().is_none_or(|slot| slot.record(success))
    }

    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.as_ref().and_then(BreakerSlot::breaker)
    }
}

/// The retry budget a call takes from: `Option<&RetryBudget>`, or
/// [`NoBudget`].
#[doc(hidden)]
pub trait BudgetSlot: Copy {
    /// The budget, if there is one.
    fn budget(&self) -> Option<&RetryBudget>;
}

/// The budget of a call that names none.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBudget;

impl BudgetSlot for NoBudget {
    fn budget(&self) -> Option<&RetryBudget> {
        None
    }
}

impl BudgetSlot for Option<&RetryBudget> {
    fn budget(&self) -> Option<&RetryBudget> {
        *self
    }
}
