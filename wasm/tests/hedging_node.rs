//! Hedging on `wasm32-unknown-unknown` in node: the hedge delay, `timeout`
//! and `deadline` of a hedged call run on the host's timer and clock, and a
//! hedged call whose attempts all fail returns the last failure.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use core::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::{retry, TimedOut};
use wasm_bindgen_test::wasm_bindgen_test;

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Busy(u32),
    TimedOut,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[retry(max = 3, hedge = "20ms")]
async fn third_answers(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    if call < 3 {
        core::future::pending::<()>().await;
    }
    Ok(call)
}

#[wasm_bindgen_test]
async fn hedges_start_on_the_hosts_timer() {
    let calls = AtomicU32::new(0);
    let start = now_ms();
    assert_eq!(third_answers(&calls).await, Ok(3));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(now_ms() - start + 1.0 >= 40.0);
}

#[retry(max = 3, hedge = "50ms", timeout = "10ms")]
async fn hangs(calls: &AtomicU32) -> Result<u32, Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    core::future::pending::<()>().await;
    Ok(0)
}

#[wasm_bindgen_test]
async fn a_timeout_shorter_than_the_hedge_delay_cuts_each_attempt_off() {
    let calls = AtomicU32::new(0);
    assert_eq!(hangs(&calls).await, Err(Error::TimedOut));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[retry(max = 3, hedge = "5ms", base = "1ms")]
async fn all_fail(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    // Attempt 1 fails last, by a margin wide enough (100 ms and more) that
    // a host timer late under load does not change the order.
    let wait = [300, 150, 40][call as usize - 1];
    // A wait on the host's timer, through a retried call of its own.
    let _ = pause(wait).await;
    Err(Error::Busy(call))
}

/// Fails once, then answers after `millis` ms on the host's timer.
async fn pause(millis: u64) -> Result<(), Error> {
    let first = core::cell::Cell::new(true);
    retry_runtime::Policy::new()
        .with_max_attempts(2)
        .with_base(core::time::Duration::from_millis(millis))
        .with_jitter(retry_runtime::Jitter::None)
        .retry(|| {
            let fail = first.replace(false);
            async move {
                if fail {
                    Err(Error::Busy(0))
                } else {
                    Ok(())
                }
            }
        })
        .await
}

#[wasm_bindgen_test]
async fn the_last_failure_to_arrive_is_returned() {
    let calls = AtomicU32::new(0);
    assert_eq!(all_fail(&calls).await, Err(Error::Busy(1)));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}
