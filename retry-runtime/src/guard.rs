//! The closure API's circuit breaker, as its loop holds it: [`Unguarded`]
//! without one, [`Guarded`] once [`Retry::breaker`](crate::Retry::breaker)
//! names one. A type of its own, so that a loop without a breaker keeps no
//! outcome through its waits, and an error type that is not `Send` leaves
//! its future `Send`, as under the attribute.

#[cfg(doc)]
use crate::Retry;
use crate::{CircuitBreaker, CircuitOpen};

/// What an attempt the breaker refuses fails with: `E::from`.
pub(crate) type Refusal<E> = fn(CircuitOpen) -> E;

/// The breaker of a [`Retry`] that names none: every attempt is made, and
/// the error of a failed attempt is dropped before the wait, so that an
/// error type that is not `Send` (`Box<dyn Error>`) does not make the
/// loop's future `!Send`, as under the attribute.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unguarded;

/// The breaker of a [`Retry`] made by [`breaker`](Retry::breaker) or
/// [`breaker_with`](Retry::breaker_with), with what a refused attempt fails
/// with. The loop keeps a retried outcome through the wait, to return it
/// should the breaker refuse the retry: its error must then be `Send` for
/// the future to be, as under the attribute's `breaker` key.
#[derive(Debug)]
pub struct Guarded<'p, E> {
    breaker: &'p CircuitBreaker,
    refused: Refusal<E>,
}

impl<'p, E> Guarded<'p, E> {
    pub(crate) fn new(breaker: &'p CircuitBreaker, refused: Refusal<E>) -> Self {
        Guarded { breaker, refused }
    }
}

/// What the loop needs of its breaker, [`Unguarded`] or [`Guarded`]: the
/// breaker, if any, and where a retried outcome is kept through the wait
/// (nowhere without a breaker).
///
/// Two traits, so that the one that names the kept outcome's type has no
/// lifetime: the compiler can then tell that the loop's future is `Send`
/// whatever the breaker's borrow.
#[doc(hidden)]
pub trait Guard<'p, E> {
    /// The breaker and what its refusal fails with, if there is one.
    fn parts(&self) -> Option<(&'p CircuitBreaker, Refusal<E>)>;
}

/// Where the loop keeps a retried outcome through the wait: see [`Guard`].
#[doc(hidden)]
pub trait Keep<T, E> {
    /// Where a retried outcome is kept through the wait.
    type Kept: Default;
    /// Keeps a retried outcome through the wait (or drops it at once).
    fn keep(kept: &mut Self::Kept, outcome: Result<T, E>);
    /// The outcome of an attempt the breaker refused: the kept one, or the
    /// refusal. `None` without a breaker, which never refuses.
    fn refused(&self, kept: &mut Self::Kept) -> Option<Result<T, E>>;
}

impl<'p, E> Guard<'p, E> for Unguarded {
    #[inline]
    fn parts(&self) -> Option<(&'p CircuitBreaker, Refusal<E>)> {
        None
    }
}

impl<T, E> Keep<T, E> for Unguarded {
    type Kept = ();

    #[inline]
    fn keep((): &mut (), _: Result<T, E>) {}

    #[inline]
    fn refused(&self, (): &mut ()) -> Option<Result<T, E>> {
        None
    }
}

impl<'p, E> Guard<'p, E> for Guarded<'p, E> {
    #[inline]
    fn parts(&self) -> Option<(&'p CircuitBreaker, Refusal<E>)> {
        Some((self.breaker, self.refused))
    }
}

impl<T, E> Keep<T, E> for Guarded<'_, E> {
    type Kept = Option<Result<T, E>>;

    #[inline]
    fn keep(kept: &mut Self::Kept, outcome: Result<T, E>) {
        *kept = Some(outcome);
    }

    #[inline]
    fn refused(&self, kept: &mut Self::Kept) -> Option<Result<T, E>> {
        kept.take()
            .or_else(|| Some(Err((self.refused)(CircuitOpen))))
    }
}
