//! Keys combined on `wasm32-unknown-unknown` in node: nesting, a fallback,
//! `join_all`-like fan-out, hedging with a breaker, a call dropped mid-wait
//! and the breaker reused, plain functions with `timeout` and `deadline`.
//!
//! Real time on a shared machine: counts and orders only.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use core::cell::Cell;
use core::future::Future;
use core::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Jitter, Policy, RetryBudget, TimedOut};
use wasm_bindgen_test::wasm_bindgen_test;

#[derive(Debug, PartialEq, Eq)]
enum Error {
    Down(u32),
    Fatal,
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

fn transient(e: &Error) -> bool {
    !matches!(e, Error::Fatal)
}

struct Service {
    calls: Cell<u32>,
    fail: u32,
    hang: u32,
}

impl Service {
    fn new(fail: u32, hang: u32) -> Self {
        Service {
            calls: Cell::new(0),
            fail,
            hang,
        }
    }

    async fn call(&self) -> Result<u32, Error> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if n <= self.hang {
            core::future::pending::<()>().await;
        }
        if n <= self.fail {
            return Err(Error::Down(n));
        }
        Ok(n)
    }
}

/// A wait on the crate's timer (the host's `setTimeout`).
async fn pause(millis: u64) {
    let first = Cell::new(true);
    let _: Result<(), Error> = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(millis))
        .with_jitter(Jitter::None)
        .retry(|| {
            let fail = first.replace(false);
            async move {
                if fail {
                    Err(Error::Fatal)
                } else {
                    Ok(())
                }
            }
        })
        .await;
}

async fn yield_now() {
    let mut yielded = false;
    core::future::poll_fn(|cx| {
        if core::mem::replace(&mut yielded, true) {
            core::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            core::task::Poll::Pending
        }
    })
    .await;
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient)]
async fn inner(service: &Service) -> Result<u32, Error> {
    service.call().await
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient, deadline = "5s")]
async fn outer(service: &Service) -> Result<u32, Error> {
    Ok(inner(service).await? + 1000)
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient)]
async fn outer_falls_back(service: &Service, own: &Service) -> Result<u32, Error> {
    let cached = inner(service).await.unwrap_or(0);
    yield_now().await;
    Ok(own.call().await? + cached)
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient)]
async fn outer_fans_out(a: &Service, b: &Service) -> Result<u32, Error> {
    let (x, y) = both(inner(a), inner(b)).await;
    Ok(x? + y?)
}

/// `join!` of two futures, by hand.
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = core::pin::pin!(a);
    let mut b = core::pin::pin!(b);
    let (mut x, mut y) = (None, None);
    core::future::poll_fn(|cx| {
        if x.is_none() {
            if let core::task::Poll::Ready(v) = a.as_mut().poll(cx) {
                x = Some(v);
            }
        }
        if y.is_none() {
            if let core::task::Poll::Ready(v) = b.as_mut().poll(cx) {
                y = Some(v);
            }
        }
        if x.is_some() && y.is_some() {
            core::task::Poll::Ready((x.take().unwrap(), y.take().unwrap()))
        } else {
            core::task::Poll::Pending
        }
    })
    .await
}

#[wasm_bindgen_test]
async fn nesting_retries_at_one_layer() {
    let service = Service::new(u32::MAX, 0);
    assert_eq!(outer(&service).await, Err(Error::Down(3)));
    assert_eq!(service.calls.get(), 3);

    let service = Service::new(u32::MAX, 0);
    let own = Service::new(1, 0);
    assert_eq!(outer_falls_back(&service, &own).await, Ok(2));
    assert_eq!(own.calls.get(), 2);
    assert_eq!(service.calls.get(), 6);

    let a = Service::new(0, 0);
    let b = Service::new(u32::MAX, 0);
    assert_eq!(outer_fans_out(&a, &b).await, Err(Error::Down(3)));
    assert_eq!((a.calls.get(), b.calls.get()), (1, 3));
}

fn breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(3)
        .with_min_calls(1000)
        .with_open_for(Duration::from_millis(150))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1)
}

static BUDGET: RetryBudget = RetryBudget::new(1000, 1.0);

#[retry(
    max = 4,
    base = "5ms",
    jitter = "none",
    on = transient,
    timeout = "30ms",
    deadline = "5s",
    breaker = breaker,
    budget = &BUDGET,
    on_retry = |_: &Error, _: u32, _: Duration| retries.set(retries.get() + 1),
)]
async fn guarded(
    service: &Service,
    breaker: &CircuitBreaker,
    retries: &Cell<u32>,
) -> Result<u32, Error> {
    service.call().await
}

#[retry(max = 3, hedge = "10ms", on = transient, timeout = "200ms", breaker = breaker, budget = &BUDGET)]
async fn hedged(service: &Service, breaker: &CircuitBreaker) -> Result<u32, Error> {
    service.call().await
}

#[wasm_bindgen_test]
async fn breaker_hedge_timeout_and_recovery() {
    let breaker = breaker();
    let retries = Cell::new(0);
    // A hang cut off, then a failure, then an answer.
    let service = Service::new(2, 1);
    assert_eq!(guarded(&service, &breaker, &retries).await, Ok(3));
    assert_eq!(retries.get(), 2);
    // Down: the breaker opens mid-call; the caller gets the real error.
    let down = Service::new(u32::MAX, 0);
    assert_eq!(
        guarded(&down, &breaker, &retries).await,
        Err(Error::Down(3))
    );
    assert_eq!(guarded(&down, &breaker, &retries).await, Err(Error::Open));
    assert_eq!(down.calls.get(), 3);
    pause(200).await;
    // A hedged probe dropped while it hangs: its permit is given back.
    let hanging = Service::new(u32::MAX, u32::MAX);
    {
        let mut call = Box::pin(hedged(&hanging, &breaker));
        let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    // The next probe, hedged, answers and closes the circuit.
    let healthy = Service::new(0, 0);
    assert_eq!(hedged(&healthy, &breaker).await, Ok(1));
    assert_eq!(hedged(&healthy, &breaker).await, Ok(2));
    assert_eq!(guarded(&healthy, &breaker, &retries).await, Ok(3));
}

#[wasm_bindgen_test]
async fn a_call_dropped_mid_wait_leaves_nothing_held() {
    let breaker = breaker();
    let retries = Cell::new(0);
    let service = Service::new(1, 0);
    {
        let mut call = Box::pin(guarded(&service, &breaker, &retries));
        let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(service.calls.get(), 1);
    assert_eq!(guarded(&service, &breaker, &retries).await, Ok(2));
}

struct Blocking {
    calls: Cell<u32>,
    slow: u32,
    fail: u32,
}

impl Blocking {
    fn call(&self) -> Result<u32, Error> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if n <= self.slow {
            let end = js_sys::Date::now() + 40.0;
            while js_sys::Date::now() < end {}
        }
        if n <= self.fail {
            return Err(Error::Down(n));
        }
        Ok(n)
    }
}

#[retry(max = 4, base = "5ms", jitter = "none", on = transient, timeout = "20ms", deadline = "5s", breaker = breaker)]
fn plain_guarded(service: &Blocking, breaker: &CircuitBreaker) -> Result<u32, Error> {
    service.call()
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient)]
fn plain_inner(service: &Blocking) -> Result<u32, Error> {
    service.call()
}

#[retry(max = 3, base = "5ms", jitter = "none", on = transient)]
async fn async_outer_of_plain(service: &Blocking) -> Result<u32, Error> {
    plain_inner(service)
}

#[wasm_bindgen_test]
async fn plain_functions_with_every_key() {
    let breaker = breaker();
    // Too slow (timed out), failed, answered.
    let service = Blocking {
        calls: Cell::new(0),
        slow: 1,
        fail: 2,
    };
    assert_eq!(plain_guarded(&service, &breaker), Ok(3));
    let service = Blocking {
        calls: Cell::new(0),
        slow: 0,
        fail: u32::MAX,
    };
    assert_eq!(async_outer_of_plain(&service).await, Err(Error::Down(3)));
    assert_eq!(service.calls.get(), 3);
}
