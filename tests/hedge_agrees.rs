//! A hedged call decides as the sequential loop does (DESIGN §4.15): what
//! stops the loop stops the hedged call from starting any further attempt,
//! for good; the stop reason and the budget tokens taken are the loop's;
//! and a wait that ends exactly at the deadline is made, unless a
//! per-attempt timeout would leave the attempt no time. Each case runs the
//! same script through the loop and through a hedged call whose delay is
//! long enough that attempts overlap only where the case says so, on a
//! paused clock.

use std::sync::Mutex;
use std::time::Duration;

use retry_runtime::hedge::Hedge;
use retry_runtime::{last_call, Policy, RetryBudget, Stop, TimedOut};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Error {
    /// Retryable, from attempt `n`.
    Busy(u32),
    /// Retryable, with a server hint, from attempt `n`.
    Later(u32),
    /// An inner retried call's error, after it gave up.
    Inner,
    TimedOut,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

fn retryable(_: &Error) -> bool {
    true
}

fn hint(error: &Error) -> Option<Duration> {
    matches!(error, Error::Later(_)).then_some(Duration::from_secs(5))
}

/// What each attempt does: how long it runs, then what it returns.
type Script = fn(u32) -> (u64, Result<u32, Error>);

/// When each attempt started, in ms after the call.
#[derive(Default)]
struct Log(Mutex<Vec<(u32, u64)>>);

impl Log {
    fn starts(&self) -> Vec<(u32, u64)> {
        self.0.lock().unwrap().clone()
    }
}

async fn attempt(log: &Log, origin: Instant, script: Script) -> Result<u32, Error> {
    let number = retry_runtime::current_attempt().unwrap().attempt();
    let millis = u64::try_from(origin.elapsed().as_millis()).unwrap();
    log.0.lock().unwrap().push((number, millis));
    let (took, outcome) = script(number);
    sleep(Duration::from_millis(took)).await;
    if outcome == Err(Error::Inner) {
        // A retried function of its own, which retries and gives up.
        return Policy::new()
            .with_max_attempts(2)
            .with_base(Duration::from_millis(1))
            .on(retryable)
            .run(|| async { Err::<u32, _>(Error::Inner) })
            .await;
    }
    outcome
}

/// The call's outcome, its stop reason, and the budget tokens it left.
type Ended = (Result<u32, Error>, Option<Stop>, f64);

async fn sequential(policy: &Policy<TimedOut>, log: &Log, script: Script) -> Ended {
    let budget = RetryBudget::new(10, 0.0);
    let origin = Instant::now();
    let outcome = policy
        .on(retryable)
        .retry_after(hint)
        .budget(&budget)
        .run(|| attempt(log, origin, script))
        .await;
    (
        outcome,
        last_call().map(|last| last.reason()),
        budget.tokens(),
    )
}

async fn hedged(policy: &Policy<TimedOut>, delay: u64, log: &Log, script: Script) -> Ended {
    let budget = RetryBudget::new(10, 0.0);
    let origin = Instant::now();
    let outcome = policy
        .on(retryable)
        .retry_after(hint)
        .budget(&budget)
        .hedge(Hedge::after(Duration::from_millis(delay)))
        .run(|| attempt(log, origin, script))
        .await;
    (
        outcome,
        last_call().map(|last| last.reason()),
        budget.tokens(),
    )
}

/// Of the form that may cut attempts off, with no timeout unless a test
/// sets one.
fn policy(max: u32) -> Policy<TimedOut> {
    Policy::new()
        .with_max_attempts(max)
        .with_base(Duration::ZERO)
        .with_cap(Duration::from_secs(1))
        .into()
}

#[tokio::test(start_paused = true)]
async fn a_hint_longer_than_cap_stops_new_attempts_for_good() {
    // Attempt 2 (the hedge at 500 ms) fails at 510 ms with a hint of 5 s,
    // longer than `cap`: no attempt starts any more, and attempt 1's
    // failure at 800 ms does not start one again.
    let log = Log::default();
    let (outcome, stop, _) = hedged(&policy(3), 500, &log, |n| match n {
        1 => (800, Err(Error::Busy(1))),
        _ => (10, Err(Error::Later(n))),
    })
    .await;
    assert_eq!(log.starts(), [(1, 0), (2, 500)]);
    // The last failure to arrive, and the reason the loop would give.
    assert_eq!(outcome, Err(Error::Busy(1)));
    assert_eq!(stop, Some(Stop::HintTooLong));
}

#[tokio::test(start_paused = true)]
async fn the_hint_stop_is_the_loops() {
    let script: Script = |n| match n {
        1 => (10, Err(Error::Later(1))),
        _ => (10, Ok(n)),
    };
    let (log, hedged_log) = (Log::default(), Log::default());
    let expected = sequential(&policy(3), &log, script).await;
    let got = hedged(&policy(3), 10_000, &hedged_log, script).await;
    assert_eq!(expected.1, Some(Stop::HintTooLong));
    assert_eq!(got, expected);
    assert_eq!(hedged_log.starts(), log.starts());
}

#[tokio::test(start_paused = true)]
async fn an_inner_give_up_on_the_last_attempt_is_exhausted_and_takes_its_token() {
    let script: Script = |n| match n {
        1 => (10, Err(Error::Busy(1))),
        _ => (10, Err(Error::Inner)),
    };
    let (log, hedged_log) = (Log::default(), Log::default());
    let expected = sequential(&policy(2), &log, script).await;
    let got = hedged(&policy(2), 10_000, &hedged_log, script).await;
    assert_eq!(expected, (Err(Error::Inner), Some(Stop::Exhausted), 8.0));
    assert_eq!(got, expected);
    assert_eq!(hedged_log.starts(), log.starts());
}

#[tokio::test(start_paused = true)]
async fn an_inner_give_up_on_a_middle_attempt_is_nested_in_both() {
    let script: Script = |n| match n {
        1 => (10, Err(Error::Inner)),
        _ => (10, Ok(n)),
    };
    let (log, hedged_log) = (Log::default(), Log::default());
    let expected = sequential(&policy(3), &log, script).await;
    let got = hedged(&policy(3), 10_000, &hedged_log, script).await;
    assert_eq!(expected, (Err(Error::Inner), Some(Stop::Nested), 9.0));
    assert_eq!(got, expected);
}

#[tokio::test(start_paused = true)]
async fn a_failure_exactly_at_the_deadline_is_retried_as_the_loop_retries_it() {
    // Attempt 1 fails at the deadline itself: a wait of nothing ends
    // exactly there, and the loop makes the retry.
    let script: Script = |n| match n {
        1 => (300, Err(Error::Busy(1))),
        _ => (0, Ok(n)),
    };
    let policy = policy(3).with_deadline(Duration::from_millis(300));
    let (log, hedged_log) = (Log::default(), Log::default());
    let expected = sequential(&policy, &log, script).await;
    let got = hedged(&policy, 10_000, &hedged_log, script).await;
    assert_eq!(log.starts(), [(1, 0), (2, 300)]);
    assert_eq!(expected.0, Ok(2));
    assert_eq!(got, expected);
    assert_eq!(hedged_log.starts(), log.starts());
}

#[tokio::test(start_paused = true)]
async fn with_a_timeout_a_failure_at_the_deadline_is_not_retried() {
    // A retry starting at the deadline would have no time to run.
    let script: Script = |n| match n {
        1 => (300, Err(Error::Busy(1))),
        _ => (0, Ok(n)),
    };
    let policy = policy(3)
        .with_deadline(Duration::from_millis(300))
        .with_timeout(Duration::from_secs(1));
    let (log, hedged_log) = (Log::default(), Log::default());
    let expected = sequential(&policy, &log, script).await;
    let got = hedged(&policy, 10_000, &hedged_log, script).await;
    assert_eq!(expected.1, Some(Stop::Deadline));
    assert_eq!(got, expected);
    assert_eq!(hedged_log.starts(), [(1, 0)]);
}

#[tokio::test(start_paused = true)]
async fn a_hedge_due_exactly_at_the_deadline_starts() {
    // The hedge's wait ends exactly at the deadline: made, as the loop
    // makes such a wait.
    let log = Log::default();
    let policy = policy(3).with_deadline(Duration::from_millis(500));
    let (outcome, _, _) = hedged(&policy, 500, &log, |n| match n {
        1 => (1000, Ok(1)),
        _ => (10, Ok(n)),
    })
    .await;
    assert_eq!(log.starts(), [(1, 0), (2, 500)]);
    assert_eq!(outcome, Ok(2));
    // With a per-attempt timeout it would have no time: none starts, and
    // attempt 1, cut off at the deadline, is not retried either.
    let log = Log::default();
    let timed = policy.with_timeout(Duration::from_secs(2));
    let (outcome, _, _) = hedged(&timed, 500, &log, |n| match n {
        1 => (1000, Ok(1)),
        _ => (10, Ok(n)),
    })
    .await;
    assert_eq!(log.starts(), [(1, 0)]);
    assert_eq!(outcome, Err(Error::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn an_inner_give_up_stops_new_attempts_for_good() {
    // Attempt 2 (the hedge at 500 ms) fails at 510 ms because a retried
    // function it called gave up: no attempt starts any more, and attempt
    // 1's own failure at 800 ms does not start one again.
    let log = Log::default();
    let (outcome, stop, _) = hedged(&policy(3), 500, &log, |n| match n {
        1 => (800, Err(Error::Busy(1))),
        _ => (10, Err(Error::Inner)),
    })
    .await;
    assert_eq!(log.starts(), [(1, 0), (2, 500)]);
    assert_eq!(outcome, Err(Error::Busy(1)));
    assert_eq!(stop, Some(Stop::Nested));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_stop_is_not_undone_by_a_later_failure() {
    // Attempt 2 fails at 510 ms with a hint (5 s, within `cap`) whose wait
    // would end past the deadline at 1 s: no attempt starts any more, and
    // attempt 1's failure at 800 ms, when a retry at once would still be
    // in time, does not start one again.
    let log = Log::default();
    let policy = policy(3)
        .with_cap(Duration::from_secs(10))
        .with_deadline(Duration::from_secs(1));
    let (outcome, stop, _) = hedged(&policy, 500, &log, |n| match n {
        1 => (800, Err(Error::Busy(1))),
        _ => (10, Err(Error::Later(n))),
    })
    .await;
    assert_eq!(log.starts(), [(1, 0), (2, 500)]);
    assert_eq!(outcome, Err(Error::Busy(1)));
    assert_eq!(stop, Some(Stop::Deadline));
}
