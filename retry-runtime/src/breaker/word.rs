//! The breaker's state as one `u64`: a [`Word`] read through named
//! accessors, in a [`StateCell`] changed by one compare-and-swap helper
//! (as tokio's task state is).

use crate::circuit::CircuitState;
use crate::ring::{AtomicU64, Ordering};

// The layout. Bits 62-63: the phase (an adaptive breaker rests in its own
// phase instead of closed, and shows as closed). Bit 61: set by an operator
// (`force_open`, `force_closed`), when the phase stays until `reset`.
// Bits 55-60: trips, the times the circuit opened since it last closed
// (saturating), which sets the next open period. Bits 47-54: the probe
// round, advanced each time the circuit half-opens, so that a late probe of
// an earlier round changes nothing. Bits 0-46: when open, the end of the
// open period in milliseconds since the breaker's epoch; when half-open,
// the probes out (bits 0-15) and the probe successes (bits 16-31).
const PHASE_SHIFT: u32 = 62;
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const ADAPTIVE: u64 = 3;
const FORCED: u64 = 1 << 61;
const TRIPS_SHIFT: u32 = 55;
const TRIPS_MAX: u64 = 0x3f;
const ROUND_SHIFT: u32 = 47;
const ROUND_MASK: u64 = 0xff;
/// The payload: a time in milliseconds, or the probe counts.
pub(super) const PAYLOAD_MASK: u64 = (1 << ROUND_SHIFT) - 1;
/// The most probes out, or probe successes, a word can count.
pub(super) const COUNT_MAX: u64 = 0xffff;
const SUCCESS_SHIFT: u32 = 16;

/// One value of the breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Word(u64);

impl Word {
    fn pack(phase: u64, trips: u64, round: u8, payload: u64) -> Word {
        Word(
            (phase << PHASE_SHIFT)
                | (trips.min(TRIPS_MAX) << TRIPS_SHIFT)
                | (u64::from(round) << ROUND_SHIFT)
                | (payload & PAYLOAD_MASK),
        )
    }

    /// Closed with an empty record of trips, in probe round `round`: or,
    /// for an `adaptive` breaker, its rest, where calls go through unless
    /// its throttle refuses them.
    pub(super) const fn closed(round: u8, adaptive: bool) -> Word {
        let phase = if adaptive { ADAPTIVE } else { CLOSED };
        Word((phase << PHASE_SHIFT) | ((round as u64) << ROUND_SHIFT))
    }

    /// Open until `until` (the breaker's milliseconds), after `trips`
    /// openings in a row.
    pub(super) fn open(trips: u64, round: u8, until: u64) -> Word {
        Word::pack(OPEN, trips, round, until.min(PAYLOAD_MASK))
    }

    /// Half-open in probe round `round`, with `out` probes out and
    /// `successes` probe successes.
    pub(super) fn half_open(trips: u64, round: u8, out: u64, successes: u64) -> Word {
        let payload = out.min(COUNT_MAX) | (successes.min(COUNT_MAX) << SUCCESS_SHIFT);
        Word::pack(HALF_OPEN, trips, round, payload)
    }

    /// The same half-open word, with `out` probes out and `successes` probe
    /// successes.
    pub(super) fn with_probes(self, out: u64, successes: u64) -> Word {
        Word::half_open(self.trips(), self.round(), out, successes)
    }

    /// The same word, held in its phase by an operator.
    pub(super) fn forced(self) -> Word {
        Word(self.0 | FORCED)
    }

    pub(super) fn state(self) -> CircuitState {
        match self.0 >> PHASE_SHIFT {
            CLOSED | ADAPTIVE => CircuitState::Closed,
            OPEN => CircuitState::Open,
            _ => CircuitState::HalfOpen,
        }
    }

    /// Closed, and not adaptive: calls go through without a question.
    pub(super) fn is_closed(self) -> bool {
        self.0 >> PHASE_SHIFT == CLOSED
    }

    /// An adaptive breaker at rest: its throttle decides.
    pub(super) fn is_adaptive(self) -> bool {
        self.0 >> PHASE_SHIFT == ADAPTIVE
    }

    /// Whether an operator holds the circuit in its phase.
    pub(super) fn is_forced(self) -> bool {
        self.0 & FORCED != 0
    }

    /// The times the circuit opened since it last closed.
    pub(super) fn trips(self) -> u64 {
        (self.0 >> TRIPS_SHIFT) & TRIPS_MAX
    }

    #[allow(clippy::cast_possible_truncation)] // Masked to 8 bits: exact.
    pub(super) fn round(self) -> u8 {
        ((self.0 >> ROUND_SHIFT) & ROUND_MASK) as u8
    }

    /// When open: the end of the open period.
    pub(super) fn open_until(self) -> u64 {
        self.0 & PAYLOAD_MASK
    }

    /// When half-open: the probes let through and not yet settled.
    pub(super) fn probes_out(self) -> u64 {
        self.0 & COUNT_MAX
    }

    /// When half-open: the probes of this round that succeeded.
    pub(super) fn probe_successes(self) -> u64 {
        (self.0 >> SUCCESS_SHIFT) & COUNT_MAX
    }
}

/// The atomic cell holding the breaker's [`Word`].
#[derive(Debug)]
pub(super) struct StateCell(AtomicU64);

impl StateCell {
    #[cfg(not(loom))]
    pub(super) const fn new(word: Word) -> Self {
        StateCell(AtomicU64::new(word.0))
    }

    #[cfg(loom)]
    pub(super) fn new(word: Word) -> Self {
        StateCell(AtomicU64::new(word.0))
    }

    // Inlined: asked before every attempt of a call with a breaker
    // (benches/instructions.sh: 8 instructions on its success path, 248
    // against 256 without).
    #[inline]
    pub(super) fn load(&self) -> Word {
        Word(self.0.load(Ordering::Acquire))
    }

    /// Replaces the word, whatever it was, and returns the one before.
    pub(super) fn swap(&self, word: Word) -> Word {
        Word(self.0.swap(word.0, Ordering::AcqRel))
    }

    /// Applies `step` to the current word until the swap takes: `Ok(next)`
    /// to store `next`, `Err(e)` to leave the word as it is and return `e`.
    /// On success, the word before and the word stored.
    pub(super) fn update<E>(
        &self,
        mut step: impl FnMut(Word) -> Result<Word, E>,
    ) -> Result<(Word, Word), E> {
        let mut current = self.load();
        loop {
            let next = step(current)?;
            match self.0.compare_exchange_weak(
                current.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok((current, next)),
                Err(actual) => current = Word(actual),
            }
        }
    }
}
