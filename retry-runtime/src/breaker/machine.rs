//! The state machine: who may make a call, and what an outcome does to the
//! state. Each step changes the [`Word`] with one compare-and-swap and hands
//! the change to [`CircuitBreaker::announce`]; nothing here reports
//! anything itself.

use super::permit::{self, Kind};
use super::word::Word;
use super::{CircuitBreaker, CircuitOpen};
use crate::circuit::CircuitState;
use crate::clock::Clock;

impl CircuitBreaker {
    /// Lets a call through, as the kind of permit it gets, or refuses it.
    #[inline]
    pub(super) fn enter(&self, clock: Clock) -> Result<Kind, CircuitOpen> {
        if permit::held_here(self) {
            return Ok(Kind::Nested);
        }
        let word = self.state.load();
        // The closed circuit's path reads nothing but the word (and no
        // clock: see `window.rs`).
        if word.is_closed() {
            return Ok(Kind::Closed);
        }
        self.enter_open(clock)
    }

    /// [`enter`](Self::enter) when the word said open, half-open or
    /// adaptive: out of line, so that the closed circuit's path stays a few
    /// instructions.
    #[inline(never)]
    fn enter_open(&self, clock: Clock) -> Result<Kind, CircuitOpen> {
        let mut now = None;
        let step = self.state.update(|word| match word.state() {
            CircuitState::Closed if word.is_adaptive() => Err(self.throttle(clock)),
            CircuitState::Closed => Err(Ok(Kind::Closed)),
            CircuitState::Open => {
                let now = *now.get_or_insert_with(|| self.now_ms(clock));
                if word.is_forced() || now < word.open_until() {
                    return Err(Err(CircuitOpen));
                }
                let round = word.round().wrapping_add(1);
                Ok(Word::half_open(word.trips(), round, 1, 0))
            }
            _ => {
                if word.probes_out() >= self.probes {
                    return Err(Err(CircuitOpen));
                }
                Ok(word.with_probes(word.probes_out() + 1, word.probe_successes()))
            }
        });
        let answer = match step {
            Ok((before, after)) => {
                self.announce(before, after, now);
                Ok(Kind::Probe(after.round()))
            }
            // The word stays: the answer is known without a change.
            Err(answer) => answer,
        };
        answer.inspect_err(|CircuitOpen| permit::refused_here())
    }

    /// Settles a call let through as `kind`: its outcome (`Some(success)`),
    /// or `None` for a call given up (its permit dropped) or one whose
    /// failure is not the dependency's.
    #[inline]
    pub(super) fn settle(&self, kind: Kind, outcome: Option<bool>, clock: Clock) {
        match (kind, outcome) {
            (Kind::Closed, Some(success)) => self.settle_closed(success, clock),
            (Kind::Probe(_) | Kind::Adaptive, outcome) => self.settle_probe(kind, outcome, clock),
            // Recorded by the enclosing attempt whose permit it ran under.
            (Kind::Nested, Some(success)) => permit::nested_outcome(self, success),
            (Kind::Closed | Kind::Nested, _) => {}
        }
    }

    /// Counts a closed-circuit call's outcome in the window, and opens the
    /// circuit when the window says so. Outcomes of calls let through while
    /// the circuit was closed but finishing after it opened are dropped, as
    /// are those of a circuit an operator holds closed.
    ///
    /// A success reads no clock unless the window must roll over (see
    /// `window.rs`); a failure always does: its bucket, the window it is
    /// judged over and the open period all start from its own time.
    #[inline]
    fn settle_closed(&self, success: bool, clock: Clock) {
        let current = self.state.load();
        if !current.is_closed() || current.is_forced() {
            return;
        }
        // A success counts in the bucket of the latest clock reading, without
        // reading the clock, unless it must be read (`Ring::count_latest`).
        if success && self.ring.count_latest() {
            return self.end_streak();
        }
        self.settle_closed_now(current, success, clock);
    }

    /// The rest of [`settle_closed`](Self::settle_closed), on the clock:
    /// the outcome counted at the time read now, and the circuit opened if
    /// the window says so, from `current`, the word it was counted under.
    #[inline(never)]
    fn settle_closed_now(&self, current: Word, success: bool, clock: Clock) {
        let now = self.now_ms(clock);
        if !self.record(now, success) {
            return;
        }
        let opened = Word::open(1, current.round(), now.saturating_add(self.open_period(1)));
        // Only from the word the outcome was counted under: a circuit that
        // opened, or was reset, meanwhile is left as it is.
        let step = self
            .state
            .update(|word| if word == current { Ok(opened) } else { Err(()) });
        if let Ok((before, after)) = step {
            self.announce(before, after, Some(now));
        }
    }

    /// A probe's outcome, or `None` for one given up: frees its place, and
    /// closes or reopens the circuit. A probe of an earlier round changes
    /// nothing. An adaptive breaker's call counts as a request. Out of
    /// line, and one function for both, to keep the closed circuit's path
    /// small (benches/instructions.sh).
    #[inline(never)]
    fn settle_probe(&self, kind: Kind, outcome: Option<bool>, clock: Clock) {
        let Kind::Probe(round) = kind else {
            return self.count_request(self.now_ms(clock), outcome == Some(true));
        };
        let mut now = None;
        let step = self.state.update(|word| {
            if word.state() != CircuitState::HalfOpen || word.round() != round {
                return Err(());
            }
            let (out, successes) = (word.probes_out().saturating_sub(1), word.probe_successes());
            Ok(match outcome {
                None => word.with_probes(out, successes),
                Some(true) if successes + 1 >= self.close_after => {
                    Word::closed(round, self.is_adaptive())
                }
                Some(true) => word.with_probes(out, successes + 1),
                Some(false) => {
                    let now = *now.get_or_insert_with(|| self.now_ms(clock));
                    let trips = word.trips() + 1;
                    Word::open(trips, round, now.saturating_add(self.open_period(trips)))
                }
            })
        });
        if let Ok((before, after)) = step {
            self.announce(before, after, now);
        }
    }

    /// An adaptive breaker's answer to a call (DESIGN §4.18): refused with
    /// probability max(0, (requests - K * accepts) / (requests + 1)) over
    /// the window, where requests are the calls asked for (a refused one
    /// counts at once, one let through when it settles) and accepts those
    /// the dependency answered with success.
    fn throttle(&self, clock: Clock) -> Result<Kind, CircuitOpen> {
        let now = self.now_ms(clock);
        let (over, out_of) = self.refusal(now);
        if over == 0 || crate::rng::next_u64() % out_of >= over {
            return Ok(Kind::Adaptive);
        }
        self.count_request(now, false);
        Err(CircuitOpen)
    }

    /// The chance an adaptive breaker refuses a call at `now`, as a
    /// fraction `over / out_of` (`out_of` above 0).
    pub(super) fn refusal(&self, now: u64) -> (u64, u64) {
        let (requests, accepts) = self.ring.counts(now);
        let over =
            (requests * 1000).saturating_sub(self.requests_per_accept.saturating_mul(accepts));
        (over, (requests + 1) * 1000)
    }

    /// An adaptive breaker's request at `now`, refused or settled: and an
    /// accept if the dependency answered with success.
    fn count_request(&self, now: u64, accepted: bool) {
        let _ = self.ring.add(now, 1, u64::from(accepted));
    }

    /// The open period after `trips` openings in a row, jittered, in
    /// milliseconds.
    fn open_period(&self, trips: u64) -> u64 {
        let doublings = u32::try_from(trips.saturating_sub(1)).unwrap_or(u32::MAX);
        let period = self
            .open_ms
            .saturating_mul(1u64.checked_shl(doublings).unwrap_or(u64::MAX))
            .min(self.max_open_ms.max(self.open_ms));
        let spread =
            u64::try_from(u128::from(period) * u128::from(self.jitter) / 1000).unwrap_or(period);
        if spread == 0 {
            return period;
        }
        let random = crate::rng::next_u64();
        let cut = spread.checked_add(1).map_or(random, |range| random % range);
        period - cut.min(period)
    }
}
