//! How a hedged call takes an attempt's answer: the call ends with it, or
//! it is kept as the last failure and the next start is scheduled; what
//! the call returns when no attempt is left; and the steps `call` and this
//! take when no attempt may start for now, or any more.

use super::hedged::This;
use super::parts::Known;
use super::Kind;
use crate::clock::Clock;
use crate::decision::{Classification, Stop};
use crate::rules::{Outcome, RulesFor};
use crate::{observe, RetryBudget};

impl<'p, R: Outcome, Mk, J: RulesFor<R>, S, L> This<'_, 'p, R, Mk, J, S, L> {
    /// An attempt ended with `outcome`: `Some` when that ends the call.
    pub(super) fn settle(&mut self, outcome: R, mut ended: Known<'p>) -> Option<R> {
        // Attempt 1 ended at its first poll: what follows is decided here.
        *self.unscheduled = false;
        // A failure the server below gave up on is an inner give-up.
        let (verdict, below) = self.call.below(self.judge.verdict(&outcome));
        ended.nesting.1 |= below;
        let inner_gave_up = ended.nesting.1;
        // An attempt with a permit hears of a refusal inside it there.
        if let Some(permit) = &ended.permit {
            ended.refused_inside = permit.refused_inside();
        }
        // The attempt's breaker is told how it ended, as the retry loop's
        // permit records (`CircuitPermit::record`): an error the rules
        // do not retry is not the dependency's failure, and counts as a
        // success, unless a breaker refused a call inside the attempt.
        let success = verdict == Classification::Done
            || (verdict == Classification::Permanent && !ended.refused_inside);
        if let Some(permit) = ended.permit.take() {
            permit.record(success);
        }
        if ended.refused_inside && verdict != Classification::Done {
            // A breaker refused a call inside the attempt (under the tower
            // layer: the `CircuitBreakerLayer` below refused the copy). That
            // is no answer from the dependency, and no attempt starts any
            // more. While other attempts run, the call waits for them (a
            // half-open circuit's probe among them); when none is left, it
            // returns the last real failure, as the retry loop does when a
            // retry is refused, and the refusal only when there is none: as
            // not retryable when the rules do not retry it, as the retry
            // loop returns it.
            self.halt(Stop::Open);
            self.last
                .get_or_insert((outcome, inner_gave_up, !verdict.retries()));
            return None;
        }
        match verdict {
            Classification::Done => {
                // A percentile hedge's latencies hear how long it took.
                if let (Some(started), Kind::Percentile { latencies, .. }) =
                    (ended.started, self.setup.hedge.kind)
                {
                    latencies.record(Clock::Async.now().saturating_duration_since(started));
                }
                // The call made every attempt it started, whichever answered;
                // the budget gets its share back.
                self.call.set_attempt(*self.started);
                self.call.succeeded(self.setup.budget, self.setup.circuit());
                Some(outcome)
            }
            Classification::Permanent | Classification::Unrepeatable => {
                // `Unrepeatable`: a transient failure of a request that must
                // not be repeated, returned, and counted as a transient
                // failure is.
                RetryBudget::not_retried(self.setup.budget, verdict);
                // A failure the rules do not retry ends the call: told to the
                // outside world, and, when a retried function the attempt
                // called gave up on it, to the attempt this call runs inside,
                // as the retry loop does: the mark of a layer below is passed
                // on, so the layers around do not retry it again. The event
                // names the attempt that failed; the call made every attempt
                // it started.
                crate::rules::failed_with(&outcome);
                let (elapsed, record) = (self.call.elapsed(), self.setup.record(Some(verdict)));
                let (name, made, stop) = (self.setup.name, *self.started, Stop::NotRetryable);
                observe::stopped_after(name, ended.number, made, stop, elapsed, record);
                let max = self.setup.policy.max_attempts;
                crate::context::report_stop(max, stop, inner_gave_up);
                Some(outcome)
            }
            // A copy the server never processed counts as any failure: the
            // next copy starts at once anyway.
            Classification::Transient(_) | Classification::Unsent | Classification::Unprocessed => {
                self.retry_after_failure(&outcome, verdict, &ended);
                *self.last = Some((outcome, inner_gave_up, false));
                None
            }
        }
    }

    /// A failure the rules retry: the retry loop's decision, made by its code
    /// with every attempt started counted, says whether the next attempt starts
    /// (at once, or after the server's hint, in place of the hedge) or none
    /// starts any more. Once the call is halted, a failure only takes its
    /// budget token, as every retryable failure does.
    fn retry_after_failure(&mut self, outcome: &R, verdict: Classification, ended: &Known) {
        let (number, inner_gave_up) = (ended.number, ended.nesting.1);
        let hint = verdict.hint();
        if *self.halted {
            let _ = self.setup.budget.map(RetryBudget::record_failure);
            return;
        }
        let (budget, breaker) = (self.setup.budget, self.setup.circuit());
        // An instant a server named on an earlier failure still holds: no
        // attempt starts before it, whichever attempt failed now (never early).
        let now = Clock::Async.now();
        let named_left = self
            .named
            .map(|named| named.saturating_duration_since(now))
            .filter(|left| !left.is_zero());
        // The longer of the two, either if only one is given.
        let asked = hint.max(named_left);
        let decided = self
            .call
            .decide(*self.started, asked, inner_gave_up, true, budget, breaker);
        let wait = match decided {
            Ok((wait, _)) => wait,
            Err(stop) => return self.halt(stop),
        };
        let Some(at) = now.checked_add(wait) else {
            return self.halt(Stop::Deadline);
        };
        // The later of the instants named, either if only one is.
        *self.named = (*self.named).max(hint.and_then(|hint| now.checked_add(hint)));
        self.judge.before_wait(outcome, number, wait);
        // Told now, as the retry loop tells it: the attempt that failed (not
        // the newest one, which may still run), before the wait.
        crate::rules::failed_with(outcome);
        let record = self.setup.record(Some(verdict));
        observe::retry_decided(self.setup.name, number, wait, record);
        // A retry after a failure, not a hedge: the failure took the token.
        *self.next = Some(at);
        *self.wait = wait;
        *self.retrying = true;
    }

    /// Every attempt failed and none may start: the last failure, unchanged,
    /// stopped as the retry loop stops.
    pub(super) fn give_up(&mut self) -> Option<R> {
        let (last, inner_gave_up, rejected) = self.last.take()?;
        // The last failure's kind: the hedged call keeps no hint of it.
        let (stop, outcome) = if rejected {
            (Stop::NotRetryable, Classification::Permanent)
        } else {
            (*self.stop, Classification::Transient(None))
        };
        crate::rules::failed_with(&last);
        self.call.set_attempt(*self.started);
        let record = self.setup.record(Some(outcome));
        self.call.stopped(stop, inner_gave_up, record);
        Some(last)
    }

    /// No attempt is due, for `stop` (no hedge fits before the deadline, or
    /// the budget refused one); those running go on, and a failure may still
    /// start one.
    pub(super) fn no_more(&mut self, stop: Stop) {
        *self.next = None;
        *self.stop = stop;
    }

    /// What stops the retry loop stops the call, for `stop`: no attempt starts
    /// any more, and a later failure does not undo it (§4.15).
    pub(super) fn halt(&mut self, stop: Stop) {
        self.no_more(stop);
        *self.halted = true;
    }
}
