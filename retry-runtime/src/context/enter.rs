//! Entering an attempt's context around each poll (or a plain function's
//! attempt) and leaving it after: the usual way, which copies one frame in
//! and out, and the slow way, for attempts with a deadline or a key, or
//! inside a poll that has marks already.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::{
    Extra, Frame, Marks, Scope, BLOCKING, DEADLINE, GAVE_UP, KEYED, KEY_DRAWN, SET_ASIDE,
    SHOWS_BLOCKING, SHOWS_KEYED, THREAD,
};
use crate::breaker::MarkThread;
use crate::clock::Deadline;
use crate::idempotency::IdempotencyKey;
use crate::observe::AttemptSpan;

/// Runs `attempt` (one poll of an attempt's future, or a plain function's
/// attempt) with the call's context set, then sets back the enclosing
/// attempt's (also when the attempt panics) and hands the call what the
/// attempt left: the marks of retried calls inside and the key, if the body
/// drew one.
// Inlined: around every poll of every attempt. The usual attempt (an async
// call without a deadline of its own or a key, nothing marked by the poll it
// runs inside) copies its 8-byte frame in and the enclosing frame back, and
// tests a word each way: sent the slow way instead, the attribute's success
// path took 239 instructions instead of 100, and three failures 11,658
// instead of 11,143 (benches/instructions.sh, 2026-12-06).
#[inline]
fn in_context<R>(scope: &mut Scope, attempt: impl FnOnce() -> R) -> R {
    let (outer, usual) = THREAD.with(|thread| {
        let outer = thread.frame.replace(scope.frame);
        (outer, thread.marks.get().0 | u64::from(scope.flags) == 0)
    });
    // The attempt is called from one place, whichever way in was taken, so
    // that a retried function carries its attempt's poll once
    // (benches/build-cost.sh: with the attempt called again from a generic
    // function of the slow way, 322 bytes of code a retried function, and
    // its symbol, unwind tables and jump table).
    let mut leave = Leave { outer, slow: None };
    if !usual {
        enter_slow_way(scope, &mut leave.slow);
    }
    let output = attempt();
    leave.leave(scope);
    core::mem::forget(leave);
    output
}

/// Sets the enclosing attempt's frame back, and after the slow way in, what
/// it set aside: by [`leave`](Leave::leave) after the attempt, which then
/// forgets the guard, or when dropped, should the attempt panic.
struct Leave {
    outer: Frame,
    slow: Option<SetAside>,
}

impl Leave {
    /// The way out after the attempt: hands the call what the attempt left.
    // Inlined: the usual way out is a frame stored back and one test of the
    // marks, which the slow way in sets (`SET_ASIDE`), so that it is the one
    // test either way: with the slow way tested apart (and its own call),
    // the attribute's success path took 110 instructions instead of 107, and
    // a retried function 1,683 bytes instead of 1,621
    // (benches/instructions.sh 1000, benches/build-cost.sh 60 1, 2026-12-06).
    #[inline]
    fn leave(&self, scope: &mut Scope) {
        THREAD.with(|thread| {
            let marks = thread.marks.get();
            thread.frame.set(self.outer);
            if marks != Marks::NONE {
                leave_slow(Some(scope), &self.slow, marks);
            }
        });
    }
}

impl Drop for Leave {
    /// The way out when the attempt panics: the enclosing attempt's context
    /// is set back; what the attempt marked goes with the call, which
    /// unwinds (a future that panicked is not polled again).
    // Out of line, so that a retried function's unwind path is one call, not
    // a copy of the way out: with it inlined there, 1,571 bytes a retried
    // function instead of 1,518 (benches/build-cost.sh 60 1). Without the
    // call's scope, which the guard would hold for this path alone: with
    // it, the attribute's success path took 108 instructions instead of 106
    // (benches/instructions.sh 1000, 2026-12-06).
    #[cold]
    #[inline(never)]
    fn drop(&mut self) {
        THREAD.with(|thread| thread.frame.set(self.outer));
        leave_slow(None, &self.slow, Marks::NONE);
    }
}

/// The slow way in: the thread's deadline, key and marks are set aside in
/// `slow`, the attempt's put in, and the ones set aside put back on the way
/// out (only the deadline, for an attempt that has nothing else). The
/// thread's marks then show `SET_ASIDE`, so that the way out looks there.
#[inline(never)]
fn enter_slow_way(scope: &Scope, slow: &mut Option<SetAside>) {
    *slow = Some(THREAD.with(|thread| {
        if thread.marks.get() == Marks::NONE && scope.flags == DEADLINE {
            // A deadline of its own and nothing else: only the thread's
            // nearest deadline is set, and set back after. Kept for
            // `deadline = ..`: without it, `attribute-deadline` took 300
            // instructions on the success path instead of 253, and 12,179
            // instead of 11,984 for three failures (benches/instructions.sh,
            // measured before the way in and out left the generic code).
            let enclosing = thread.deadline.get();
            thread.deadline.set(scope.deadline().min(enclosing));
            thread.marks.set(Marks(SET_ASIDE));
            return SetAside::Deadline(enclosing);
        }
        let saved = Saved {
            marks: thread.marks.get(),
            deadline: thread.deadline.get(),
            key: thread.key.get(),
            drawn: thread.drawn.get(),
        };
        // What the body may ask of the attempt, beside the frame.
        let mut shows = SET_ASIDE;
        if scope.has(BLOCKING) {
            shows |= SHOWS_BLOCKING;
        }
        if scope.has(KEYED) {
            shows |= SHOWS_KEYED;
        }
        thread.marks.set(Marks(shows));
        if scope.has(DEADLINE) {
            // Nobody inside this attempt may run past the nearest deadline.
            thread.deadline.set(scope.deadline().min(saved.deadline));
        }
        if scope.has(KEYED) {
            thread.key.set(scope.key());
        }
        SetAside::All(saved)
    }));
}

/// What the slow way in set aside.
#[derive(Clone, Copy)]
enum SetAside {
    /// The enclosing nearest deadline, and nothing else.
    Deadline(Deadline),
    /// The thread's whole context beside the frame.
    All(Saved),
}

/// The thread's context beside the frame, set aside by an attempt that
/// changes it.
#[derive(Clone, Copy)]
struct Saved {
    marks: Marks,
    deadline: Deadline,
    key: IdempotencyKey,
    drawn: IdempotencyKey,
}

/// The way out when the thread's marks are not empty (the attempt's poll
/// left marks for the call, or the slow way in set something aside), and
/// when the attempt panics (no `scope`: what it marked goes with the call):
/// hands the marks to the call, and sets back what was set aside.
#[inline(never)]
fn leave_slow(scope: Option<&mut Scope>, slow: &Option<SetAside>, marks: Marks) {
    THREAD.with(|thread| {
        // Nothing marked but the slow way in's own mark: nothing to hand
        // over. Without this test, `attribute-deadline` took 274 instructions
        // on the success path instead of 253 (benches/instructions.sh).
        if let Some(scope) = scope.filter(|_| marks != Marks(SET_ASIDE)) {
            scope.inner_gave_up |= marks.has(GAVE_UP);
            scope.in_flight = scope.in_flight.saturating_add_signed(marks.in_flight());
            // The body drew the call's key: its later attempts show it.
            if marks.has(KEY_DRAWN) {
                scope.extra.get_or_insert(Extra::NONE).key = thread.drawn.get();
                scope.flags |= KEYED;
            }
        }
        match *slow {
            Some(SetAside::All(saved)) => {
                thread.marks.set(saved.marks);
                thread.deadline.set(saved.deadline);
                thread.key.set(saved.key);
                thread.drawn.set(saved.drawn);
            }
            // The way in found no marks, and changed the deadline alone or
            // nothing else.
            Some(SetAside::Deadline(deadline)) => {
                thread.deadline.set(deadline);
                thread.marks.set(Marks::NONE);
            }
            None => thread.marks.set(Marks::NONE),
        }
    });
}

pin_project_lite::pin_project! {
    /// An attempt's future, polled with its context set, and with its
    /// breaker's mark `M` on the thread ([`MarkThread`]).
    #[doc(hidden)]
    #[must_use = "futures do nothing unless polled"]
    pub struct Scoped<'a, F, M> {
        #[pin]
        attempt: F,
        scope: &'a mut Scope,
        mark: M,
        // The attempt's span (feature `attempt-spans`), entered on each poll.
        span: AttemptSpan,
    }
}

impl<'a, F, M> Scoped<'a, F, M> {
    // Inlined: around every attempt (benches/instructions.sh).
    #[inline]
    pub(crate) fn new(scope: &'a mut Scope, mark: M, attempt: F, span: AttemptSpan) -> Self {
        Scoped {
            attempt,
            scope,
            mark,
            span,
        }
    }
}

impl<F: Future, M: MarkThread> Future for Scoped<'_, F, M> {
    type Output = F::Output;

    // Inlined: around every poll of every attempt (benches/instructions.sh).
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _span = this.span.enter();
        let poll = {
            let _hold = this.mark.hold();
            let attempt = this.attempt;
            in_context(this.scope, || attempt.poll(cx))
        };
        if poll.is_pending() {
            // The attempt waits on something while no retried function it
            // called is still running: its body has moved on past any
            // give-up (it handled it: a fallback, `unwrap_or_default`),
            // which is then no reason not to retry the attempt. A give-up
            // propagated with `?` or by `try_join_all` fails the attempt in
            // the poll it happens in; one inside `join_all` or
            // `FuturesUnordered` has other retried calls still running
            // beside it. See `Nested` for the shapes this cannot tell apart.
            if this.scope.in_flight == 0 {
                this.scope.inner_gave_up = false;
                // So is a refusal by a breaker inside it.
                this.mark.moved_on();
            }
            this.scope.pending();
        }
        poll
    }
}

/// Runs a plain function's attempt (or makes a closure's attempt future)
/// with its context set: as `in_context`, but with the attempt called from
/// each way in, the slow one out of line. The closure API makes every
/// attempt's future through here: with the one call site of `in_context`,
/// its success path took 238 instructions instead of 235
/// (benches/instructions.sh); the size it saves is a retried function's,
/// whose attempts are polled through `in_context`.
// Inlined: with its way out written out, rustc left it out of line, and the
// closure API's success path took 236 instructions instead of 215
// (benches/instructions.sh 1000, 2026-12-06).
#[inline]
pub(crate) fn scoped_call<R>(scope: &mut Scope, attempt: impl FnOnce() -> R) -> R {
    let (outer, usual) = THREAD.with(|thread| {
        let outer = thread.frame.replace(scope.frame);
        (outer, thread.marks.get().0 | u64::from(scope.flags) == 0)
    });
    if usual {
        let leave = Leave { outer, slow: None };
        let output = attempt();
        leave.leave(scope);
        core::mem::forget(leave);
        output
    } else {
        in_context_slow(scope, outer, attempt)
    }
}

/// The slow way in and out around a plain function's attempt (or the making
/// of a closure's attempt future): see `scoped_call`.
#[inline(never)]
fn in_context_slow<R>(scope: &mut Scope, outer: Frame, attempt: impl FnOnce() -> R) -> R {
    let mut leave = Leave { outer, slow: None };
    enter_slow_way(scope, &mut leave.slow);
    let output = attempt();
    leave.leave(scope);
    core::mem::forget(leave);
    output
}
