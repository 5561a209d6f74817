//! The state of one hedged call (see `call` for how it runs, `settle` for
//! how an attempt's answer is judged, and the steps both take when no
//! attempt may start for now, or any more).

use core::time::Duration;

use super::parts::Setup;
use crate::call_state::CallState;
use crate::clock::{Clock, Instant};
use crate::decision::Stop;
use crate::rules::Outcome;
use crate::timeout::Limit;
// The one timer of a hedged call: the next start.
use crate::sleep::Sleep as Timer;

pin_project_lite::pin_project! {
    /// A hedged call in flight. Made by [`Hedged::new`]; its output is the
    /// answer that ended the call, or the last failure.
    #[project = This]
    #[must_use = "futures do nothing unless polled"]
    pub struct Hedged<'p, R, Mk, J, S, L = Limit<<R as Outcome>::Error>>
    where
        R: Outcome,
    {
        pub(super) setup: Setup<'p, R, L>,
        // The call's state, the retry loop's (attempt number, key,
        // deadline), which decides on its failures; every attempt holds a
        // breaker's permit of its own.
        pub(super) call: CallState<'p>,
        pub(super) make: Mk,
        pub(super) judge: J,
        // Attempts started so far.
        pub(super) started: u32,
        // The hedge delay, read once per call.
        pub(super) delay: Duration,
        // The wait before the next start, for tracing and metrics.
        pub(super) wait: Duration,
        // When the next attempt is due, if one may start.
        pub(super) next: Option<Instant>,
        // The latest instant a server named (a failure's hint): no attempt
        // starts before it, whichever attempt fails next.
        pub(super) named: Option<Instant>,
        // Why no further attempt will start, once none may.
        pub(super) stop: Stop,
        // What stops the retry loop stopped the call: no attempt starts
        // any more, whatever fails later.
        pub(super) halted: bool,
        // The next start retries a failure (which took a token): no hedge.
        pub(super) retrying: bool,
        // The last failure to arrive, with whether a retried function its
        // attempt called gave up after retrying (the call passes the mark
        // on), and whether it is an attempt's failure on a refusal that the
        // rules do not retry (returned, it is not retryable, as it is from
        // the retry loop, and no give-up).
        pub(super) last: Option<(R, bool, bool)>,
        #[pin]
        pub(super) timer: Option<Timer>,
        // The instant `timer` is set for.
        pub(super) armed: Option<Instant>,
        // Attempt 1 runs and the hedge after it is not scheduled yet: the
        // clock is read only once its first poll left it running.
        pub(super) unscheduled: bool,
        #[pin]
        pub(super) slots: S,
    }
}

impl<'p, R: Outcome, Mk, J, S, L> Hedged<'p, R, Mk, J, S, L> {
    /// A call that starts its first attempt when first polled.
    pub fn new(setup: Setup<'p, R, L>, slots: S, judge: J, make: Mk) -> Self {
        crate::RetryBudget::first_attempt(setup.budget);
        Hedged {
            call: CallState::new(setup.policy, setup.name, Clock::Async),
            setup,
            make,
            judge,
            started: 0,
            delay: Duration::ZERO,
            wait: Duration::ZERO,
            next: None,
            named: None,
            stop: Stop::Exhausted,
            halted: false,
            retrying: false,
            last: None,
            timer: None,
            armed: None,
            unscheduled: false,
            slots,
        }
    }
}
