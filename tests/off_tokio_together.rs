//! Keys combined, off tokio: smol, `futures::executor::block_on` and plain
//! functions (DESIGN.md section 4, points 11, 14, 15 and 16).
//!
//! Real clocks on a shared machine: only counts, orders and lower bounds on
//! time are checked, never an upper bound.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use retry_runtime::testing::VirtualClock;
use retry_runtime::{retry, CircuitBreaker, Jitter, Policy, RetryBudget, Stop, Stopped};

fn unavailable() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, "down")
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn hint(e: &io::Error) -> Option<Duration> {
    (e.kind() == io::ErrorKind::Interrupted).then_some(Duration::from_millis(15))
}

/// A service: fails `fail` times (the first `hang` of them by hanging), then
/// answers with the call's number.
struct Service {
    calls: AtomicU32,
    fail: u32,
    hang: u32,
    kind: io::ErrorKind,
}

impl Service {
    fn new(fail: u32, hang: u32, kind: io::ErrorKind) -> Self {
        Service {
            calls: AtomicU32::new(0),
            fail,
            hang,
            kind,
        }
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    async fn call(&self, add: u32) -> io::Result<u32> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.hang {
            std::future::pending::<()>().await;
        }
        if n <= self.fail {
            return Err(io::Error::new(self.kind, format!("call {n}")));
        }
        Ok(n + add)
    }

    fn call_blocking(&self, add: u32) -> io::Result<u32> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.hang {
            std::thread::sleep(Duration::from_millis(60));
        }
        if n <= self.fail {
            return Err(io::Error::new(self.kind, format!("call {n}")));
        }
        Ok(n + add)
    }
}

/// Returns `Pending` once, woken at once.
async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

static BUDGET: RetryBudget = RetryBudget::new(1000, 1.0);

fn breaker() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_consecutive_failures(3)
        .with_min_calls(1000)
        .with_open_for(Duration::from_millis(150))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1)
}

/// Every key at once: a hanging attempt cut off by `timeout`, a hinted
/// retry, the breaker, the budget, the hooks; a by-value `mut` argument.
#[retry(
    max = 5,
    base = "5ms",
    jitter = "none",
    timeout = "30ms",
    deadline = "5s",
    on = is_transient,
    retry_after = hint,
    breaker = breaker,
    budget = &BUDGET,
    on_retry = |e: &io::Error, attempt: u32, wait: Duration| log.lock().unwrap().push(format!("{attempt} {:?} {wait:?}", e.kind())),
    on_give_up = |_: &io::Result<u32>, stopped: &Stopped| log.lock().unwrap().push(format!("gave up {:?}", stopped.reason())),
)]
async fn everything(
    service: &Service,
    breaker: &CircuitBreaker,
    log: &Mutex<Vec<String>>,
    mut add: u32,
) -> io::Result<u32> {
    add += 100;
    service.call(add).await
}

async fn every_key_at_once() {
    let breaker = breaker().with_consecutive_failures(10);
    let log = Mutex::new(Vec::new());
    // First attempt hangs (cut off), second fails with a hint, third answers.
    let service = Service::new(2, 1, io::ErrorKind::Interrupted);
    let start = Instant::now();
    assert_eq!(everything(&service, &breaker, &log, 1).await.unwrap(), 104);
    assert_eq!(service.calls(), 3);
    assert!(start.elapsed() >= Duration::from_millis(30 + 5 + 15));
    let log = log.into_inner().unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[0].starts_with("1 TimedOut"), "{log:?}");
    assert!(log[1].starts_with("2 Interrupted"), "{log:?}");
}

/// The breaker opens mid-call: the caller gets the real error of the last
/// attempt, not `CircuitOpen`; after the open period a probe closes it.
async fn breaker_opens_mid_call_then_closes() {
    let breaker = breaker();
    let log = Mutex::new(Vec::new());
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = everything(&service, &breaker, &log, 0).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
    assert_eq!(error.to_string(), "call 3");
    assert_eq!(service.calls(), 3);
    // Refused without running.
    let error = everything(&service, &breaker, &log, 0).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::Other, "{error}");
    assert_eq!(service.calls(), 3);
    // Recovery.
    let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    sleep_off_tokio(Duration::from_millis(200)).await;
    assert_eq!(everything(&healthy, &breaker, &log, 0).await.unwrap(), 101);
    assert_eq!(everything(&healthy, &breaker, &log, 0).await.unwrap(), 102);
    assert_eq!(healthy.calls(), 2);
}

/// A wait on the crate's timer, whatever the executor.
async fn sleep_off_tokio(wait: Duration) {
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(wait)
        .with_jitter(Jitter::None);
    let mut first = true;
    let _: io::Result<()> = policy
        .retry(|| {
            let fail = std::mem::replace(&mut first, false);
            async move {
                if fail {
                    Err(unavailable())
                } else {
                    Ok(())
                }
            }
        })
        .await;
}

/// A probe dropped mid-attempt (cancelled) gives its permit back: the next
/// call after it may probe, and its success closes the circuit.
async fn dropped_probe_then_reuse() {
    let breaker = breaker();
    let log = Mutex::new(Vec::new());
    let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    assert!(everything(&down, &breaker, &log, 0).await.is_err());
    sleep_off_tokio(Duration::from_millis(200)).await;
    // The probe hangs; it is dropped before its timeout.
    let hanging = Service::new(u32::MAX, u32::MAX, io::ErrorKind::ConnectionRefused);
    {
        let mut call = Box::pin(everything(&hanging, &breaker, &log, 0));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(hanging.calls(), 1);
    let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    assert_eq!(everything(&healthy, &breaker, &log, 0).await.unwrap(), 101);
    assert_eq!(everything(&healthy, &breaker, &log, 0).await.unwrap(), 102);
}

/// A call dropped in its wait between attempts, then the same breaker used
/// again: nothing is left held.
async fn dropped_mid_wait_then_reuse() {
    let breaker = breaker().with_probes(1);
    let log = Mutex::new(Vec::new());
    let down = Service::new(1, 0, io::ErrorKind::ConnectionRefused);
    {
        let mut call = Box::pin(everything(&down, &breaker, &log, 0));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(down.calls(), 1);
    assert_eq!(everything(&down, &breaker, &log, 0).await.unwrap(), 102);
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
async fn inner(service: &Service) -> io::Result<u32> {
    service.call(0).await
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient, deadline = "5s")]
async fn outer_propagates(service: &Service) -> io::Result<u32> {
    Ok(inner(service).await? + 1000)
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
async fn outer_falls_back(service: &Service, own: &Service) -> io::Result<u32> {
    let cached = inner(service).await.unwrap_or(0);
    // Work of its own (a cache read) before the call that fails.
    yield_now().await;
    own.call(cached).await
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
async fn outer_fans_out(a: &Service, b: &Service) -> io::Result<u32> {
    let results = futures::future::join_all([inner(a), inner(b)]).await;
    let mut sum = 0;
    for result in results {
        sum += result?;
    }
    Ok(sum)
}

async fn nesting() {
    // An inner give-up fails the outer attempt: no retry above.
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = outer_propagates(&service).await.unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    assert_eq!(service.calls(), 3);
    // A handled give-up: the outer's own failure is retried.
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let own = Service::new(1, 0, io::ErrorKind::Interrupted);
    assert_eq!(outer_falls_back(&service, &own).await.unwrap(), 2);
    assert_eq!(own.calls(), 2);
    assert_eq!(service.calls(), 6);
    // A fan-out: the failed item gave up, so the batch is not re-sent.
    let a = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    let b = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = outer_fans_out(&a, &b).await.unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    assert_eq!((a.calls(), b.calls()), (1, 3));
}

#[retry(max = 3, hedge = "10ms", on = is_transient, timeout = "200ms", breaker = breaker, budget = &BUDGET)]
async fn hedged(service: &Service, breaker: &CircuitBreaker) -> io::Result<u32> {
    service.call(0).await
}

async fn hedging() {
    // The first attempt hangs; the hedge after 10 ms answers.
    let breaker = breaker();
    let service = Service::new(1, 1, io::ErrorKind::ConnectionRefused);
    assert_eq!(hedged(&service, &breaker).await.unwrap(), 2);
    // Every attempt fails: the last error to arrive.
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = hedged(&service, &breaker).await.unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    assert_eq!(service.calls(), 3);
    // Every attempt hangs: each is cut off by its timeout.
    let breaker = self::breaker().with_consecutive_failures(10);
    let service = Service::new(u32::MAX, u32::MAX, io::ErrorKind::ConnectionRefused);
    let error = hedged(&service, &breaker).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    assert_eq!(service.calls(), 3);
}

/// The closure API with the breaker, the budget, hooks and a hint.
async fn closure_api() {
    let breaker = breaker();
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(5))
        .with_jitter(Jitter::None)
        .with_timeout(Duration::from_millis(30))
        .with_deadline(Duration::from_secs(5));
    let service = Service::new(2, 1, io::ErrorKind::Interrupted);
    let retries = AtomicU32::new(0);
    let result = policy
        .on(is_transient)
        .retry_after(hint)
        .on_retry(|_: &io::Error, _, _| {
            retries.fetch_add(1, Ordering::SeqCst);
        })
        .budget(&BUDGET)
        .breaker(&breaker)
        .run(|| service.call(0))
        .await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(retries.load(Ordering::SeqCst), 2);
    // The closure API, hedged.
    let service = Service::new(1, 1, io::ErrorKind::ConnectionRefused);
    let result = policy
        .on(is_transient)
        .breaker(&breaker)
        .hedge(retry_runtime::hedge::Hedge::after(Duration::from_millis(
            10,
        )))
        .run(|| service.call(0))
        .await;
    assert_eq!(result.unwrap(), 2);
}

/// Each async test named, run under both executors that are not tokio, in
/// a module of its own for the round: `round_one::smol_block_on::nesting`.
macro_rules! off_tokio {
    ($round:ident: $($test:ident),+ $(,)?) => {
        mod $round {
            mod smol_block_on {
                $(
                    #[test]
                    fn $test() {
                        smol::block_on(super::super::$test());
                    }
                )+
            }

            mod futures_executor_block_on {
                $(
                    #[test]
                    fn $test() {
                        futures::executor::block_on(super::super::$test());
                    }
                )+
            }
        }
    };
}

off_tokio!(
    round_one:
    every_key_at_once,
    breaker_opens_mid_call_then_closes,
    dropped_probe_then_reuse,
    dropped_mid_wait_then_reuse,
    nesting,
    hedging,
    closure_api,
);

// Plain functions.

#[retry(
    max = 5,
    base = "5ms",
    jitter = "none",
    timeout = "30ms",
    deadline = "5s",
    on = is_transient,
    retry_after = hint,
    breaker = breaker,
    budget = &BUDGET,
    on_retry = |e: &io::Error, attempt: u32, _: Duration| log.lock().unwrap().push(format!("{attempt} {:?}", e.kind())),
)]
fn everything_blocking(
    service: &Service,
    breaker: &CircuitBreaker,
    log: &Mutex<Vec<String>>,
    mut add: u32,
) -> io::Result<u32> {
    add += 100;
    service.call_blocking(add)
}

#[test]
fn plain_fn_every_key_at_once() {
    let breaker = breaker().with_consecutive_failures(10);
    let log = Mutex::new(Vec::new());
    let service = Service::new(2, 1, io::ErrorKind::Interrupted);
    assert_eq!(
        everything_blocking(&service, &breaker, &log, 1).unwrap(),
        104
    );
    assert_eq!(service.calls(), 3);
    let log = log.into_inner().unwrap();
    assert_eq!(log, ["1 TimedOut", "2 Interrupted"]);
}

#[test]
fn plain_fn_breaker_opens_then_closes() {
    let breaker = breaker();
    let log = Mutex::new(Vec::new());
    let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = everything_blocking(&down, &breaker, &log, 0).unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    std::thread::sleep(Duration::from_millis(200));
    let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    assert_eq!(
        everything_blocking(&healthy, &breaker, &log, 0).unwrap(),
        101
    );
    assert_eq!(
        everything_blocking(&healthy, &breaker, &log, 0).unwrap(),
        102
    );
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
fn inner_blocking(service: &Service) -> io::Result<u32> {
    service.call_blocking(0)
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
fn outer_blocking(service: &Service) -> io::Result<u32> {
    Ok(inner_blocking(service)? + 1)
}

#[test]
fn plain_fn_nesting() {
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = outer_blocking(&service).unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    assert_eq!(service.calls(), 3);
}

/// One breaker, a tokio task and a smol task: the tokio task's failures
/// open it, the smol task is refused, then a probe from smol closes it and
/// tokio goes through again.
#[test]
fn a_breaker_shared_by_tokio_and_smol() {
    static SHARED: CircuitBreaker = CircuitBreaker::new()
        .with_consecutive_failures(3)
        .with_min_calls(1000)
        .with_open_for(Duration::from_millis(150))
        .with_jitter(0.0)
        .with_probes(1)
        .with_close_after(1);
    let log = std::sync::Arc::new(Mutex::new(Vec::new()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let tokio_log = log.clone();
    runtime
        .block_on(async {
            tokio::spawn(async move {
                let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
                let error = everything(&down, &SHARED, &tokio_log, 0).await.unwrap_err();
                assert_eq!(error.to_string(), "call 3");
            })
            .await
        })
        .unwrap();
    let smol_log = log.clone();
    std::thread::spawn(move || {
        smol::block_on(async {
            let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
            let error = everything(&healthy, &SHARED, &smol_log, 0)
                .await
                .unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::Other);
            assert_eq!(healthy.calls(), 0);
            sleep_off_tokio(Duration::from_millis(200)).await;
            assert_eq!(
                everything(&healthy, &SHARED, &smol_log, 0).await.unwrap(),
                101
            );
        })
    })
    .join()
    .unwrap();
    runtime
        .block_on(async {
            tokio::spawn(async move {
                let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
                assert_eq!(everything(&healthy, &SHARED, &log, 0).await.unwrap(), 101);
            })
            .await
        })
        .unwrap();
}

// Round two: deadlines and timeouts across layers, hedging with a
// half-open breaker and hints, the closure API blocking.

#[retry(max = 5, base = "20ms", jitter = "none", on = is_transient)]
async fn slow_inner(service: &Service) -> io::Result<u32> {
    service.call(0).await
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient, timeout = "30ms")]
async fn outer_with_timeout(service: &Service) -> io::Result<u32> {
    slow_inner(service).await
}

/// The outer attempt's timeout cuts the inner call off mid-wait: the outer
/// retries its own timeout, and gets `TimedOut` at the end.
async fn outer_timeout_cuts_the_inner_off() {
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = outer_with_timeout(&service).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
    // Up to two inner calls per outer attempt (0 ms, 20 ms; the next would
    // be at 60 ms), at least one.
    assert!((3..=6).contains(&service.calls()), "{}", service.calls());
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient, deadline = "50ms")]
async fn outer_with_deadline(
    service: &Service,
    seen: &Mutex<Vec<Option<Duration>>>,
) -> io::Result<u32> {
    seen.lock()
        .unwrap()
        .push(retry_runtime::current_attempt().and_then(|a| a.time_left()));
    slow_inner(service).await
}

/// The inner call never waits past the outer's deadline: it gives up on its
/// deadline, and the outer returns that error at once.
async fn inner_bounded_by_outer_deadline() {
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let seen = Mutex::new(Vec::new());
    let start = Instant::now();
    let error = outer_with_deadline(&service, &seen).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
    // 0 ms, 20 ms; the wait of 40 ms would pass 50 ms (on a slow machine
    // the first wait may already).
    assert!((1..=2).contains(&service.calls()), "{}", service.calls());
    let _ = start;
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1);
    let left = seen[0].expect("a deadline");
    assert!(left <= Duration::from_millis(50), "{left:?}");
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
fn plain_inner(service: &Service) -> io::Result<u32> {
    service.call_blocking(0)
}

#[retry(max = 3, base = "5ms", jitter = "none", on = is_transient)]
async fn async_outer_of_plain(service: &Service) -> io::Result<u32> {
    plain_inner(service)
}

/// A plain function inside an async one: its give-up is not retried above.
async fn plain_inside_async() {
    let service = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let error = async_outer_of_plain(&service).await.unwrap_err();
    assert_eq!(error.to_string(), "call 3");
    assert_eq!(service.calls(), 3);
}

fn long_hint(e: &io::Error) -> Option<Duration> {
    (e.kind() == io::ErrorKind::Interrupted).then_some(Duration::from_secs(60))
}

#[retry(max = 3, hedge = "10ms", cap = "1s", on = is_transient, retry_after = long_hint)]
async fn hedged_with_hint(service: &Service) -> io::Result<u32> {
    service.call(0).await
}

/// A hint longer than `cap`: the error comes back at once, not after
/// another attempt.
async fn hedge_with_a_hint_too_long() {
    let service = Service::new(u32::MAX, 0, io::ErrorKind::Interrupted);
    let error = hedged_with_hint(&service).await.unwrap_err();
    assert_eq!(error.to_string(), "call 1");
    assert_eq!(service.calls(), 1);
}

/// A half-open breaker lets one probe: the hedges it refuses do not start,
/// the probe's own answer comes back, and a success closes the circuit.
async fn hedge_on_a_half_open_breaker() {
    let breaker = breaker();
    let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    for _ in 0..3 {
        let _ = inner_guarded(&down, &breaker).await;
    }
    sleep_off_tokio(Duration::from_millis(200)).await;
    // The probe answers after 30 ms; hedges at 10 and 20 ms are refused.
    let slow = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    let answer = hedged_slow(&slow, &breaker).await.unwrap();
    assert_eq!(answer, 1);
    assert_eq!(slow.calls(), 1);
    assert_eq!(hedged_slow(&slow, &breaker).await.unwrap(), 2);
}

#[retry(max = 1, breaker = breaker)]
async fn inner_guarded(service: &Service, breaker: &CircuitBreaker) -> io::Result<u32> {
    service.call(0).await
}

#[retry(max = 3, hedge = "10ms", on = is_transient, breaker = breaker)]
async fn hedged_slow(service: &Service, breaker: &CircuitBreaker) -> io::Result<u32> {
    let answer = service.call(0).await;
    sleep_off_tokio(Duration::from_millis(30)).await;
    answer
}

/// A hedged call dropped while its attempts run, then the breaker reused.
async fn hedged_dropped_then_reuse() {
    let breaker = breaker();
    let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    for _ in 0..3 {
        let _ = inner_guarded(&down, &breaker).await;
    }
    sleep_off_tokio(Duration::from_millis(200)).await;
    let hanging = Service::new(u32::MAX, u32::MAX, io::ErrorKind::ConnectionRefused);
    {
        let mut call = Box::pin(hedged(&hanging, &breaker));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(call.as_mut().poll(&mut cx).is_pending());
    }
    let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    assert_eq!(hedged(&healthy, &breaker).await.unwrap(), 1);
    assert_eq!(hedged(&healthy, &breaker).await.unwrap(), 2);
}

/// Many calls at once through one breaker off tokio, half failing then all
/// recovering: it closes again.
async fn many_calls_then_recovery() {
    let breaker = breaker().with_consecutive_failures(5);
    let log = Mutex::new(Vec::new());
    let down = Service::new(u32::MAX, 0, io::ErrorKind::ConnectionRefused);
    let calls = (0..20).map(|_| everything(&down, &breaker, &log, 0));
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|r| r.is_err()));
    sleep_off_tokio(Duration::from_millis(200)).await;
    let healthy = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    // One probe, then the rest.
    assert!(everything(&healthy, &breaker, &log, 0).await.is_ok());
    let calls = (0..20).map(|_| everything(&healthy, &breaker, &log, 0));
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

off_tokio!(
    round_two:
    outer_timeout_cuts_the_inner_off,
    inner_bounded_by_outer_deadline,
    plain_inside_async,
    hedge_with_a_hint_too_long,
    hedge_on_a_half_open_breaker,
    hedged_dropped_then_reuse,
    many_calls_then_recovery,
);

/// Every key of the blocking closure API at once, read from a virtual
/// clock's record of decisions (feature `testing`): the first attempt takes
/// 60 ms, past its 30 ms timeout, the second fails with a hint, the third
/// answers.
#[test]
fn closure_api_blocking_every_key() {
    let clock = VirtualClock::install();
    let breaker = breaker().with_consecutive_failures(10);
    let budget = RetryBudget::new(1000, 1.0);
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(5))
        .with_jitter(Jitter::None)
        .with_timeout(Duration::from_millis(30))
        .with_deadline(Duration::from_secs(5));
    let calls = AtomicU32::new(0);
    let result = policy
        .on(is_transient)
        .retry_after(hint)
        .budget(&budget)
        .breaker(&breaker)
        .run_blocking(|| match calls.fetch_add(1, Ordering::SeqCst) + 1 {
            1 => {
                clock.advance(Duration::from_millis(60));
                Err(unavailable())
            }
            2 => Err(io::Error::new(io::ErrorKind::Interrupted, "call 2")),
            n => Ok(n),
        });
    assert_eq!(result.unwrap(), 3);
    let decisions = clock.take_decisions();
    // The hinted wait is the hint and up to a tenth more, drawn.
    let hinted = decisions[1].wait.unwrap();
    assert!(hinted >= Duration::from_millis(15) && hinted <= Duration::from_micros(16_500));
    assert_eq!(
        decisions,
        [
            "at 60ms: attempt 1 transient, retry after 5ms (budget 999, breaker closed)".to_owned(),
            format!("at 65ms: attempt 2 transient (hint 15ms), retry after {hinted:?} (budget 998, breaker closed)"),
            format!("at {:?}: attempt 3 done, stop done (budget 999, breaker closed)", Duration::from_millis(65) + hinted),
        ]
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
    );
}

// Round three: the shapes users write.

struct Client {
    sent: Vec<u32>,
    fail: u32,
}

impl Client {
    #[retry(max = 4, base = "2ms", jitter = "none", on = is_transient, timeout = "50ms")]
    async fn send(&mut self, mut body: Vec<u32>) -> io::Result<usize> {
        body.push(self.sent.len() as u32);
        self.push(&body).await
    }

    async fn push(&mut self, body: &[u32]) -> io::Result<usize> {
        yield_now().await;
        self.sent.extend(body);
        if self.fail > 0 {
            self.fail -= 1;
            return Err(unavailable());
        }
        Ok(body.len())
    }
}

#[derive(Debug)]
struct Foreign(String);

#[retry(
    max = 3,
    base = "2ms",
    timeout = "20ms",
    breaker = breaker,
    timed_out = |_| Foreign("timed out".into()),
    circuit_open = |_| Foreign("open".into()),
    on_give_up = |r: &Result<u32, Foreign>, s: &Stopped| gave_up.lock().unwrap().push((format!("{:?}", r.as_ref().err()), s.reason(), s.attempts(), s.elapsed().is_some())),
)]
async fn foreign(
    breaker: &CircuitBreaker,
    gave_up: &Mutex<Vec<(String, Stop, u32, bool)>>,
    text: &str,
) -> Result<u32, Foreign> {
    let n: u32 = text
        .parse()
        .map_err(|e: std::num::ParseIntError| Foreign(e.to_string()))?;
    if n == 0 {
        std::future::pending::<()>().await;
    }
    Ok(n)
}

#[retry(max = 3, base = "2ms", jitter = "none")]
async fn with_a_closure<F: FnMut() -> io::Result<u32>>(mut next: F) -> io::Result<u32> {
    next()
}

#[retry(max = 3, base = "2ms", jitter = "none")]
async fn keyed(keys: &Mutex<Vec<String>>) -> anyhow::Result<u32> {
    let key = retry_runtime::current_attempt().unwrap().idempotency_key();
    keys.lock().unwrap().push(key.to_string());
    if keys.lock().unwrap().len() < 3 {
        anyhow::bail!("not yet");
    }
    Ok(3)
}

async fn user_shapes() {
    let mut client = Client {
        sent: Vec::new(),
        fail: 2,
    };
    assert_eq!(client.send(vec![7]).await.unwrap(), 2);
    // Each attempt started from the caller's body.
    assert_eq!(client.sent, [7, 0, 7, 2, 7, 4]);

    let breaker = breaker().with_consecutive_failures(10);
    let gave_up = Mutex::new(Vec::new());
    assert_eq!(foreign(&breaker, &gave_up, "5").await.unwrap(), 5);
    assert!(foreign(&breaker, &gave_up, "x").await.is_err());
    let error = foreign(&breaker, &gave_up, "0").await.unwrap_err();
    assert_eq!(error.0, "timed out");
    let last = retry_runtime::last_call().unwrap();
    assert_eq!(last.attempts(), 3);
    let gave_up = gave_up.into_inner().unwrap();
    assert_eq!(gave_up.len(), 2, "{gave_up:?}");
    assert_eq!(gave_up[1].2, 3);
    assert!(gave_up.iter().all(|g| g.3));

    let mut left = 2;
    let next = || {
        left -= 1;
        if left > 0 {
            Err(unavailable())
        } else {
            Ok(9)
        }
    };
    assert_eq!(with_a_closure(next).await.unwrap(), 9);

    let keys = Mutex::new(Vec::new());
    assert_eq!(keyed(&keys).await.unwrap(), 3);
    let keys = keys.into_inner().unwrap();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| *k == keys[0]));
}

#[retry(max = 2, base = "5ms", hedge = "p95")]
async fn percentile(service: &Service) -> io::Result<u32> {
    service.call(0).await
}

async fn hedge_at_a_percentile() {
    let service = Service::new(0, 0, io::ErrorKind::ConnectionRefused);
    for _ in 0..150 {
        percentile(&service).await.unwrap();
    }
    // Now the first attempt hangs: the hedge answers.
    let hanging = Service::new(0, 1, io::ErrorKind::ConnectionRefused);
    assert_eq!(percentile(&hanging).await.unwrap(), 2);
}

fn still_busy(status: &u16) -> bool {
    *status == 503
}

#[retry(max = 4, base = "2ms", on_ok = still_busy, retry_after_ok = |_: &u16| Some(Duration::from_millis(5)), budget = &BUDGET)]
async fn status(statuses: &Mutex<Vec<u16>>) -> io::Result<u16> {
    Ok(statuses.lock().unwrap().pop().unwrap_or(200))
}

async fn retried_ok_values() {
    let statuses = Mutex::new(vec![200, 503, 503]);
    assert_eq!(status(&statuses).await.unwrap(), 200);
    let statuses = Mutex::new(vec![503, 503, 503, 503, 503]);
    assert_eq!(status(&statuses).await.unwrap(), 503);
    assert_eq!(statuses.lock().unwrap().len(), 1);
}

off_tokio!(
    round_three:
    user_shapes,
    hedge_at_a_percentile,
    retried_ok_values,
);

// Round four: one breaker on two layers, off tokio and on plain threads.

struct Dependency {
    up: std::sync::atomic::AtomicBool,
    calls: AtomicU32,
}

impl Dependency {
    fn new() -> Self {
        Dependency {
            up: std::sync::atomic::AtomicBool::new(false),
            calls: AtomicU32::new(0),
        }
    }

    fn call(&self) -> io::Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(unavailable())
        }
    }
}

#[retry(max = 3, base = "2ms", on = is_transient, breaker = breaker)]
fn plain_client(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    dep.call()
}

#[retry(max = 2, base = "2ms", on = is_transient, breaker = breaker)]
fn plain_handler(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    plain_client(dep, breaker)
}

#[retry(max = 2, base = "2ms", on = is_transient, breaker = breaker)]
async fn async_handler_of_plain(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    plain_client(dep, breaker)
}

#[retry(max = 3, base = "2ms", on = is_transient, breaker = breaker)]
async fn async_client(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    yield_now().await;
    dep.call()
}

#[retry(max = 2, base = "2ms", on = is_transient, breaker = breaker)]
async fn async_handler(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    async_client(dep, breaker).await
}

#[retry(max = 2, hedge = "5ms", on = is_transient, breaker = breaker)]
async fn hedged_handler(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    async_client(dep, breaker).await
}

#[retry(max = 2, base = "2ms", on = is_transient, breaker = breaker)]
fn bridging_handler(dep: &Dependency, breaker: &CircuitBreaker) -> io::Result<()> {
    futures::executor::block_on(async_client(dep, breaker))
}

/// Down until the circuit opens, then up: the calls after the open period
/// close it again, whichever layers name the breaker.
fn two_layers_recover(mut call: impl FnMut(&Dependency, &CircuitBreaker) -> io::Result<()>) {
    let breaker = breaker();
    let dep = Dependency::new();
    for _ in 0..3 {
        let _ = call(&dep, &breaker);
    }
    assert_eq!(breaker.state(), retry_runtime::CircuitState::Open);
    dep.up.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    let calls = dep.calls.load(Ordering::SeqCst);
    call(&dep, &breaker).unwrap();
    assert_eq!(dep.calls.load(Ordering::SeqCst), calls + 1);
    assert_eq!(breaker.state(), retry_runtime::CircuitState::Closed);
    call(&dep, &breaker).unwrap();
}

#[test]
fn two_plain_layers_recover() {
    two_layers_recover(plain_handler);
}

#[test]
fn async_over_plain_layers_recover_on_smol() {
    two_layers_recover(|dep, breaker| smol::block_on(async_handler_of_plain(dep, breaker)));
}

#[test]
fn two_async_layers_recover_on_block_on() {
    two_layers_recover(|dep, breaker| futures::executor::block_on(async_handler(dep, breaker)));
}

#[test]
fn hedged_over_async_layers_recover_on_smol() {
    two_layers_recover(|dep, breaker| smol::block_on(hedged_handler(dep, breaker)));
}

#[test]
fn plain_over_a_block_on_bridge_recovers() {
    two_layers_recover(bridging_handler);
}
