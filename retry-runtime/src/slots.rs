//! What a call may name besides its policy, as the attempt loop holds it:
//! a circuit breaker ([`BreakerSlot`], defined beside the breaker's permit,
//! its main implementation) and a retry budget ([`BudgetSlot`]). A call
//! that names neither holds [`NoBreaker`] and [`NoBudget`], which take no
//! room and compile to nothing.

pub use crate::breaker::BreakerSlot;
use crate::breaker::{CircuitPermit, Mark};
use crate::{CircuitBreaker, RetryBudget};

/// The breaker of a call that names none: every attempt is made.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBreaker;

impl BreakerSlot for NoBreaker {
    type Mark<'a> = ();

    fn mark(&mut self) {}
}

/// The breaker of a call whose attempts a breaker layer below asks and
/// tells (the tower `RetryPolicy` over a `CircuitBreakerLayer`): the call
/// asks for no permit and records nothing, but a failure that finds the
/// circuit open stops it (reason `open`) rather than wait for a retry the
/// breaker would refuse.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Watching<'p>(pub(crate) Option<&'p CircuitBreaker>);

impl BreakerSlot for Watching<'_> {
    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.0
    }

    type Mark<'a>
        = ()
    where
        Self: 'a;

    fn mark(&mut self) {}
}

// `CircuitPermit`'s own impl is beside its fields, in `breaker/permit.rs`.

/// A breaker chosen at run time, as the closure API's is.
impl<'p> BreakerSlot for Option<CircuitPermit<'p>> {
    // Inlined: without a breaker, one test before every attempt
    // (benches/instructions.sh).
    #[inline]
    fn acquire(&mut self, blocking: bool) -> bool {
        self.as_mut().is_none_or(|slot| slot.acquire(blocking))
    }

    #[inline]
    fn record(&mut self, success: bool) -> bool {
        self.as_mut().is_none_or(|slot| slot.record(success))
    }

    #[inline]
    fn breaker(&self) -> Option<&CircuitBreaker> {
        self.as_ref().and_then(BreakerSlot::breaker)
    }

    type Mark<'a>
        = Option<Mark<'a, 'p>>
    where
        Self: 'a;

    #[inline]
    fn mark(&mut self) -> Option<Mark<'_, 'p>> {
        self.as_mut().and_then(|permit| permit.mark())
    }
}

/// The retry budget a call takes from: `Option<&RetryBudget>`, or
/// [`NoBudget`].
#[doc(hidden)]
pub trait BudgetSlot: Copy {
    /// The budget, if there is one: none unless the call names one.
    fn budget(&self) -> Option<&RetryBudget> {
        None
    }
}

/// The budget of a call that names none.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBudget;

impl BudgetSlot for NoBudget {}

impl BudgetSlot for Option<&RetryBudget> {
    fn budget(&self) -> Option<&RetryBudget> {
        *self
    }
}
