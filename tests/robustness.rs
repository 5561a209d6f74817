//! Cancellation, panics, `Send`, and inputs at the limits.

mod support;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::{retry, Jitter, Policy};
use support::{Failure, Flaky};
use tokio::time::{sleep, timeout, Instant};

#[retry(max = 10, base = "1s", jitter = "none")]
async fn counted(calls: &AtomicU32) -> Result<(), &'static str> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err("down")
}

#[tokio::test(start_paused = true)]
async fn dropping_the_future_stops_the_retries() {
    let calls = AtomicU32::new(0);
    // Attempts at 0, 1s, 3s; the timeout drops the future during the wait
    // that would end at 7s.
    assert!(timeout(Duration::from_secs(5), counted(&calls))
        .await
        .is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    sleep(Duration::from_secs(600)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "nothing may run after the drop"
    );
}

#[retry(max = 5, base = "1ms")]
async fn panics(calls: Arc<AtomicU32>) -> Result<(), String> {
    calls.fetch_add(1, Ordering::SeqCst);
    panic!("bug in the body");
}

#[tokio::test(start_paused = true)]
async fn a_panic_propagates_and_is_not_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let task = tokio::spawn(panics(Arc::clone(&calls)));
    let error = task.await.unwrap_err();
    assert!(error.is_panic());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[retry(
    max = 4294967295,
    base = "1ns",
    cap = "1ms",
    multiplier = 1e300,
    jitter = "none"
)]
async fn enormous(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[tokio::test(start_paused = true)]
async fn u32_max_attempts_and_a_huge_multiplier_do_not_overflow() {
    let dep = Flaky::failing(200);
    assert_eq!(enormous(&dep).await, Ok(201));
    // 1ns, then the cap of 1ms for every later wait.
    let gaps = dep.gaps();
    assert_eq!(gaps[1], Duration::from_millis(1));
    assert!(gaps[2..].iter().all(|g| *g == Duration::from_millis(1)));
}

#[test]
fn ceilings_and_waits_are_total_functions() {
    let odd = [
        Policy::new().with_multiplier(f64::NAN),
        Policy::new().with_multiplier(f64::INFINITY),
        Policy::new().with_multiplier(0.5),
        Policy::new().with_multiplier(1e308),
        Policy::new().with_multiplier(1.000_001),
        Policy::new()
            .with_base(Duration::MAX)
            .with_cap(Duration::MAX),
        Policy::new()
            .with_base(Duration::from_secs(5))
            .with_cap(Duration::from_secs(1)),
        Policy::new()
            .with_base(Duration::ZERO)
            .with_cap(Duration::ZERO),
        Policy::new().with_max_attempts(0),
    ];
    for policy in odd {
        for jitter in Jitter::ALL {
            let policy = policy.with_jitter(jitter);
            for n in [0, 1, 2, 63, 64, 1024, u32::MAX - 1, u32::MAX] {
                let ceiling = policy.ceiling(n);
                assert!(
                    ceiling <= policy.cap(),
                    "{policy:?} retry {n}: ceiling {ceiling:?}"
                );
                for sample in [0, 1, u64::MAX / 2, u64::MAX] {
                    for previous in [Duration::ZERO, policy.base(), Duration::MAX] {
                        let wait = policy.wait_with(n, previous, sample);
                        assert!(wait <= policy.cap(), "{policy:?} retry {n}: wait {wait:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn the_worst_case_wait_counts_every_retry() {
    // Ceilings of 1ns growing by half: they round to 1, 2, 2, 3, 5, ... and
    // reach the 10s cap after about 57 retries; all 59 are counted.
    let policy = Policy::new()
        .with_max_attempts(60)
        .with_base(Duration::from_nanos(1))
        .with_multiplier(1.5);
    let by_hand: Duration = (0..59).map(|n| policy.ceiling(n)).sum();
    assert_eq!(policy.worst_case_wait(), by_hand);
    assert!(by_hand > Duration::from_secs(10));
    // A huge number of retries at the cap saturates instead of overflowing.
    let huge = Policy::new()
        .with_max_attempts(u32::MAX)
        .with_cap(Duration::MAX)
        .with_base(Duration::from_secs(1));
    assert_eq!(huge.worst_case_wait(), Duration::from_nanos(u64::MAX));
}

#[test]
fn out_of_range_policies_are_reported_by_validate() {
    assert!(Policy::new().validate().is_ok());
    let bad = [
        Policy::new().with_max_attempts(0),
        Policy::new().with_base(Duration::ZERO),
        Policy::new().with_base(Duration::from_secs(20)),
        Policy::new().with_multiplier(0.9),
        Policy::new().with_multiplier(f64::NAN),
        Policy::new().with_deadline(Duration::ZERO),
    ];
    for policy in bad {
        let error = policy.validate().unwrap_err();
        assert!(!error.to_string().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn max_zero_at_run_time_still_makes_one_attempt() {
    let dep = Flaky::failing(5);
    let policy = Policy::new().with_max_attempts(0);
    assert_eq!(
        policy
            .retry(|| async { dep.call() })
            .await
            .unwrap_err()
            .call,
        1
    );
}

fn assert_send<T: Send>(_: &T) {}

#[retry]
async fn error_not_send(fail: bool) -> Result<u32, Rc<Cell<u32>>> {
    // The error is made and returned without crossing an `.await`.
    if fail {
        Err(Rc::new(Cell::new(1)))
    } else {
        Ok(1)
    }
}

#[retry(base = "1ms")]
async fn awaits_between(data: &[u8]) -> Result<usize, std::io::Error> {
    sleep(Duration::from_millis(1)).await;
    Ok(data.len())
}

#[tokio::test(start_paused = true)]
async fn the_future_is_send_when_the_body_is() {
    let future = error_not_send(true);
    assert_send(&future);
    assert_eq!(future.await.unwrap_err().get(), 1);
    let future = awaits_between(b"abc");
    assert_send(&future);
    // And it runs on a multi-threaded runtime's worker.
    assert_eq!(
        tokio::spawn(async { awaits_between(b"abc").await.unwrap() })
            .await
            .unwrap(),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn each_wait_starts_when_its_attempt_fails() {
    // Without a deadline, time spent inside an attempt does not shorten the
    // wait after it.
    #[retry(max = 2, base = "100ms", jitter = "none")]
    async fn slow_then_ok(dep: &Flaky) -> Result<u32, Failure> {
        sleep(Duration::from_millis(500)).await;
        dep.call()
    }
    let dep = Flaky::failing(1);
    let start = Instant::now();
    assert_eq!(slow_then_ok(&dep).await, Ok(2));
    assert_eq!(dep.starts_ms(), [500, 1100]);
    assert_eq!(start.elapsed(), Duration::from_millis(1100));
}
