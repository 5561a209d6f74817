//! docs/runtimes.md, exactly: in a tokio runtime built without its timer
//! (`Builder::enable_time` off), what panics (a wait between attempts, a
//! zero one included; a `timeout` or a hedge whose attempt does not answer
//! at its first poll) and what works (`deadline`, a breaker's open period, a
//! `timeout` or a hedge whose attempt answers at its first poll, a hedged
//! call with `max = 1`). And a wait begun on one tokio runtime and moved
//! into another stays on the first one's timer: it ends when that runtime
//! shuts down.
//!
//! No timer runs here, so nothing waits: outcomes and counts only.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Policy, TimedOut};

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Busy,
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

/// Runs `future` to its end in a current-thread runtime without a timer:
/// `Err` if it panicked.
fn without_timer<F: Future>(future: F) -> Result<F::Output, ()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(future))).map_err(|_| ())
}

/// Yields once: the attempt does not answer at its first poll.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

#[retry(max = 2, base = "1ms")]
async fn fails_once(calls: &AtomicU32) -> Result<u32, Error> {
    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(Error::Busy);
    }
    Ok(2)
}

#[test]
fn a_wait_between_attempts_panics() {
    let calls = AtomicU32::new(0);
    assert!(without_timer(fails_once(&calls)).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_zero_wait_between_attempts_panics_too() {
    let policy = Policy::new().with_max_attempts(2).with_base(Duration::ZERO);
    let calls = AtomicU32::new(0);
    let call = policy.retry(|| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Err::<(), Error>(Error::Busy)
    });
    assert!(without_timer(call).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[retry(max = 3, base = "1ms", timeout = "10ms", deadline = "1s")]
async fn answers(calls: &AtomicU32, pend: bool) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    if pend {
        yield_once().await;
    }
    Ok(1)
}

#[test]
fn a_timeout_panics_only_when_the_attempt_does_not_answer_at_once() {
    let calls = AtomicU32::new(0);
    assert_eq!(without_timer(answers(&calls, false)), Ok(Ok(1)));
    assert!(without_timer(answers(&calls, true)).is_err());
}

#[retry(max = 2, hedge = "10ms", deadline = "1s")]
async fn hedged(calls: &AtomicU32, pend: bool) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    if pend {
        yield_once().await;
    }
    Ok(call)
}

#[retry(max = 1, hedge = "10ms")]
async fn hedged_once(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    yield_once().await;
    Ok(1)
}

/// The hedge delay's timer is set when attempt 1 is still running after
/// its first poll, and only then: not for an attempt that answers at once,
/// nor for `max = 1`, which never hedges.
#[test]
fn a_hedge_panics_only_when_the_attempt_does_not_answer_at_once() {
    let calls = AtomicU32::new(0);
    assert_eq!(without_timer(hedged(&calls, false)), Ok(Ok(1)));
    let calls = AtomicU32::new(0);
    assert!(without_timer(hedged(&calls, true)).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let calls = AtomicU32::new(0);
    assert_eq!(without_timer(hedged_once(&calls)), Ok(Ok(1)));
}

#[retry(max = 1, breaker = breaker)]
async fn guarded(breaker: &CircuitBreaker, fail: bool) -> Result<(), Error> {
    if fail {
        Err(Error::Busy)
    } else {
        Ok(())
    }
}

/// The open period only reads the clock.
#[test]
fn a_breakers_open_period_works() {
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(1)
        .with_min_calls(1000)
        .with_open_for(Duration::from_millis(500))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1);
    let outcome = without_timer(async {
        assert_eq!(guarded(&breaker, true).await, Err(Error::Busy));
        // Well within the open period, however slow the machine.
        assert_eq!(guarded(&breaker, false).await, Err(Error::Open));
        std::thread::sleep(Duration::from_millis(600));
        guarded(&breaker, false).await
    });
    assert_eq!(outcome, Ok(Ok(())));
}

#[retry(max = 3, base = "20ms", jitter = "none")]
async fn always_fails(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Busy)
}

/// A wait made on runtime A's timer, then polled in runtime B while A
/// stands idle, stays on A's timer: it ends when A shuts down, which fires
/// every timer it holds (so the rest of the call runs on B's).
#[test]
fn a_wait_moved_into_another_runtime_stays_on_the_first_ones_timer() {
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&calls);
    let mut call = Box::pin(async move { always_fails(&counted).await });
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    first.block_on(async {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let (dropped, drop_it) = std::sync::mpsc::channel::<()>();
    let dropper = std::thread::spawn(move || {
        // Until B has polled the wait; then A shuts down.
        drop_it.recv().unwrap();
        drop(first);
    });
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = second.block_on(async {
        let mut told = Some(dropped);
        std::future::poll_fn(|cx| {
            let poll = call.as_mut().poll(cx);
            if let Some(dropped) = told.take() {
                // Still waiting on A's timer, though B's has run.
                assert!(poll.is_pending());
                dropped.send(()).unwrap();
            }
            poll
        })
        .await
    });
    dropper.join().unwrap();
    assert_eq!(outcome, Err(Error::Busy));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// The test above passes as well when the wait leaves A's timer at its
/// first poll in B (it ends 20 ms later either way). This one tells them
/// apart: while A stands idle, no amount of B's time ends the wait.
#[test]
fn a_wait_moved_into_another_runtime_waits_while_the_first_stands_idle() {
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&calls);
    let mut call = Box::pin(async move { always_fails(&counted).await });
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    first.block_on(async {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    });
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    second.block_on(async {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
        // Three times the 20 ms wait, on B's timer.
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(call.as_mut().poll(&mut cx).is_pending());
    });
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the wait ended while A stood idle"
    );
    drop(first);
    assert_eq!(second.block_on(call), Err(Error::Busy));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}
