//! One hedged call: its attempts, polled in place in one future.
//!
//! Attempt 1 starts at once. While no attempt has answered, the next starts
//! when the newest has run for the hedge delay, up to `max` in all. The
//! first answer the rules accept (a success, or an error `on` rejects) ends
//! the call and drops the attempts still running. A failure the rules
//! retry starts the next attempt at once, or after the server's hint. When
//! every attempt has failed and no more may start, the last failure to
//! arrive is returned. Whether a failure is retried is the retry loop's
//! decision (`retry_after_failure` in `settle`); the hedge's own rules (the
//! budget's token for a hedge, the deadline's edge) are `start` and
//! `schedule_hedge` below; the call's state is `hedged`.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::hedged::{Hedged, This};
use super::parts::{Bound, Known, MakeAttempt, Running};
use super::slots::Slots;
use super::Kind;
use crate::breaker::{CircuitPermit, HedgedMark, MarkThread};
use crate::clock::{Clock, Instant};
use crate::context::{scoped_call, Scoped};
use crate::decision::{self, Stop};
use crate::rules::{Outcome, RulesFor};
use crate::slots::BreakerSlot;
use crate::{observe, CircuitOpen};

impl<'p, R, Mk, J, S, L> Future for Hedged<'p, R, Mk, J, S, L>
where
    R: Outcome,
    Mk: MakeAttempt<Attempt: Future<Output = R>>,
    J: RulesFor<R>,
    L: Bound<Mk::Attempt>,
    S: Slots<Running<'p, L::Attempt>>,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let mut this = self.project();
        let poll = this.poll_attempts(cx);
        if poll.is_pending() {
            this.call.scope().pending(); // In flight in the attempt it runs inside.
        } else {
            this.call.scope().finished(); // Answered or not: no longer in flight.
        }
        poll
    }
}

impl<'p, R, Mk, J, S, L> This<'_, 'p, R, Mk, J, S, L>
where
    R: Outcome,
    Mk: MakeAttempt<Attempt: Future<Output = R>>,
    J: RulesFor<R>,
    L: Bound<Mk::Attempt>,
    S: Slots<Running<'p, L::Attempt>>,
{
    /// One poll of a hedged call: polls every attempt running, starts the next
    /// when it is due, and answers with the first outcome the rules accept.
    fn poll_attempts(&mut self, cx: &mut Context<'_>) -> Poll<R> {
        if *self.started == 0 {
            // The first poll: reads the delay (a percentile hedge's is
            // `base` until its latencies are warm), starts attempt 1. The
            // clock is read at the first poll only for a percentile hedge.
            *self.delay = match self.setup.hedge.kind {
                Kind::After(delay) => delay,
                Kind::Percentile {
                    per_mille,
                    latencies,
                } => latencies.delay(per_mille).unwrap_or(self.setup.policy.base),
            };
            *self.unscheduled = self.place(|| Clock::Async.now(), false);
            if let (0, Some((_, refused))) = (*self.started, self.setup.breaker) {
                // The breaker refused the call, as the retry loop's.
                self.call
                    .stopped(Stop::Open, false, self.setup.record(None));
                return Poll::Ready(R::from_error(refused(CircuitOpen)));
            }
        }
        loop {
            // Every running attempt, with its own number in its context.
            let mut running = 0;
            for index in 0..self.slots.capacity() {
                let Some(mut slot) = self.slots.as_mut().slot(index) else {
                    break;
                };
                let Some(attempt) = slot.as_mut().as_pin_mut() else {
                    continue;
                };
                let attempt = attempt.project();
                let known = attempt.known;
                self.call.set_attempt(known.number);
                // Each attempt is judged by its own retried calls: the ones it
                // has in flight and whether one gave up, kept in its slot and
                // put in the call's context while it is polled.
                self.call.swap_nesting(known.nesting);
                #[allow(clippy::clone_on_copy)] // `Copy` without `attempt-spans`.
                let span = attempt.span.clone();
                // Marked with its own permit, so that a retried function it
                // calls with the same breaker runs under it (`docs/breaker.md`).
                let mark = HedgedMark::of(known.permit.as_mut(), &mut known.refused_inside);
                let polled = Pin::new(&mut Scoped::new(
                    self.call.scope(),
                    mark,
                    attempt.attempt,
                    span,
                ))
                .poll(cx);
                known.nesting = self.call.swap_nesting((0, false));
                let Poll::Ready(outcome) = polled else {
                    running += 1;
                    continue;
                };
                let known = core::mem::take(known);
                slot.set(None);
                if let Some(answer) = self.settle(outcome, known) {
                    // The call has its answer: the attempts still running
                    // are dropped.
                    for index in 0..self.slots.capacity() {
                        if let Some(mut slot) = self.slots.as_mut().slot(index) {
                            slot.set(None);
                        }
                    }
                    return Poll::Ready(answer);
                }
            }
            let now = Clock::Async.now();
            if core::mem::take(self.unscheduled) {
                self.schedule_hedge(now);
            }
            if self.next.is_some_and(|at| at <= now) && running < self.slots.capacity() {
                self.start(now);
                continue;
            }
            if running == 0 && self.next.is_none() {
                // Every attempt that ended without an answer left its
                // failure in `last`, so there is one to return.
                if let Some(last) = self.give_up() {
                    return Poll::Ready(last);
                }
            }
            // Wait for an attempt, or for the next start.
            let Some(at) = self.next.filter(|_| running < self.slots.capacity()) else {
                return Poll::Pending;
            };
            if *self.armed != Some(at) {
                self.timer
                    .set(Some(crate::sleep::sleep(at.saturating_duration_since(now))));
                *self.armed = Some(at);
            }
            let polled = self.timer.as_mut().as_pin_mut().map(|timer| timer.poll(cx));
            if polled != Some(Poll::Ready(())) {
                return Poll::Pending;
            }
            // Tokio's timer ends on its next tick, so the clock may read
            // slightly before `at` here: the start is due.
            *self.next = Some(now.min(at));
        }
    }

    /// Starts the next attempt at `now`, if the budget (for a hedge) and the
    /// breaker let it, and schedules the hedge after it.
    fn start(&mut self, now: Instant) {
        let after_failure = core::mem::take(self.retrying);
        if !self.make.can_make() {
            // The request cannot be sent again (a body over the layer's bound,
            // or one still being sent): no attempt starts any more.
            return self.halt(Stop::NotRetryable);
        }
        // A hedge is a retry for the budget: made only if it allows one, and it
        // takes a token, given back if the hedge is not sent after all. Under
        // gRFC A6 (a gRPC service config's policy) it is sent only while the
        // count is above half, and takes none.
        let mut token = None;
        if let Some(budget) = self.setup.budget.filter(|_| !after_failure) {
            let a6 = self.setup.policy.follows_a6();
            if !((a6 && budget.above_half()) || (!a6 && budget.try_take())) {
                return self.no_more(Stop::Budget);
            }
            token = (!a6).then_some(budget);
        }
        if self.place(|| now, after_failure) {
            self.schedule_hedge(now);
        } else if let Some(budget) = token {
            budget.refund();
        }
    }

    /// Puts the next attempt in a free slot, if the breaker lets it: whether
    /// it started. `now` reads its start; `after_failure`, whether it retries
    /// a failure (rather than hedging).
    fn place(&mut self, now: impl FnOnce() -> Instant, after_failure: bool) -> bool {
        // The retry loop's permit, one per attempt running.
        let mut known = Known {
            permit: self.setup.circuit().map(CircuitPermit::new),
            ..Known::default()
        };
        if !known.permit.acquire(false) {
            self.halt(Stop::Open);
            return false;
        }
        let free = (0..self.slots.capacity())
            .find(|&index| matches!(self.slots.as_mut().slot(index), Some(slot) if slot.is_none()));
        let Some(mut slot) = free.and_then(|free| self.slots.as_mut().slot(free)) else {
            return false;
        };
        let number = self.started.saturating_add(1);
        self.call.set_attempt(number);
        let timeout = self.call.attempt_timeout();
        let make = &mut *self.make; // Made in the attempt's context: it sees its key.
        self.call.swap_nesting((0, false));
        let made = {
            let mut mark = HedgedMark::of(known.permit.as_mut(), &mut known.refused_inside);
            let _hold = mark.hold();
            scoped_call(self.call.scope(), || make.make())
        };
        known.nesting = self.call.swap_nesting((0, false));
        let Some(made) = made else {
            // No copy of the request could be made: the permit goes unused,
            // and no attempt starts any more.
            self.call.set_attempt(*self.started);
            self.halt(Stop::NotRetryable);
            return false;
        };
        *self.started = number;
        // A test's simulated clock ends no wait before this attempt is polled:
        // the loop polls the attempts before it again first.
        #[cfg(feature = "testing")]
        crate::timer::simulated::disarm();
        // A hedge is told as it starts, as a hedge; a retry after a failure
        // was told when the attempt failed (`settle`), and is counted now. Both
        // count as retries, as gRPC counts hedges.
        if after_failure {
            // The count alone of `observe::retrying`: its event was emitted
            // by `observe::retry_decided`.
            crate::metrics::record_retry(self.setup.name, *self.wait);
        } else if number > 1 {
            observe::hedging(
                self.setup.name,
                number - 1,
                *self.wait,
                self.setup.record(None),
            );
        }
        let attempt = self.setup.limit.bound(timeout, made);
        let span = if self.make.sends_http() {
            observe::http_attempt_span(self.setup.name, number)
        } else {
            observe::attempt_span(self.setup.name, number)
        };
        // Its start is read only for a percentile hedge's latencies.
        let adaptive = matches!(self.setup.hedge.kind, Kind::Percentile { .. });
        (known.number, known.started) = (number, adaptive.then(now));
        slot.set(Some(Running {
            attempt,
            known,
            span,
        }));
        true
    }

    /// After a start at `now`: the next attempt is due when this one has run
    /// for the delay, if attempts are left and the deadline allows it, by the
    /// retry loop's rule of its edge ([`decision::too_late`]).
    fn schedule_hedge(&mut self, now: Instant) {
        if *self.started >= self.setup.policy.max_attempts {
            return self.no_more(Stop::Exhausted);
        }
        let delay = *self.delay;
        match now.checked_add(delay) {
            Some(at) if !decision::too_late(self.setup.policy, delay, self.call.left()) => {
                *self.next = Some(at);
                *self.wait = delay;
            }
            _ => self.no_more(Stop::Deadline),
        }
    }
}
