//! `retry-runtime` with default features on `wasm32-unknown-unknown`, in
//! node: the attribute, the closure API, `deadline`, `timeout`, the budget
//! and the breaker, with waits on the host's timer and time from its clock;
//! idempotency keys and jitter from the host's crypto (issue 18; DESIGN.md
//! section 4, point 14).
//!
//! `.ci/wasm` runs this twice and checks that the `key=` and `jitter=` lines
//! printed differ between the runs: two clients never draw the same.
//!
//! Real time on a shared machine: lower bounds on time and exact counts
//! only.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;

use retry_runtime::{
    current_attempt, retry, retry_after, CircuitBreaker, CircuitOpen, IdempotencyKey, Jitter,
    Policy, RetryBudget, TimedOut,
};
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

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

/// The host's clock, in milliseconds, read apart from the crate's.
fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// The time since `start`, in milliseconds, with 1 ms for `Date.now`'s
/// resolution.
fn took_ms(start: f64) -> f64 {
    now_ms() - start + 1.0
}

#[retry(max = 3, base = "20ms", jitter = "none")]
async fn always_fails(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Transient)
}

#[wasm_bindgen_test]
async fn waits_are_the_hosts_timer() {
    let calls = AtomicU32::new(0);
    let start = now_ms();
    assert_eq!(always_fails(&calls).await, Err(Error::Transient));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = took_ms(start);
    assert!(took >= 60.0, "{took} ms");
}

#[retry(max = 10, base = "40ms", jitter = "none", deadline = "200ms")]
async fn fails_until_the_deadline(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Transient)
}

/// Waits of 40 and 80 ms fit the 200 ms deadline; the next, 160 ms from
/// about 120 ms, would pass it.
#[wasm_bindgen_test]
async fn the_deadline_runs_on_the_hosts_clock() {
    let calls = AtomicU32::new(0);
    let start = now_ms();
    assert_eq!(
        fails_until_the_deadline(&calls).await,
        Err(Error::Transient)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = took_ms(start);
    assert!(took >= 120.0, "{took} ms");
}

#[retry(max = 3, base = "10ms", jitter = "none", timeout = "30ms")]
async fn hangs(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    core::future::pending::<()>().await;
    Ok(())
}

#[wasm_bindgen_test]
async fn timeouts_cut_attempts_off() {
    let calls = AtomicU32::new(0);
    let start = now_ms();
    assert_eq!(hangs(&calls).await, Err(Error::TimedOut));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let took = took_ms(start);
    assert!(took >= 120.0, "{took} ms");
}

/// A retried function's future is `Send` when its body's is, on a JS host
/// too: the host's timer handles stay off the future.
#[wasm_bindgen_test]
fn retried_futures_stay_send() {
    fn send<T: Send>(_: &T) {}
    let calls = AtomicU32::new(0);
    send(&always_fails(&calls));
    send(&hangs(&calls));
}

/// `Retry-After` at the current time reads the host's wall clock
/// (`SystemTime::now` panics on this target).
#[wasm_bindgen_test]
fn retry_after_reads_the_hosts_wall_clock() {
    use retry_runtime::retry_after::parse;
    assert_eq!(parse("120"), Some(Duration::from_secs(120)));
    assert_eq!(parse("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
    let far = parse("Fri, 01 Jan 2100 00:00:00 GMT").expect("a date");
    assert!(far > Duration::from_secs(86_400 * 365 * 50));
}

/// A failure whose server asked for a wait: its `Retry-After` value.
#[derive(Debug)]
struct Hinted(String);

thread_local! {
    /// When attempt 1 failed, the instant its hint names, and when attempt
    /// 2 started, each on the host's `Date.now()`.
    static TIMES: core::cell::Cell<(f64, f64, f64)> = const { core::cell::Cell::new((0.0, 0.0, 0.0)) };
}

/// Attempt 1 fails with `Retry-After` as delay-seconds (`date` false: 1
/// second from the answer) or as an HTTP-date (the next whole second but
/// one, on the host's wall clock); attempt 2 succeeds.
#[retry(max = 2, base = "1ms", jitter = "none", retry_after = |hinted: &Hinted| retry_after::parse(&hinted.0))]
async fn told_when(date: bool) -> Result<(), Hinted> {
    let now = now_ms();
    if current_attempt().map(|attempt| attempt.attempt()) == Some(2) {
        TIMES.with(|times| {
            let (failed, named, _) = times.get();
            times.set((failed, named, now));
        });
        return Ok(());
    }
    let (value, named) = if date {
        let named = (now / 1000.0).floor() * 1000.0 + 2000.0;
        let instant = js_sys::Date::new_0();
        let _ = instant.set_time(named);
        (String::from(instant.to_utc_string()), named)
    } else {
        ("1".to_owned(), now + 1000.0)
    };
    TIMES.with(|times| times.set((now, named, 0.0)));
    Err(Hinted(value))
}

/// Never early, on the host's timer and clocks (docs/semantics.md, rule
/// 3): the retry starts no sooner than the instant `Retry-After` named,
/// measured from the failed answer for delay-seconds and on the wall
/// clock for an HTTP-date (read with `Date.now()`, whole milliseconds,
/// hence the 1 ms allowed on a delay).
#[wasm_bindgen_test]
async fn a_retry_is_never_sent_before_the_instant_the_server_named() {
    for date in [false, true] {
        told_when(date).await.expect("the retry succeeds");
        let (failed, named, retried) = TIMES.with(core::cell::Cell::get);
        assert!(retried > failed, "no retry");
        if date {
            assert!(retried >= named, "retried at {retried}, before {named}");
        } else {
            assert!(
                retried + 1.0 >= named,
                "retried at {retried}, before {named}"
            );
        }
        console_log!(
            "never early: retried {} ms after the named instant",
            retried - named
        );
    }
}

static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

#[retry(max = 10, base = "1ms", budget = &BUDGET)]
async fn drains_the_budget(calls: &AtomicU32) -> Result<(), Error> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Error::Transient)
}

/// Ten tokens: each failure takes one, and a retry needs more than five.
#[wasm_bindgen_test]
async fn the_budget_stops_retries() {
    let calls = AtomicU32::new(0);
    assert_eq!(drains_the_budget(&calls).await, Err(Error::Transient));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
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

#[wasm_bindgen_test]
async fn the_breaker_opens_and_recovers_on_the_hosts_clock() {
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
    assert_eq!(guarded(&breaker, &calls, false).await, Err(Error::Open));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Let the open period pass, on the crate's own timer.
    let pause = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(60))
        .with_jitter(Jitter::None);
    let mut first = true;
    let _: Result<(), TimedOut> = pause
        .retry(|| {
            let fail = core::mem::replace(&mut first, false);
            async move {
                if fail {
                    Err(TimedOut)
                } else {
                    Ok(())
                }
            }
        })
        .await;
    assert_eq!(guarded(&breaker, &calls, false).await, Ok(()));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[wasm_bindgen_test]
async fn the_closure_api_waits_too() {
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(20))
        .with_jitter(Jitter::None);
    let calls = AtomicU32::new(0);
    let start = now_ms();
    let result: Result<u32, Error> = policy
        .retry(|| async {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if call < 3 {
                Err(Error::Transient)
            } else {
                Ok(call)
            }
        })
        .await;
    assert_eq!(result, Ok(3));
    let took = took_ms(start);
    assert!(took >= 60.0, "{took} ms");
}

#[retry(max = 3, base = "5ms", jitter = "none")]
fn plain(calls: &AtomicU32) -> Result<u32, Error> {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    if call < 3 {
        Err(Error::Transient)
    } else {
        Ok(call)
    }
}

/// A plain function's waits cannot block a JS host: they spin on its
/// clock, and do not panic as `std::thread::sleep` would.
#[wasm_bindgen_test]
fn plain_functions_wait_without_panicking() {
    let calls = AtomicU32::new(0);
    let start = now_ms();
    assert_eq!(plain(&calls), Ok(3));
    let took = took_ms(start);
    assert!(took >= 15.0, "{took} ms");
}

#[retry(max = 2, base = "1ms")]
async fn records_its_key(keys: &core::cell::RefCell<Vec<IdempotencyKey>>) -> Result<(), Error> {
    let key = current_attempt()
        .expect("inside a retried call")
        .idempotency_key();
    keys.borrow_mut().push(key);
    if keys.borrow().len() < 2 {
        Err(Error::Transient)
    } else {
        Ok(())
    }
}

/// Keys are version 4 UUIDs from the host's crypto, one per call and the
/// same on each of its attempts; jitter is drawn. Both are printed for
/// `.ci/wasm` to compare across two runs.
#[wasm_bindgen_test]
async fn keys_and_jitter_come_from_the_hosts_crypto() {
    let keys = core::cell::RefCell::new(Vec::new());
    records_its_key(&keys).await.unwrap();
    let keys = keys.into_inner();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
    let drawn: Vec<IdempotencyKey> = (0..4).map(|_| IdempotencyKey::random()).collect();
    for key in &drawn {
        let text = key.to_string();
        assert_eq!(&text[14..15], "4", "{text}");
        assert_ne!(*key, keys[0]);
    }
    assert!(drawn.windows(2).all(|pair| pair[0] != pair[1]));
    console_log!("key={}", keys[0]);
    for key in &drawn {
        console_log!("key={key}");
    }
    let policy = Policy::new().with_base(Duration::from_secs(10));
    let waits: Vec<u128> = (0..4)
        .map(|_| policy.wait(0, policy.base()).as_nanos())
        .collect();
    for wait in &waits {
        console_log!("jitter={wait}");
    }
}
