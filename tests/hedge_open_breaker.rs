//! A hedged call whose failed attempt finds the circuit open (opened by
//! that failure, or already open) and has no other attempt running returns
//! that attempt's error at once, as the retry loop does (docs/breaker.md:
//! "A failed attempt is not retried either once the circuit has opened: the
//! caller gets that error without the wait"; docs/hedging.md: each attempt
//! follows the breaker rules of an attempt of the retry loop). It used to
//! wait out the server's hint first, only for the retry to be refused.
//! Paused clock: exact times.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::hedge::Hedge;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Policy, TimedOut};
use tokio::time::{sleep, Instant};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Error {
    Busy(u32),
    Open,
    TimedOut,
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

/// The server asks for a second before the next try.
fn hint(_: &Error) -> Option<Duration> {
    Some(Duration::from_secs(1))
}

/// Opens after one failure, for a minute.
const fn breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(1)
        .with_min_calls(1000)
        .with_open_for(Duration::from_secs(60))
        .with_jitter(0.0)
}

static OPENED_BY_THE_CALL: CircuitBreaker = breaker();

#[retry(max = 3, hedge = "50ms", cap = "10s", retry_after = hint, breaker = &OPENED_BY_THE_CALL)]
async fn fails_with_a_hint(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    sleep(Duration::from_millis(5)).await;
    Err(Error::Busy(call))
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_opens_the_circuit_is_returned_without_the_wait() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(fails_with_a_hint(&calls).await, Err(Error::Busy(1)));
    assert_eq!(OPENED_BY_THE_CALL.state(), CircuitState::Open);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::from_millis(5));
}

/// The closure API, with the circuit opened by an operator while the
/// attempt ran.
#[tokio::test(start_paused = true)]
async fn a_failure_that_finds_the_circuit_open_is_returned_without_the_wait() {
    let breaker = breaker().with_consecutive_failures(0);
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_cap(Duration::from_secs(10));
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    let call = policy
        .retrying()
        .retry_after(hint)
        .breaker(&breaker)
        .hedge(Hedge::after(Duration::from_millis(50)))
        .run(|| async {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            sleep(Duration::from_millis(5)).await;
            Err::<u32, Error>(Error::Busy(call))
        });
    let (outcome, ()) = tokio::join!(call, async {
        sleep(Duration::from_millis(2)).await;
        breaker.force_open();
    });
    assert_eq!(outcome, Err(Error::Busy(1)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::from_millis(5));
}

/// Another attempt still running goes on: the call ends with the last
/// failure to arrive, when it arrives, and starts nothing more.
#[tokio::test(start_paused = true)]
async fn attempts_already_running_go_on() {
    let breaker = breaker();
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_cap(Duration::from_secs(10));
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    let outcome: Result<u32, Error> = policy
        .retrying()
        .retry_after(hint)
        .breaker(&breaker)
        .hedge(Hedge::after(Duration::from_millis(10)))
        .run(|| async {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            // Attempt 1 fails at 20 ms, the hedge (from 10 ms) at 40 ms.
            sleep(Duration::from_millis(if call == 1 { 20 } else { 30 })).await;
            Err(Error::Busy(call))
        })
        .await;
    assert_eq!(outcome, Err(Error::Busy(2)));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(start.elapsed(), Duration::from_millis(40));
}
