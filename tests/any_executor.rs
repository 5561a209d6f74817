//! The same retried functions under `smol::block_on`, `futures::executor::
//! block_on` and a multi-thread tokio runtime, with default features and
//! real waits of tens of milliseconds: the waits, `deadline`, `timeout`, the
//! breaker's open period and the closure API behave alike, and nothing
//! panics for want of a runtime (issue 18; DESIGN.md section 4, point 14).
//!
//! Real clocks on a shared machine: only lower bounds on time and exact
//! counts are checked, with margins of tens of milliseconds, never an upper
//! bound on time.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Jitter, Policy, TimedOut};

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Transient,
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

fn elapsed_since(start: Instant) -> Duration {
    start.elapsed()
}

#[retry(max = 3, base = "20ms", jitter = "none")]
async fn always_fails(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Transient)
}

/// Three attempts, and between them waits of 20 ms and 40 ms.
async fn waits() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(always_fails(&calls).await, Err(Error::Transient));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = elapsed_since(start);
    assert!(took >= Duration::from_millis(60), "{took:?}");
}

#[retry(max = 10, base = "40ms", jitter = "none", deadline = "200ms")]
async fn fails_until_the_deadline(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Transient)
}

/// Waits of 40 ms and 80 ms fit in the 200 ms deadline; the third, 160 ms
/// from about 120 ms, would pass it, so the third attempt's error comes
/// back at once, without sleeping.
async fn deadline() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(
        fails_until_the_deadline(&calls).await,
        Err(Error::Transient)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = elapsed_since(start);
    assert!(took >= Duration::from_millis(120), "{took:?}");
}

#[retry(max = 3, base = "10ms", jitter = "none", timeout = "30ms")]
async fn hangs(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(())
}

/// Each attempt is cut off after 30 ms: three of them, with waits of 10 ms
/// and 20 ms between.
async fn timeout() {
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    assert_eq!(hangs(&calls).await, Err(Error::TimedOut));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = elapsed_since(start);
    assert!(took >= Duration::from_millis(120), "{took:?}");
}

#[retry(max = 1, breaker = breaker)]
async fn guarded(breaker: &CircuitBreaker, calls: &AtomicU32, fail: bool) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err(Error::Transient)
    } else {
        Ok(())
    }
}

/// Two failures in a row open the circuit for 50 ms: calls in it are
/// refused without running; after it a probe runs, and its success closes
/// the circuit.
async fn breaker_open_period() {
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(2)
        .with_min_calls(1000)
        .with_open_for(Duration::from_millis(50))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1);
    let calls = AtomicU32::new(0);
    for _ in 0..2 {
        assert_eq!(guarded(&breaker, &calls, true).await, Err(Error::Transient));
    }
    let opened = Instant::now();
    assert_eq!(guarded(&breaker, &calls, false).await, Err(Error::Open));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Blocks the executor's thread: the breaker only reads the clock.
    std::thread::sleep(Duration::from_millis(60));
    assert!(elapsed_since(opened) >= Duration::from_millis(50));
    assert_eq!(guarded(&breaker, &calls, false).await, Ok(()));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(guarded(&breaker, &calls, false).await, Ok(()));
}

/// The closure API: waits of 20 ms and 40 ms, then a success.
async fn closure_api() {
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(20))
        .with_jitter(Jitter::None);
    let calls = AtomicU32::new(0);
    let start = Instant::now();
    let result: Result<u32, std::io::Error> = policy
        .retry(|| async {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if call < 3 {
                Err(std::io::ErrorKind::Interrupted.into())
            } else {
                Ok(call)
            }
        })
        .await;
    assert_eq!(result.unwrap(), 3);
    let took = elapsed_since(start);
    assert!(took >= Duration::from_millis(60), "{took:?}");
}

/// A multi-thread tokio runtime, the future run on a worker thread.
fn tokio_multi_thread<F: Future<Output = ()> + Send + 'static>(future: F) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async { tokio::spawn(future).await.unwrap() });
}

macro_rules! on {
    ($executor:ident, $run:expr) => {
        mod $executor {
            #[test]
            fn waits() {
                $run(super::waits());
            }

            #[test]
            fn deadline() {
                $run(super::deadline());
            }

            #[test]
            fn timeout() {
                $run(super::timeout());
            }

            #[test]
            fn breaker_open_period() {
                $run(super::breaker_open_period());
            }

            #[test]
            fn closure_api() {
                $run(super::closure_api());
            }
        }
    };
}

on!(smol_block_on, smol::block_on);
on!(futures_executor_block_on, futures::executor::block_on);
on!(tokio_multi_thread_runtime, super::tokio_multi_thread);

/// Many calls waiting at once on the runtime-free timer, from several
/// threads, each woken no sooner than its own wait.
#[test]
fn many_waits_at_once_outside_tokio() {
    let threads: Vec<_> = (0..4_u64)
        .map(|thread| {
            std::thread::spawn(move || {
                futures::executor::block_on(async move {
                    let waits = (0..8_u64).map(|i| async move {
                        let wait = Duration::from_millis(5 * ((i + thread) % 8) + 5);
                        let policy = Policy::new()
                            .with_max_attempts(2)
                            .with_base(wait)
                            .with_jitter(Jitter::None);
                        let start = Instant::now();
                        let mut failed = false;
                        let result: Result<(), std::io::Error> = policy
                            .retry(|| {
                                let first = !std::mem::replace(&mut failed, true);
                                async move {
                                    if first {
                                        Err(std::io::ErrorKind::Interrupted.into())
                                    } else {
                                        Ok(())
                                    }
                                }
                            })
                            .await;
                        assert!(result.is_ok());
                        let took = start.elapsed();
                        assert!(took >= wait, "{wait:?}: {took:?}");
                    });
                    futures::future::join_all(waits).await;
                });
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Polls `future` once inside a current-thread tokio runtime, so that its
/// first wait is made on tokio's timer; the runtime is then left idle, or
/// dropped.
fn first_poll_on_tokio<F: Future + Unpin>(
    future: &mut F,
    drop_runtime: bool,
) -> Option<tokio::runtime::Runtime> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(std::pin::Pin::new(&mut *future).poll(&mut cx).is_pending());
    });
    (!drop_runtime).then_some(runtime)
}

/// Runs `run` on a thread of its own, failing if it has not returned within
/// 30 s (it would otherwise hang the suite).
fn returns<T: Send + 'static>(run: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)));
    });
    match answer.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("the call never returned"),
    }
}

/// A call whose first wait was made on tokio's timer, then moved to another
/// executor while that runtime stands idle: tokio's timer is never driven
/// again, so the wait goes on on the timer thread.
#[test]
fn a_wait_begun_on_an_idle_tokio_runtime_ends_on_another_executor() {
    returns(|| {
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let counted = std::sync::Arc::clone(&calls);
        let mut call = Box::pin(async move { always_fails(&counted).await });
        let _idle = first_poll_on_tokio(&mut call, false);
        assert_eq!(smol::block_on(call), Err(Error::Transient));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    });
}

/// The same, with the runtime dropped before the call goes on: no panic
/// for want of a runtime, and the caller gets the last error.
#[test]
fn a_wait_begun_on_a_dropped_tokio_runtime_ends_on_another_executor() {
    returns(|| {
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let counted = std::sync::Arc::clone(&calls);
        let mut call = Box::pin(async move { hangs(&counted).await });
        first_poll_on_tokio(&mut call, true);
        assert_eq!(futures::executor::block_on(call), Err(Error::TimedOut));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    });
}

#[retry(max = 3, base = "1ms", deadline = "1s")]
async fn answers(calls: &AtomicU32) -> Result<u32, Error> {
    Ok(calls.fetch_add(1, Ordering::SeqCst) + 1)
}

/// docs/runtimes.md, exactly: on a thread still inside the context of a
/// tokio runtime that has shut down (here an entered handle, as
/// `Handle::block_on` or a `spawn_blocking` task outliving
/// `shutdown_timeout` are), a call that never waits works, and a wait first
/// made there panics, as `tokio::time::sleep` does: tokio cannot say that
/// its runtime is gone without panicking.
#[test]
fn inside_a_shut_down_runtimes_context_only_a_call_that_waits_panics() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    drop(runtime);
    let _inside = handle.enter();
    let calls = AtomicU32::new(0);
    assert_eq!(futures::executor::block_on(answers(&calls)), Ok(1));
    let waits = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        futures::executor::block_on(always_fails(&calls))
    }));
    assert!(waits.is_err(), "tokio no longer panics here: {waits:?}");
}
