//! Permits: what a call the breaker lets through holds until its outcome is
//! recorded: [`CircuitPermit`], for a call guarded by hand and the retry
//! loop's attempts alike, and [`Mark`], which marks the thread while an
//! attempt holding a permit is polled, so that a retried function it calls
//! with the same breaker runs under that permit instead of asking for
//! another. [`BreakerSlot`] is how the attempt loop holds a breaker: a
//! permit, or none (`crate::slots`).

use core::cell::Cell;

use super::CircuitBreaker;
use crate::clock::Clock;

/// How a call was let through.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    /// While closed: its outcome is counted in the window.
    Closed,
    /// A probe of this round, while half-open.
    Probe(u8),
    /// Let through by an adaptive breaker's throttle: it settles as one
    /// request, and an accept if it succeeded.
    Adaptive,
    /// Under the permit of an enclosing attempt, which records the outcome.
    Nested,
}

/// A permit from a [`CircuitBreaker`] to make one call. Record the outcome
/// with [`record`](CircuitPermit::record); a permit dropped without one
/// frees its place and counts as nothing (a cancelled call says nothing of
/// the dependency).
///
/// The retry loop holds the same permit, renewed for each attempt, for the
/// breaker a call names: an attempt that holds one marks its thread, so
/// that a call to the same breaker made inside it (a hand-guarded call, a
/// retried function) runs under it, and the outcome is recorded once.
#[derive(Debug)]
#[must_use = "record the call's outcome with `CircuitPermit::record`"]
pub struct CircuitPermit<'p> {
    breaker: &'p CircuitBreaker,
    /// `None` when the breaker refused the attempt running, or once its
    /// outcome is recorded.
    kind: Option<Kind>,
    clock: Clock,
    /// Another breaker refused a call made inside the attempt running: its
    /// failure is then not counted against this one.
    refused_inside: bool,
    /// The last call made under this permit inside the attempt running (a
    /// retried function naming the same breaker) failed: the dependency
    /// failed, whatever the attempt made of it (a fallback, a cached
    /// answer), so the attempt's outcome is recorded as a failure.
    nested_failed: bool,
}

impl<'p> CircuitPermit<'p> {
    /// Whether this call is one of the half-open breaker's probes.
    #[must_use]
    pub fn is_probe(&self) -> bool {
        matches!(self.kind, Some(Kind::Probe(_)))
    }

    /// Whether this call runs under the permit of an enclosing retried
    /// attempt, which records the outcome: [`record`](Self::record) then
    /// records nothing.
    #[must_use]
    pub fn is_nested(&self) -> bool {
        matches!(self.kind, Some(Kind::Nested))
    }

    /// Records the call's outcome: `false` for a failure the caller would
    /// retry.
    pub fn record(mut self, success: bool) {
        BreakerSlot::record(&mut self, success);
    }

    /// The retry loop's permit of `breaker`, holding none until
    /// [`acquire`](BreakerSlot::acquire).
    pub(crate) fn new(breaker: &'p CircuitBreaker) -> Self {
        CircuitPermit {
            breaker,
            kind: None,
            clock: Clock::Async,
            refused_inside: false,
            nested_failed: false,
        }
    }

    /// Whether another breaker refused a call made inside the attempt.
    pub(crate) fn refused_inside(&self) -> bool {
        self.refused_inside
    }
}

/// The circuit breaker a call asks before each attempt and tells each
/// outcome.
#[doc(hidden)]
pub trait BreakerSlot {
    /// Whether the next attempt may be made: a permit is acquired for it.
    /// Always, unless the call asks a breaker.
    fn acquire(&mut self, _blocking: bool) -> bool {
        true
    }
    /// Records the attempt's outcome (`success`: not a failure the rules
    /// retry); `false` when the breaker refused the attempt, which then
    /// never ran.
    fn record(&mut self, _success: bool) -> bool {
        true
    }
    /// The breaker, if there is one.
    fn breaker(&self) -> Option<&CircuitBreaker> {
        None
    }
    /// What the attempt running marks its thread with while it holds a
    /// permit, so that a retried function it calls with the same breaker
    /// runs under that permit: nothing without a breaker.
    type Mark<'a>: MarkThread
    where
        Self: 'a;
    /// The mark of the attempt running.
    fn mark(&mut self) -> Self::Mark<'_>;
}

/// The retry loop's permit, renewed for each attempt.
impl<'p> BreakerSlot for CircuitPermit<'p> {
    /// Asks for a permit for the next attempt: whether it may be made.
    // Inlined: before every attempt of a call with a breaker, where a closed
    // circuit is a load and a test (benches/instructions.sh).
    #[inline]
    fn acquire(&mut self, blocking: bool) -> bool {
        if let Some(unrecorded) = self.kind.take() {
            self.breaker.settle(unrecorded, None, self.clock);
        }
        self.clock = Clock::of(blocking);
        self.refused_inside = false;
        self.nested_failed = false;
        self.kind = self.breaker.enter(self.clock).ok();
        self.kind.is_some()
    }

    /// Records the attempt's outcome; `false` when the breaker refused the
    /// attempt, which then never ran. A failure caused by another breaker's
    /// refusal inside the attempt is not the dependency's: it frees the
    /// permit and counts as nothing. An attempt whose last call under its
    /// permit failed is a failure, even if the body recovered from it.
    // Inlined: after every attempt of a call with a breaker
    // (benches/instructions.sh).
    #[inline]
    fn record(&mut self, success: bool) -> bool {
        let Some(kind) = self.kind.take() else {
            return false;
        };
        let outcome = if self.nested_failed {
            Some(false)
        } else if success || !self.refused_inside {
            Some(success)
        } else {
            None
        };
        self.breaker.settle(kind, outcome, self.clock);
        true
    }

    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(self.breaker)
    }

    type Mark<'a>
        = Option<Mark<'a, 'p>>
    where
        Self: 'a;

    /// The attempt's mark for the thread while it runs, if it holds a
    /// permit; see [`Mark::hold`].
    fn mark(&mut self) -> Option<Mark<'_, 'p>> {
        self.kind.is_some().then_some(Mark { permit: self })
    }
}

impl Drop for CircuitPermit<'_> {
    // Inlined: every call with a breaker drops one, nearly always recorded
    // already (benches/instructions.sh).
    #[inline]
    fn drop(&mut self) {
        if let Some(kind) = self.kind.take() {
            self.breaker.settle(kind, None, self.clock);
        }
    }
}

/// How many breakers a thread's attempts can hold at once, outer to inner;
/// a deeper one is not seen (its inner calls ask for permits of their own).
const DEPTH: usize = 4;

/// The breakers whose permits the attempts being polled on this thread hold,
/// by address (0 for a hedged attempt that holds none but watches for
/// refusals), and whether a breaker refused a call made inside them. Each
/// attempt that holds a permit writes one slot and the count on its way in
/// and sets the count back on its way out: the outer attempts' slots stay
/// where they are.
struct Held {
    /// `breakers[..len]`, outer to inner, up to [`DEPTH`]: each breaker's
    /// address, with in its low bits ([`LAST_CALL`]) how the last call made
    /// under the slot's permit while it is polled ended ([`SUCCEEDED`] or
    /// [`FAILED`]; neither while no call has ended).
    breakers: [Cell<usize>; DEPTH],
    /// Attempts holding a permit entered and not yet left, those beyond
    /// [`DEPTH`] included.
    len: Cell<usize>,
    /// A breaker refused a call inside the innermost attempt.
    refused: Cell<bool>,
}

/// The low bits of a slot: a breaker's address has them clear (it holds
/// 8-byte atomics), so the slot's last call is kept beside it, and the way
/// in, which writes the address, clears it at no cost.
const LAST_CALL: usize = 0b11;
/// The last call made under a slot's permit succeeded.
const SUCCEEDED: usize = 0b01;
/// The last call made under a slot's permit failed.
const FAILED: usize = 0b10;

const _: () = assert!(core::mem::align_of::<CircuitBreaker>() > LAST_CALL);

thread_local! {
    static HELD: Held = const {
        Held {
            breakers: [const { Cell::new(0) }; DEPTH],
            len: Cell::new(0),
            refused: Cell::new(false),
        }
    };
}

fn address(breaker: &CircuitBreaker) -> usize {
    core::ptr::from_ref(breaker).addr()
}

/// Whether an attempt being polled on this thread holds a permit of
/// `breaker`.
// Inlined, the test of the count: outside any attempt holding a permit, the
// usual case, it is one load (benches/instructions.sh).
#[inline]
pub(super) fn held_here(breaker: &CircuitBreaker) -> bool {
    HELD.with(|held| held.len.get() != 0 && innermost_slot(held, breaker).is_some())
}

/// The slot of the innermost attempt being polled that holds a permit of
/// `breaker`, if one does (among the [`DEPTH`] kept).
fn innermost_slot<'h>(held: &'h Held, breaker: &CircuitBreaker) -> Option<&'h Cell<usize>> {
    held.breakers
        .iter()
        .take(held.len.get())
        .rev()
        .find(|slot| slot.get() & !LAST_CALL == address(breaker))
}

/// A call run under the permit of an attempt being polled on this thread
/// (a retried function naming the breaker that attempt holds) ended: the
/// innermost such attempt hears how, and records a failure for it even if
/// its body goes on to recover (docs/breaker.md, "One breaker on two
/// layers").
pub(super) fn nested_outcome(breaker: &CircuitBreaker, success: bool) {
    HELD.with(|held| {
        if let Some(slot) = innermost_slot(held, breaker) {
            let last = if success { SUCCEEDED } else { FAILED };
            slot.set(address(breaker) | last);
        }
    });
}

/// A breaker refused a call: marks the attempts being polled on this
/// thread, if any.
pub(super) fn refused_here() {
    HELD.with(|held| {
        if held.len.get() != 0 {
            held.refused.set(true);
        }
    });
}

/// What an attempt holding a permit marks the thread with while it runs:
/// its breaker, and where to hand back whether a breaker refused a call
/// inside it, both read from the permit (one address, kept in the
/// attempt's future across its awaits).
#[doc(hidden)]
#[derive(Debug)]
pub struct Mark<'a, 'p> {
    permit: &'a mut CircuitPermit<'p>,
}

impl Mark<'_, '_> {
    /// Marks the thread until the [`Hold`] is dropped: a call to the same
    /// breaker made meanwhile (by a retried function the attempt calls)
    /// runs under the attempt's permit.
    // Inlined: around every poll of an attempt holding a permit
    // (benches/instructions.sh).
    #[inline]
    pub(crate) fn hold(&mut self) -> Hold<'_> {
        let permit = &mut *self.permit;
        let last = Some(&mut permit.nested_failed);
        hold(address(permit.breaker), &mut permit.refused_inside, last)
    }
}

/// Marks the thread with the breaker at `breaker` (its [`address`], or 0
/// for none) until the [`Hold`] is dropped, which then hands `refused`
/// whether a breaker refused a call meanwhile, and `last` whether
/// the last call made under the permit failed, if one was made.
#[inline]
fn hold<'a>(breaker: usize, refused: &'a mut bool, last: Option<&'a mut bool>) -> Hold<'a> {
    let (len, outer_refused) = HELD.with(|held| {
        let len = held.len.get();
        if let Some(slot) = held.breakers.get(len) {
            slot.set(breaker);
        }
        held.len.set(len.saturating_add(1));
        (len, held.refused.replace(false))
    });
    Hold {
        len,
        outer_refused,
        refused,
        nested_failed: last,
    }
}

/// What a hedged attempt marks its thread with while it is polled: the
/// [`Mark`] of its [`CircuitPermit`], as the retry loop's attempt, or,
/// without a breaker, a watch to which a refusal by a breaker inside it
/// (under the tower layer, a `CircuitBreakerLayer` refusing the copy
/// itself) is handed back.
#[derive(Debug)]
pub(crate) enum HedgedMark<'a, 'p> {
    Permit(Mark<'a, 'p>),
    Watch(&'a mut bool),
}

impl<'a, 'p> HedgedMark<'a, 'p> {
    /// The mark of an attempt running under `permit`, if it holds one, or
    /// one that hands a refusal inside it to `refused`.
    pub(crate) fn of(permit: Option<&'a mut CircuitPermit<'p>>, refused: &'a mut bool) -> Self {
        permit
            .and_then(|permit| permit.mark())
            .map_or(HedgedMark::Watch(refused), HedgedMark::Permit)
    }
}

impl MarkThread for HedgedMark<'_, '_> {
    #[inline]
    fn hold(&mut self) -> impl Sized {
        match self {
            HedgedMark::Permit(mark) => mark.hold(),
            HedgedMark::Watch(refused) => hold(0, refused, None),
        }
    }

    #[inline]
    fn moved_on(&mut self) {
        match self {
            HedgedMark::Permit(mark) => mark.permit.refused_inside = false,
            HedgedMark::Watch(refused) => **refused = false,
        }
    }
}

/// The thread's marks while an attempt runs. On drop, sets back the marks
/// before and hands the attempt whether a breaker refused a call inside it.
#[doc(hidden)]
#[derive(Debug)]
#[must_use]
pub struct Hold<'a> {
    len: usize,
    outer_refused: bool,
    refused: &'a mut bool,
    /// Where to hand how the last call made under the permit ended: the
    /// permit's, which records it ([`CircuitPermit::record`]); none for a
    /// hedged attempt without a permit ([`HedgedMark`]).
    nested_failed: Option<&'a mut bool>,
}

impl Drop for Hold<'_> {
    #[inline]
    fn drop(&mut self) {
        HELD.with(|held| {
            let refused = held.refused.get();
            *self.refused |= refused;
            // A refusal deep inside is one inside the enclosing attempts too.
            held.refused.set(self.outer_refused | refused);
            let last = held
                .breakers
                .get(self.len)
                .map_or(0, |slot| slot.get() & LAST_CALL);
            if let Some(nested_failed) = self.nested_failed.as_deref_mut().filter(|_| last != 0) {
                *nested_failed = last == FAILED;
            }
            held.len.set(self.len);
        });
    }
}

/// What an attempt marks its thread with while it is polled: `()` for a
/// call without a breaker, which compiles to nothing.
#[doc(hidden)]
pub trait MarkThread {
    /// Marks the thread until the returned guard is dropped.
    fn hold(&mut self) -> impl Sized;

    /// The attempt waits on work of its own, no retried call it made still
    /// running: its body moved on past any refusal so far (it handled it: a
    /// fallback, `unwrap_or_default`), so a failure that follows is not one
    /// caused by that refusal. The same rule clears an inner give-up
    /// (`context::Scoped`).
    fn moved_on(&mut self) {}
}

impl MarkThread for () {
    #[inline]
    fn hold(&mut self) -> impl Sized {}
}

impl MarkThread for Option<Mark<'_, '_>> {
    #[inline]
    fn hold(&mut self) -> impl Sized {
        self.as_mut().map(Mark::hold)
    }

    #[inline]
    fn moved_on(&mut self) {
        if let Some(mark) = self {
            mark.permit.refused_inside = false;
        }
    }
}

#[cfg(test)]
mod tests;
