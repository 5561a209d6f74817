//! Testing support (feature `testing`): a `VirtualClock` installed on a
//! test's thread runs every wait of a retried call at once, under tokio,
//! smol and `futures::executor::block_on` and in blocking code, judges
//! `deadline`, `timeout`, a hedge's delay and a breaker's open period on it
//! as a real clock would, and records each decision; a thread without one
//! runs as before. The waits here are minutes long: a wait slept for real
//! would stall the test, and the exact times on the clock show none was.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::testing::VirtualClock;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Policy, RetryBudget, Stop, TimedOut};

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    TimedOut,
    Open,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

const MINUTE: Duration = Duration::from_secs(60);

/// Four attempts, waits of 10, 20 and 40 minutes between them.
const SCHEDULE: [&str; 4] = [
    "at 0ns: attempt 1 transient, retry after 600s",
    "at 600s: attempt 2 transient, retry after 1200s",
    "at 1800s: attempt 3 transient, retry after 2400s",
    "at 4200s: attempt 4 transient, stop exhausted",
];

#[retry(max = 4, base = "10m", cap = "1h", jitter = "none")]
async fn down(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Down)
}

#[retry(max = 4, base = "10m", cap = "1h", jitter = "none")]
fn down_blocking(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Down)
}

/// The schedule of `down`, run by `block_on`, on a clock of its own.
fn schedule_under(block_on: impl FnOnce(&AtomicU32) -> Result<(), Error>) {
    let clock = VirtualClock::install();
    let calls = AtomicU32::new(0);
    assert_eq!(block_on(&calls), Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(clock.elapsed(), 70 * MINUTE);
    assert_eq!(clock.take_decisions(), SCHEDULE);
    assert!(clock.take_decisions().is_empty(), "taken once");
}

#[tokio::test]
async fn under_tokio_without_a_paused_clock() {
    let clock = VirtualClock::install();
    let calls = AtomicU32::new(0);
    assert_eq!(down(&calls).await, Err(Error::Down));
    assert_eq!(clock.elapsed(), 70 * MINUTE);
    let decisions = clock.take_decisions();
    assert_eq!(decisions, SCHEDULE);
    assert_eq!(decisions[0].function, "virtual_clock::down");
}

#[test]
fn under_smol() {
    schedule_under(|calls| smol::block_on(down(calls)));
}

#[test]
fn under_futures_block_on() {
    schedule_under(|calls| futures::executor::block_on(down(calls)));
}

#[test]
fn in_a_plain_function() {
    schedule_under(down_blocking);
}

#[test]
fn in_the_closure_apis_blocking_loop() {
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(10 * MINUTE)
        .with_cap(Duration::from_secs(3600))
        .with_jitter(retry_runtime::Jitter::None);
    schedule_under(|calls| {
        policy.retrying().run_blocking(|| {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(Error::Down)
        })
    });
}

#[retry(max = 10, base = "40s", cap = "1h", jitter = "none", deadline = "200s")]
async fn until_the_deadline() -> Result<(), Error> {
    Err(Error::Down)
}

/// Waits of 40 s and 80 s fit the 200 s deadline; the third, 160 s from
/// 120 s, would pass it, so the third attempt's error comes back at once.
#[test]
fn the_deadline_is_judged_on_the_clock() {
    let clock = VirtualClock::install();
    assert_eq!(smol::block_on(until_the_deadline()), Err(Error::Down));
    assert_eq!(
        clock.take_decisions(),
        [
            "at 0ns: attempt 1 transient, retry after 40s",
            "at 40s: attempt 2 transient, retry after 80s",
            "at 120s: attempt 3 transient, stop deadline",
        ]
    );
    assert_eq!(clock.elapsed(), Duration::from_secs(120));
}

#[retry(max = 3, base = "10s", cap = "1h", jitter = "none", timeout = "30s")]
async fn takes(clock: &VirtualClock, took: Duration) -> Result<Duration, Error> {
    clock.sleep(took).await;
    Ok(took)
}

/// An attempt that waits longer than its `timeout` is cut off when the
/// timeout ends, whichever of the two waits was polled first; one that
/// waits less answers.
#[test]
fn a_timeout_ends_before_a_longer_attempt() {
    let clock = VirtualClock::install();
    let slow = futures::executor::block_on(takes(&clock, 40 * MINUTE));
    assert_eq!(slow, Err(Error::TimedOut));
    assert_eq!(
        clock.take_decisions(),
        [
            "at 30s: attempt 1 transient, retry after 10s",
            "at 70s: attempt 2 transient, retry after 20s",
            "at 120s: attempt 3 transient, stop exhausted",
        ]
    );
    let quick = futures::executor::block_on(takes(&clock, Duration::from_secs(29)));
    assert_eq!(quick, Ok(Duration::from_secs(29)));
    assert_eq!(
        clock.take_decisions(),
        ["at 149s: attempt 1 done, stop done"]
    );
}

#[retry(max = 3, hedge = "50ms")]
async fn hedged(
    clock: &VirtualClock,
    calls: &AtomicU32,
    first_takes: Duration,
) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    if call == 1 {
        clock.sleep(first_takes).await;
    }
    Ok(call)
}

/// A first attempt slower than the hedge delay is hedged at 50 ms, and the
/// hedge answers; one quicker answers alone.
#[test]
fn a_hedge_starts_after_its_delay() {
    let clock = VirtualClock::install();
    let calls = AtomicU32::new(0);
    assert_eq!(smol::block_on(hedged(&clock, &calls, MINUTE)), Ok(2));
    assert_eq!(
        clock.take_decisions(),
        [
            "at 50ms: attempt 1 running, hedge after 50ms",
            "at 50ms: attempt 2 done, stop done",
        ]
    );
    let calls = AtomicU32::new(0);
    let quick = Duration::from_millis(20);
    assert_eq!(smol::block_on(hedged(&clock, &calls, quick)), Ok(1));
    assert_eq!(
        clock.take_decisions(),
        ["at 70ms: attempt 1 done, stop done"]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[retry(max = 1, breaker = breaker)]
fn guarded(breaker: &CircuitBreaker, fail: bool) -> Result<(), Error> {
    if fail {
        Err(Error::Down)
    } else {
        Ok(())
    }
}

/// Two failures open the circuit for 30 s: a call then is refused, still
/// one at 29 s, and at 30 s a probe goes through, whose success closes it.
#[test]
fn a_breakers_open_period_is_judged_on_the_clock() {
    let clock = VirtualClock::install();
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(30))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1);
    for _ in 0..2 {
        assert_eq!(guarded(&breaker, true), Err(Error::Down));
    }
    assert_eq!(guarded(&breaker, false), Err(Error::Open));
    clock.advance(Duration::from_secs(29));
    assert_eq!(guarded(&breaker, false), Err(Error::Open));
    clock.advance(Duration::from_secs(1));
    assert_eq!(guarded(&breaker, false), Ok(()));
    assert_eq!(
        clock.take_decisions(),
        [
            "at 0ns: attempt 1 transient, stop exhausted (breaker closed)",
            "at 0ns: attempt 1 transient, stop exhausted (breaker open)",
            "at 0ns: attempt 1 refused, stop open (breaker open)",
            "at 29s: attempt 1 refused, stop open (breaker open)",
            "at 30s: attempt 1 done, stop done (breaker closed)",
        ]
    );
}

/// The budget's tokens after each decision: a failure takes one, a retry
/// is allowed while more than half are left, a success gives `ratio` back.
#[test]
fn the_budget_is_recorded_with_each_decision() {
    static BUDGET: RetryBudget = RetryBudget::new(4, 0.5);
    let clock = VirtualClock::install();
    let policy = Policy::new()
        .with_max_attempts(5)
        .with_base(Duration::from_secs(1))
        .with_jitter(retry_runtime::Jitter::None);
    let result: Result<(), Error> = policy
        .retrying()
        .budget(&BUDGET)
        .run_blocking(|| Err(Error::Down));
    assert_eq!(result, Err(Error::Down));
    let calls = AtomicU32::new(0);
    let result: Result<u32, Error> = policy
        .retrying()
        .budget(&BUDGET)
        .run_blocking(|| Ok(calls.fetch_add(1, Ordering::SeqCst)));
    assert_eq!(result, Ok(0));
    let decisions = clock.take_decisions();
    assert_eq!(
        decisions,
        [
            "at 0ns: attempt 1 transient, retry after 1s (budget 3)",
            "at 1s: attempt 2 transient, stop budget (budget 2)",
            "at 1s: attempt 1 done, stop done (budget 2.5)",
        ]
    );
    assert_eq!(decisions[1].stop, Some(Stop::Budget));
    assert_eq!(decisions[1].budget, Some(2.0));
}

/// Tests on threads of their own, as cargo runs them, each with a clock or
/// none: each sees its own time and its own decisions only, and a thread
/// without one waits on tokio's paused clock as it always did.
#[test]
fn each_thread_has_its_own_clock_or_none() {
    let with_clock = |minutes: u32| {
        std::thread::spawn(move || {
            let clock = VirtualClock::install();
            let policy = Policy::new()
                .with_max_attempts(2)
                .with_base(MINUTE * minutes)
                .with_cap(Duration::from_secs(3600))
                .with_jitter(retry_runtime::Jitter::None);
            let result: Result<(), Error> = policy.retrying().run_blocking(|| Err(Error::Down));
            assert_eq!(result, Err(Error::Down));
            (clock.elapsed(), clock.take_decisions().len())
        })
    };
    let without = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let start = tokio::time::Instant::now();
            let calls = AtomicU32::new(0);
            assert_eq!(down(&calls).await, Err(Error::Down));
            start.elapsed()
        })
    });
    let (one, two) = (with_clock(1), with_clock(2));
    assert_eq!(one.join().unwrap(), (MINUTE, 2));
    assert_eq!(two.join().unwrap(), (2 * MINUTE, 2));
    // tokio's paused clock moved by the schedule: its waits were tokio's.
    assert_eq!(without.join().unwrap(), 70 * MINUTE);
}

/// A clock installed inside another's scope shadows it, and the outer one
/// comes back, with its record, when the inner one is dropped.
#[test]
fn an_inner_clock_shadows_the_outer_one_until_dropped() {
    let outer = VirtualClock::install();
    outer.advance(MINUTE);
    {
        let inner = VirtualClock::install();
        let calls = AtomicU32::new(0);
        assert_eq!(down_blocking(&calls), Err(Error::Down));
        assert_eq!(inner.elapsed(), 70 * MINUTE);
        assert_eq!(inner.take_decisions().len(), 4);
    }
    assert_eq!(outer.elapsed(), MINUTE);
    assert!(outer.take_decisions().is_empty());
    let calls = AtomicU32::new(0);
    assert_eq!(down_blocking(&calls), Err(Error::Down));
    assert_eq!(outer.elapsed(), 71 * MINUTE);
}
