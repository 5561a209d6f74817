//! One hedged call: its attempts, polled in place in one future.
//!
//! Attempt 1 starts at once. While no attempt has answered, the next starts
//! when the newest has run for the hedge delay, up to `max` in all. The
//! first answer the rules accept (a success, or an error `on` rejects) ends
//! the call and drops the attempts still running. A failure the rules
//! retry starts the next attempt at once, or after the server's hint. When
//! every attempt has failed and no more may start, the last failure to
//! arrive is returned. The rules of a start (attempts left, deadline,
//! budget, breaker, hint) are all in `start`, `schedule_hedge` and
//! `schedule_after_failure` below.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use super::parts::{Bound, Ended, Judge, MakeAttempt, Running, Setup};
use super::slots::Slots;
use crate::attempts::Attempts;
use crate::breaker::PermitMark;
use crate::clock::{Clock, Instant};
use crate::decision::{Classification, Stop};
use crate::rules::Outcome;
use crate::slots::{NoBreaker, NoBudget};
use crate::timeout::Limit;
use crate::{observe, CircuitOpen, CircuitPermit, Nested, RetryBudget};
// The one timer of a hedged call: the next start.
use crate::sleep::Sleep as Timer;

pin_project_lite::pin_project! {
    /// A hedged call in flight. Made by [`Hedged::new`]; its output is the
    /// answer that ended the call, or the last failure.
    #[project = HedgedProjection]
    #[must_use = "futures do nothing unless polled"]
    pub struct Hedged<'p, R, Mk, J, S, L = Limit<<R as Outcome>::Error>>
    where
        R: Outcome,
    {
        setup: Setup<'p, R, L>,
        // The call's context (attempt number, key, deadline) for its
        // attempts; its own breaker and budget slots are unused: every
        // attempt holds a permit of its own.
        attempts: Attempts<'p, NoBreaker, NoBudget>,
        make: Mk,
        judge: J,
        // Attempts started so far.
        started: u32,
        // The hedge delay, read once per call.
        delay: Duration,
        // The wait before the next start, for tracing and metrics.
        wait: Duration,
        // When the next attempt is due, if one may start.
        next: Option<Instant>,
        // Why no further attempt will start, once none may.
        stop: Stop,
        // The next start retries a failure (which took a token): no hedge.
        retrying: bool,
        // The nearest deadline, this call's or the enclosing attempt's.
        deadline: Option<Instant>,
        // The last failure to arrive.
        last: Option<R>,
        // A retried function called by the attempt that failed last gave
        // up after retrying: the call passes the mark on.
        last_inner_gave_up: bool,
        #[pin]
        timer: Option<Timer>,
        // The instant `timer` is set for.
        armed: Option<Instant>,
        // Attempt 1 runs and the hedge after it is not scheduled yet: the
        // clock is read only once its first poll left it running.
        unscheduled: bool,
        #[pin]
        slots: S,
    }
}

impl<'p, R, Mk, Fut, J, S, L> Hedged<'p, R, Mk, J, S, L>
where
    R: Outcome,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    J: Judge<R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    /// A call that starts its first attempt when first polled.
    pub fn new(setup: Setup<'p, R, L>, slots: S, judge: J, make: Mk) -> Self {
        let attempts = Attempts::start(setup.policy, NoBudget, setup.name);
        Hedged {
            setup,
            attempts,
            make,
            judge,
            started: 0,
            delay: Duration::ZERO,
            wait: Duration::ZERO,
            next: None,
            stop: Stop::Exhausted,
            retrying: false,
            deadline: None,
            last: None,
            last_inner_gave_up: false,
            timer: None,
            armed: None,
            unscheduled: false,
            slots,
        }
    }
}

impl<'p, R, Mk, Fut, J, S, L> Future for Hedged<'p, R, Mk, J, S, L>
where
    R: Outcome,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    J: Judge<R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let mut this = self.project();
        let poll = poll_hedged(&mut this, cx);
        if poll.is_pending() {
            this.attempts.waiting(); // In flight in the attempt it runs inside.
        } else {
            this.attempts.finish(); // Answered or not: no longer in flight.
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
    J: Judge<R>,
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
            this.attempts.set_attempt(*attempt.number);
            // Each attempt is judged by its own retried calls: the ones it
            // has in flight and whether one gave up, kept in its slot and
            // put in the call's context while it is polled.
            this.attempts.swap_nesting(*attempt.nesting);
            #[allow(clippy::clone_on_copy)] // `Copy` without `attempt-spans`.
            let span = attempt.span.clone();
            // Marked with its own permit, so that a retried function it
            // calls with the same breaker runs under it (`docs/breaker.md`).
            let mark = PermitMark::of(attempt.permit.as_ref(), attempt.refused_inside);
            let polled =
                Pin::new(&mut this.attempts.scoped_marked(attempt.attempt, span, mark)).poll(cx);
            *attempt.nesting = this.attempts.swap_nesting((0, false));
            let Poll::Ready(outcome) = polled else {
                running += 1;
                continue;
            };
            let ended = Ended {
                number: *attempt.number,
                started: *attempt.started,
                permit: attempt.permit.take(),
                refused_inside: *attempt.refused_inside,
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

type This<'a, 'p, R, Mk, J, S, L> = HedgedProjection<'a, 'p, R, Mk, J, S, L>;

/// The first poll: reads the delay and the deadlines, starts attempt 1.
/// `Some` when the breaker refuses the call.
fn begin<'p, R: Outcome, Mk, Fut, J, S, L>(this: &mut This<'_, 'p, R, Mk, J, S, L>) -> Option<R>
where
    J: Judge<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    let policy = this.setup.policy;
    *this.delay = this.setup.hedge.delay(policy.base());
    let own = policy
        .deadline()
        .and_then(|_| this.attempts.context().deadline());
    let enclosing = crate::context::enclosing_deadline().get();
    *this.deadline = match (own, enclosing) {
        (Some(own), Some(enclosing)) => Some(own.min(enclosing)),
        (own, enclosing) => own.or(enclosing),
    };
    // The clock is read at the first poll only for a percentile hedge.
    let now = this.setup.hedge.is_adaptive().then(|| Clock::Async.now());
    if place(this, now, false) {
        *this.unscheduled = true;
    }
    if *this.started == 0 {
        // The breaker refused the call.
        *this.started = 1;
        let (_, refused) = this.setup.breaker?;
        observe::stopped(this.setup.name, 1, Stop::Open);
        return Some(R::from_error(refused(CircuitOpen)));
    }
    None
}

/// Starts the next attempt at `now`, if the budget (for a hedge) and the
/// breaker let it, and schedules the hedge after it.
fn start<'p, R: Outcome, Mk, Fut, J, S, L>(this: &mut This<'_, 'p, R, Mk, J, S, L>, now: Instant)
where
    J: Judge<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    let after_failure = core::mem::take(this.retrying);
    if *this.started > 0 && !this.make.can_make() {
        // The request cannot be sent again (a body over the layer's bound,
        // or one still being sent): no attempt starts any more.
        return no_more(this, Stop::NotRetryable);
    }
    // A hedge is a retry for the budget: made only if it allows one, and it
    // takes a token, given back if the hedge is not sent after all.
    let mut token = None;
    if *this.started > 0 && !after_failure {
        if let Some(budget) = this.setup.budget {
            if !(budget.allows_retry() && budget.record_failure()) {
                return no_more(this, Stop::Budget);
            }
            token = Some(budget);
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
    J: Judge<R>,
    Mk: MakeAttempt<Attempt = Fut>,
    Fut: Future<Output = R>,
    L: Bound<Fut>,
    S: Slots<Running<'p, L::Attempt>>,
{
    let permit = match this.setup.breaker {
        None => None,
        Some((breaker, _)) => match breaker.acquire() {
            Ok(permit) => Some(permit),
            Err(CircuitOpen) => {
                no_more(this, Stop::Open);
                return false;
            }
        },
    };
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
    this.attempts.set_attempt(number);
    let timeout = this.attempts.attempt_timeout();
    let make = &mut *this.make; // Made in the attempt's context: it sees its key.
    let mut refused_inside = false;
    let mark = PermitMark::of(permit.as_ref(), &mut refused_inside);
    this.attempts.swap_nesting((0, false));
    // The first attempt is always made: a call with nothing to return
    // would wait for ever.
    let made = this.attempts.make_marked(mark, || {
        if number == 1 {
            Some(make.make())
        } else {
            make.try_make()
        }
    });
    let nesting = this.attempts.swap_nesting((0, false));
    let Some(made) = made else {
        // No copy of the request could be made: the permit goes unused,
        // and no attempt starts any more.
        this.attempts.set_attempt(*this.started);
        no_more(this, Stop::NotRetryable);
        return false;
    };
    *this.started = number;
    if number > 1 {
        if after_failure {
            super::parts::failed_with(this.judge, this.last.as_ref());
        }
        observe::retrying(this.setup.name, number - 1, *this.wait);
    }
    let attempt = this.setup.limit.bound(timeout, made);
    slot.set(Some(Running {
        attempt,
        number,
        started: now,
        permit,
        refused_inside,
        nesting,
        span: observe::attempt_span(this.setup.name, number),
    }));
    true
}

/// After a start at `now`: the next attempt is due when this one has run
/// for the delay, if attempts are left and the deadline allows it.
fn schedule_hedge<R: Outcome, Mk, J, S, L>(this: &mut This<'_, '_, R, Mk, J, S, L>, now: Instant) {
    if *this.started >= this.setup.policy.max_attempts() {
        return no_more(this, Stop::Exhausted);
    }
    let at = now.checked_add(*this.delay);
    match (at, *this.deadline) {
        (Some(at), Some(deadline)) if at >= deadline => no_more(this, Stop::Deadline),
        (Some(at), _) => {
            *this.next = Some(at);
            *this.wait = *this.delay;
        }
        (None, _) => no_more(this, Stop::Deadline),
    }
}

/// No attempt starts any more, for `stop`; those running go on.
fn no_more<R: Outcome, Mk, J, S, L>(this: &mut This<'_, '_, R, Mk, J, S, L>, stop: Stop) {
    *this.next = None;
    *this.stop = stop;
}

/// An attempt ended with `outcome`: `Some` when that ends the call.
fn settle<'p, R: Outcome, Mk, J, S, L>(
    this: &mut This<'_, 'p, R, Mk, J, S, L>,
    outcome: R,
    ended: Ended<'p>,
) -> Option<R>
where
    J: Judge<R>,
{
    let Ended {
        number,
        started,
        permit,
        refused_inside,
        inner_gave_up,
    } = ended;
    // Attempt 1 ended at its first poll: what follows is decided here.
    *this.unscheduled = false;
    match this.judge.verdict(&outcome) {
        Classification::Done => {
            if let Some(permit) = permit {
                permit.record(true);
            }
            if let Some(budget) = this.setup.budget {
                budget.record_success();
            }
            if let Some(started) = started {
                let now = Clock::Async.now();
                this.setup
                    .hedge
                    .record(now.saturating_duration_since(started));
            }
            this.attempts.succeeded();
            Some(outcome)
        }
        Classification::Permanent => {
            // Not the dependency's failure: the breaker counts it as a
            // success, as the retry loop does.
            if let Some(permit) = permit {
                permit.record(true);
            }
            returned_not_retryable(this, &outcome, number, inner_gave_up);
            Some(outcome)
        }
        Classification::Unrepeatable => {
            // A transient failure of a request that must not be repeated:
            // returned, and counted as a transient failure is.
            record_failure(permit, refused_inside);
            if let Some(budget) = this.setup.budget {
                let _ = budget.record_failure();
            }
            returned_not_retryable(this, &outcome, number, inner_gave_up);
            Some(outcome)
        }
        Classification::Transient(hint) => {
            record_failure(permit, refused_inside);
            if inner_gave_up && this.setup.policy.nested() == Nested::Once {
                // A layer below already retried this failure: start no
                // more attempts because of it (`nested = "once"`).
                no_more(this, Stop::Nested);
            } else {
                schedule_after_failure(this, &outcome, number, hint);
            }
            *this.last = Some(outcome);
            *this.last_inner_gave_up = inner_gave_up;
            None
        }
    }
}

/// A failure the rules do not retry ends the call: told to the outside
/// world, and, when a retried function the attempt called gave up on it,
/// to the attempt this call runs inside, as the retry loop does: the mark of
/// a layer below is passed on, so the layers around do not retry it again.
fn returned_not_retryable<R: Outcome, Mk, J: Judge<R>, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
    outcome: &R,
    number: u32,
    inner_gave_up: bool,
) {
    super::parts::failed_with(this.judge, Some(outcome));
    observe::stopped(this.setup.name, number, Stop::NotRetryable);
    if inner_gave_up {
        crate::context::report_gave_up();
    }
}

/// Tells the breaker an attempt failed in a way the rules retry, unless
/// another breaker refused a call inside it: that failure is not this
/// dependency's, and the permit is freed without an outcome, as the retry
/// loop's is.
fn record_failure(permit: Option<CircuitPermit<'_>>, refused_inside: bool) {
    match permit {
        Some(permit) if refused_inside => drop(permit),
        Some(permit) => permit.record(false),
        None => {}
    }
}

/// A failure the rules retry: the next attempt starts at once, or after the
/// server's hint, in place of the hedge, if attempts, budget, deadline and
/// hint allow one.
fn schedule_after_failure<R: Outcome, Mk, J, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
    outcome: &R,
    number: u32,
    hint: Option<Duration>,
) where
    J: Judge<R>,
{
    // Every failure the rules retry takes a token, as in the retry loop.
    let budget_allows = this.setup.budget.is_none_or(RetryBudget::record_failure);
    if *this.started >= this.setup.policy.max_attempts() {
        return no_more(this, Stop::Exhausted);
    }
    if !budget_allows {
        return no_more(this, Stop::Budget);
    }
    let wait = match hint {
        None => Duration::ZERO,
        Some(hint) => {
            match this
                .setup
                .policy
                .hinted_wait(Duration::ZERO, hint, crate::rng::next_u64())
            {
                Some(wait) => wait,
                None => return no_more(this, Stop::HintTooLong),
            }
        }
    };
    let now = Clock::Async.now();
    let Some(at) = now.checked_add(wait) else {
        return no_more(this, Stop::Deadline);
    };
    if this.deadline.is_some_and(|deadline| at >= deadline) {
        return no_more(this, Stop::Deadline);
    }
    this.judge.before_next(outcome, number, wait);
    // A retry after a failure, not a hedge: the failure took the token.
    *this.next = Some(at);
    *this.wait = wait;
    *this.retrying = true;
}

/// Every attempt failed and none may start: the last failure, unchanged.
fn give_up<R: Outcome, Mk, J: Judge<R>, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
) -> Option<R> {
    let stop = *this.stop;
    super::parts::failed_with(this.judge, this.last.as_ref());
    observe::stopped(this.setup.name, *this.started, stop);
    // As the retry loop: a call that never retries (`max = 1`) is no retry
    // layer, though it passes on the mark of a layer below.
    let retries = this.setup.policy.max_attempts() > 1;
    if (retries && stop.gave_up_retrying()) || *this.last_inner_gave_up {
        crate::context::report_gave_up();
    }
    this.last.take()
}
