//! How a hedged call takes an attempt's answer: the call ends with it, or
//! it is kept as the last failure and the next start is scheduled; and what
//! the call returns when no attempt is left.

use super::hedged::{halt, This};
use super::parts::Ended;
use crate::breaker::CircuitPermit;
use crate::clock::Clock;
use crate::decision::{Classification, Stop};
use crate::observe;
use crate::rules::Outcome;
use crate::rules::RulesFor;

/// An attempt ended with `outcome`: `Some` when that ends the call.
pub(super) fn settle<'p, R: Outcome, Mk, J, S, L>(
    this: &mut This<'_, 'p, R, Mk, J, S, L>,
    outcome: R,
    ended: Ended<'p>,
) -> Option<R>
where
    J: RulesFor<R>,
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
    let (verdict, below) = this.call.below(this.judge.verdict(&outcome));
    let inner_gave_up = inner_gave_up || below;
    if refused_inside && verdict != Classification::Done {
        record(permit, false);
        return set_aside_refusal(this, outcome, verdict, inner_gave_up);
    }
    match verdict {
        Classification::Done => {
            record(permit, true);
            if let Some(started) = started {
                let now = Clock::Async.now();
                this.setup
                    .hedge
                    .record(now.saturating_duration_since(started));
            }
            // The call made every attempt it started, whichever answered;
            // the budget gets its share back.
            this.call.set_attempt(*this.started);
            let breaker = this.setup.breaker.map(|(breaker, _)| breaker);
            this.call.succeeded(this.setup.budget, breaker);
            Some(outcome)
        }
        Classification::Permanent => {
            // Not the dependency's failure: the breaker counts it as a
            // success, as the retry loop does.
            record(permit, true);
            returned_not_retryable(this, &outcome, verdict, number, inner_gave_up);
            Some(outcome)
        }
        Classification::Unrepeatable => {
            // A transient failure of a request that must not be repeated:
            // returned, and counted as a transient failure is.
            record(permit, false);
            if let Some(budget) = this.setup.budget {
                let _ = budget.record_failure();
            }
            returned_not_retryable(this, &outcome, verdict, number, inner_gave_up);
            Some(outcome)
        }
        // A copy the server never processed counts as any failure: the
        // next copy starts at once anyway.
        Classification::Transient(_) | Classification::Unsent | Classification::Unprocessed => {
            record(permit, false);
            retry_after_failure(this, &outcome, number, verdict, inner_gave_up);
            *this.last = Some(outcome);
            *this.last_inner_gave_up = inner_gave_up;
            *this.last_rejected = false;
            None
        }
    }
}

/// An attempt inside which a breaker refused a call failed (under the tower
/// layer: the `CircuitBreakerLayer` below refused the copy). That is no
/// answer from the dependency, and no attempt starts any more. While other attempts run, the call waits
/// for them (a half-open circuit's probe among them); when none is left,
/// it returns the last real failure, as the retry loop does when a retry is
/// refused, and the refusal only when there is none: as not retryable when
/// the rules do not retry it (`verdict`), as the retry loop returns it.
fn set_aside_refusal<R: Outcome, Mk, J, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
    outcome: R,
    verdict: Classification,
    inner_gave_up: bool,
) -> Option<R> {
    halt(this, Stop::Open);
    if this.last.is_none() {
        *this.last = Some(outcome);
        *this.last_inner_gave_up = inner_gave_up;
        *this.last_rejected = !verdict.retries();
    }
    None
}

/// A failure the rules do not retry ends the call: told to the outside
/// world, and, when a retried function the attempt called gave up on it,
/// to the attempt this call runs inside, as the retry loop does: the mark of
/// a layer below is passed on, so the layers around do not retry it again.
fn returned_not_retryable<R: Outcome, Mk, J: RulesFor<R>, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
    outcome: &R,
    verdict: Classification,
    number: u32,
    inner_gave_up: bool,
) {
    super::parts::failed_with(Some(outcome));
    // The event names the attempt that failed; the call made every attempt
    // it started.
    let (elapsed, record) = (this.call.elapsed(), this.setup.record(Some(verdict)));
    let (name, made) = (this.setup.name, *this.started);
    observe::stopped_after(name, number, made, Stop::NotRetryable, elapsed, record);
    crate::context::report_stop(
        this.setup.policy.max_attempts,
        Stop::NotRetryable,
        inner_gave_up,
    );
}

/// Tells the attempt's breaker how it ended, as the retry loop's permit
/// records ([`CircuitPermit::record`]).
fn record(permit: Option<CircuitPermit<'_>>, success: bool) {
    if let Some(permit) = permit {
        permit.record(success);
    }
}

/// A failure the rules retry: the retry loop's decision, made by its code
/// with every attempt started counted, says whether the next attempt starts
/// (at once, or after the server's hint, in place of the hedge) or none
/// starts any more. Once the call is halted, a failure only takes its
/// budget token, as every retryable failure does.
fn retry_after_failure<R: Outcome, Mk, J, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
    outcome: &R,
    number: u32,
    verdict: Classification,
    inner_gave_up: bool,
) where
    J: RulesFor<R>,
{
    let hint = verdict.hint();
    if *this.halted {
        if let Some(budget) = this.setup.budget {
            let _ = budget.record_failure();
        }
        return;
    }
    let breaker = this.setup.breaker.map(|(breaker, _)| breaker);
    let (started, budget) = (*this.started, this.setup.budget);
    // An instant a server named on an earlier failure still holds: no
    // attempt starts before it, whichever attempt failed now (never early).
    let now = Clock::Async.now();
    let named_left = this
        .named
        .map(|named| named.saturating_duration_since(now))
        .filter(|left| !left.is_zero());
    let asked = match (hint, named_left) {
        (Some(hint), Some(left)) => Some(hint.max(left)),
        (hint, left) => hint.or(left),
    };
    let decided = (this.call).decide(started, asked, inner_gave_up, true, budget, breaker);
    let wait = match decided {
        Ok((wait, _)) => wait,
        Err(stop) => return halt(this, stop),
    };
    let Some(at) = now.checked_add(wait) else {
        return halt(this, Stop::Deadline);
    };
    if let Some(named) = hint.and_then(|hint| now.checked_add(hint)) {
        *this.named = Some(this.named.map_or(named, |before| before.max(named)));
    }
    this.judge.before_wait(outcome, number, wait);
    // Told now, as the retry loop tells it: the attempt that failed (not
    // the newest one, which may still run), before the wait.
    super::parts::failed_with(Some(outcome));
    let record = this.setup.record(Some(verdict));
    observe::retry_decided(this.setup.name, number, wait, record);
    // A retry after a failure, not a hedge: the failure took the token.
    *this.next = Some(at);
    *this.wait = wait;
    *this.retrying = true;
}

/// Every attempt failed and none may start: the last failure, unchanged,
/// stopped as the retry loop stops.
pub(super) fn give_up<R: Outcome, Mk, J: RulesFor<R>, S, L>(
    this: &mut This<'_, '_, R, Mk, J, S, L>,
) -> Option<R> {
    let stop = if *this.last_rejected {
        Stop::NotRetryable
    } else {
        *this.stop
    };
    super::parts::failed_with(this.last.as_ref());
    this.call.set_attempt(*this.started);
    // The last failure's kind: the hedged call keeps no hint of it.
    let outcome = if *this.last_rejected {
        Classification::Permanent
    } else {
        Classification::Transient(None)
    };
    let record = this.setup.record(Some(outcome));
    this.call.stopped(stop, *this.last_inner_gave_up, record);
    this.last.take()
}
