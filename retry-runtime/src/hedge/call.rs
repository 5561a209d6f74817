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

use super::hedged::{halt, no_more, Hedged, This};
use super::parts::{Bound, Ended, MakeAttempt, Running};
use super::settle::{give_up, settle};
use super::slots::Slots;
use crate::breaker::{CircuitPermit, HedgedMark, MarkThread};
use crate::clock::{Clock, Instant};
use crate::context::{scoped_call, Scoped};
use crate::decision::{self, Stop};
use crate::rules::Outcome;
use crate::rules::RulesFor;
use crate::{observe, CircuitOpen};

impl<'p, R, Mk, Fut, J, S, L> Future for Hedged<'p, R, Mk, J, S, L>
where
    R: Outcome,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    J: RulesFor<R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let mut this = self.project();
        let poll = poll_hedged(&mut this, cx);
        if poll.is_pending() {
            this.call.scope().pending(); // In flight in the attempt it runs inside.
        } else {
            this.call.finished(); // Answered or not: no longer in flight.
        }
        poll
    }
}

/// One poll of a hedged call: polls every attempt running, starts the next
/// when it is due, and answers with the first outcome the rules accept.
fn poll_hedged<'p, R: Outcome, Mk, Fut, J, S, L>(
    this: &mut This<'_, 'p, R, Mk, J, S, L>,
    cx: &mut Context<'_>,
) -> Poll<R>
where
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    J: RulesFor<R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    if *this.started == 0 {
        if let Some(refused) = begin(this) {
            return Poll::Ready(refused);
        }
    }
    loop {
        // Every running attempt, with its own number in its context.
        let mut running = 0;
        for index in 0..this.slots.capacity() {
            let Some(mut slot) = this.slots.as_mut().slot(index) else {
                break;
            };
            let Some(attempt) = slot.as_mut().as_pin_mut() else {
                continue;
            };
            let attempt = attempt.project();
            this.call.set_attempt(*attempt.number);
            // Each attempt is judged by its own retried calls: the ones it
            // has in flight and whether one gave up, kept in its slot and
            // put in the call's context while it is polled.
            this.call.swap_nesting(*attempt.nesting);
            #[allow(clippy::clone_on_copy)] // `Copy` without `attempt-spans`.
            let span = attempt.span.clone();
            // Marked with its own permit, so that a retried function it
            // calls with the same breaker runs under it (`docs/breaker.md`).
            let mark = HedgedMark::of(attempt.permit.as_mut(), attempt.refused_inside);
            let polled = Pin::new(&mut Scoped::new(
                this.call.scope(),
                mark,
                attempt.attempt,
                span,
            ))
            .poll(cx);
            *attempt.nesting = this.call.swap_nesting((0, false));
            let Poll::Ready(outcome) = polled else {
                running += 1;
                continue;
            };
            let permit = attempt.permit.take();
            let ended = Ended {
                number: *attempt.number,
                started: *attempt.started,
                refused_inside: (permit.as_ref())
                    .map_or(*attempt.refused_inside, CircuitPermit::refused_inside),
                permit,
                inner_gave_up: attempt.nesting.1,
            };
            slot.set(None);
            if let Some(answer) = settle(this, outcome, ended) {
                super::slots::clear(this.slots.as_mut());
                return Poll::Ready(answer);
            }
        }
        let now = Clock::Async.now();
        if core::mem::take(this.unscheduled) {
            schedule_hedge(this, now);
        }
        if let Some(at) = *this.next {
            if at <= now && running < this.slots.capacity() {
                start(this, now);
                continue;
            }
        }
        if running == 0 && this.next.is_none() {
            // Every attempt that ended without an answer left its
            // failure in `last`, so there is one to return.
            if let Some(last) = give_up(this) {
                return Poll::Ready(last);
            }
        }
        // Wait for an attempt, or for the next start.
        let Some(at) = *this.next else {
            return Poll::Pending;
        };
        if running == this.slots.capacity() {
            return Poll::Pending;
        }
        if *this.armed != Some(at) {
            this.timer
                .set(Some(crate::sleep::sleep(at.saturating_duration_since(now))));
            *this.armed = Some(at);
        }
        match this.timer.as_mut().as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => {
                // Tokio's timer ends on its next tick, so the clock may
                // read slightly before `at` here: the start is due.
                *this.next = Some(now.min(at));
            }
            _ => return Poll::Pending,
        }
    }
}

/// The first poll: reads the delay, starts attempt 1.
/// `Some` when the breaker refuses the call.
fn begin<'p, R: Outcome, Mk, Fut, J, S, L>(this: &mut This<'_, 'p, R, Mk, J, S, L>) -> Option<R>
where
    J: RulesFor<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    *this.delay = this.setup.hedge.delay(this.setup.policy.base);
    // The clock is read at the first poll only for a percentile hedge.
    let now = this.setup.hedge.is_adaptive().then(|| Clock::Async.now());
    if place(this, now, false) {
        *this.unscheduled = true;
    }
    if *this.started == 0 {
        // The breaker refused the call.
        *this.started = 1;
        let (_, refused) = this.setup.breaker?;
        // As the retry loop's refused call.
        let record = this.setup.record(None);
        this.call.stopped(Stop::Open, false, record);
        return Some(R::from_error(refused(CircuitOpen)));
    }
    None
}

/// Starts the next attempt at `now`, if the budget (for a hedge) and the
/// breaker let it, and schedules the hedge after it.
fn start<'p, R: Outcome, Mk, Fut, J, S, L>(this: &mut This<'_, 'p, R, Mk, J, S, L>, now: Instant)
where
    J: RulesFor<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    let after_failure = core::mem::take(this.retrying);
    if *this.started > 0 && !this.make.can_make() {
        // The request cannot be sent again (a body over the layer's bound,
        // or one still being sent): no attempt starts any more.
        return halt(this, Stop::NotRetryable);
    }
    // A hedge is a retry for the budget: made only if it allows one, and it
    // takes a token, given back if the hedge is not sent after all. Under
    // gRFC A6 (a gRPC service config's policy) it is sent only while the
    // count is above half, and takes none.
    let mut token = None;
    if *this.started > 0 && !after_failure {
        if let Some(budget) = this.setup.budget {
            if this.setup.policy.follows_a6() {
                if !budget.above_half() {
                    return no_more(this, Stop::Budget);
                }
            } else if budget.try_take() {
                token = Some(budget);
            } else {
                return no_more(this, Stop::Budget);
            }
        }
    }
    let start = this.setup.hedge.is_adaptive().then_some(now);
    if place(this, start, after_failure) {
        schedule_hedge(this, now);
    } else if let Some(budget) = token {
        budget.refund();
    }
}

/// Puts the next attempt in a free slot, if the breaker lets it: whether
/// it started. `now` is its start, if it was read; `after_failure`, whether
/// it retries a failure (rather than hedging).
fn place<'p, R: Outcome, Mk, Fut, J, S, L>(
    this: &mut This<'_, 'p, R, Mk, J, S, L>,
    now: Option<Instant>,
    after_failure: bool,
) -> bool
where
    J: RulesFor<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    // The retry loop's permit, one per attempt running.
    let mut permit = this
        .setup
        .breaker
        .map(|(breaker, _)| CircuitPermit::new(breaker));
    if permit
        .as_mut()
        .is_some_and(|permit| !permit.acquire_next(false))
    {
        halt(this, Stop::Open);
        return false;
    }
    let Some(free) = (0..this.slots.capacity()).find(|&index| {
        this.slots
            .as_mut()
            .slot(index)
            .is_some_and(|slot| slot.is_none())
    }) else {
        return false;
    };
    let Some(mut slot) = this.slots.as_mut().slot(free) else {
        return false;
    };
    let number = this.started.saturating_add(1);
    this.call.set_attempt(number);
    let timeout = this.call.attempt_timeout();
    let make = &mut *this.make; // Made in the attempt's context: it sees its key.
    let mut refused_inside = false;
    let mark = HedgedMark::of(permit.as_mut(), &mut refused_inside);
    this.call.swap_nesting((0, false));
    let made = {
        let mut mark = mark;
        let _hold = mark.hold();
        scoped_call(this.call.scope(), || make.make())
    };
    let nesting = this.call.swap_nesting((0, false));
    let Some(made) = made else {
        // No copy of the request could be made: the permit goes unused,
        // and no attempt starts any more.
        this.call.set_attempt(*this.started);
        halt(this, Stop::NotRetryable);
        return false;
    };
    *this.started = number;
    // A test's simulated clock ends no wait before this attempt is polled:
    // the loop polls the attempts before it again first.
    #[cfg(feature = "testing")]
    crate::timer::simulated::disarm();
    // A hedge is told as it starts, as a hedge; a retry after a failure
    // was told when the attempt failed (`settle`), and is counted now. Both
    // count as retries, as gRPC counts hedges.
    if number > 1 {
        if after_failure {
            observe::retry_started(this.setup.name, *this.wait);
        } else {
            let record = this.setup.record(None);
            observe::hedging(this.setup.name, number - 1, *this.wait, record);
        }
    }
    let attempt = this.setup.limit.bound(timeout, made);
    let span = if this.make.sends_http() {
        observe::http_attempt_span(this.setup.name, number)
    } else {
        observe::attempt_span(this.setup.name, number)
    };
    slot.set(Some(Running {
        attempt,
        number,
        started: now,
        permit,
        refused_inside,
        nesting,
        span,
    }));
    true
}

/// After a start at `now`: the next attempt is due when this one has run
/// for the delay, if attempts are left and the deadline allows it, by the
/// retry loop's rule of its edge ([`decision::too_late`]).
fn schedule_hedge<R: Outcome, Mk, J, S, L>(this: &mut This<'_, '_, R, Mk, J, S, L>, now: Instant) {
    if *this.started >= this.setup.policy.max_attempts {
        return no_more(this, Stop::Exhausted);
    }
    let delay = *this.delay;
    match now.checked_add(delay) {
        Some(at) if !decision::too_late(this.setup.policy, delay, this.call.left()) => {
            *this.next = Some(at);
            *this.wait = delay;
        }
        _ => no_more(this, Stop::Deadline),
    }
}
