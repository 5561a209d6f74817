//! Waits and hints longer than any timer: a wait is slept in full or not
//! started, and the deadline only counts time that really passed.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use retry_runtime::{retry, retry_after, Jitter, Policy, TimedOut};
use tokio::time::Instant;

#[derive(Debug, PartialEq)]
struct Busy {
    retry_after: &'static str,
}

impl From<TimedOut> for Busy {
    fn from(_: TimedOut) -> Self {
        Busy { retry_after: "" }
    }
}

fn hint(error: &Busy) -> Option<Duration> {
    retry_after::parse(error.retry_after)
}

#[retry(max = 5, base = "1s", cap = "1h", jitter = "none", retry_after = hint)]
async fn told_to_wait(calls: &Cell<u32>, retry_after: &'static str) -> Result<(), Busy> {
    calls.set(calls.get() + 1);
    Err(Busy { retry_after })
}

/// Regression (issue 10): delay-seconds past `u64` used to parse as no hint,
/// so the loop retried on its own backoff against the server's wish.
#[tokio::test(start_paused = true)]
async fn delay_seconds_past_u64_stop_the_loop_as_a_hint_too_long() {
    for value in ["18446744073709551616", "99999999999999999999999999999999"] {
        let calls = Cell::new(0);
        let start = Instant::now();
        assert!(told_to_wait(&calls, value).await.is_err());
        assert_eq!(calls.get(), 1, "{value}");
        assert_eq!(start.elapsed(), Duration::ZERO, "{value}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_hint_longer_than_any_wait_is_not_waited_out_in_part() {
    // A cap of `Duration::MAX` lets in any hint, but the longest wait is
    // `u64::MAX` ns (about 584 years): a hint past it would be cut short.
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_cap(Duration::MAX)
        .with_jitter(Jitter::None);
    let calls = Cell::new(0);
    let start = Instant::now();
    let result: Result<(), Busy> = policy
        .retrying()
        .retry_after(hint)
        .run(|| {
            calls.set(calls.get() + 1);
            async {
                Err(Busy {
                    retry_after: "18446744074",
                })
            }
        })
        .await;
    assert!(result.is_err());
    assert_eq!(calls.get(), 1);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// Regression (issue 10): tokio ends a single sleep after 30 years, and the
/// deadline then counted the rest as waited, letting in extra attempts.
#[tokio::test(start_paused = true)]
async fn waits_past_thirty_years_are_slept_in_full_and_the_deadline_holds() {
    const YEAR: u64 = 86_400 * 365;
    let deadline = Duration::from_secs(1000 * YEAR);
    let policy = Policy::new()
        .with_max_attempts(u32::MAX)
        .with_base(Duration::from_secs(1))
        .with_cap(Duration::MAX)
        .with_jitter(Jitter::None)
        .with_deadline(deadline);
    let waits = RefCell::new(Vec::new());
    let start = Instant::now();
    let result: Result<(), Busy> = policy
        .retrying()
        .on_retry(|_: &Busy, _, wait| waits.borrow_mut().push(wait))
        .run(|| async { Err(Busy { retry_after: "" }) })
        .await;
    assert!(result.is_err());
    let waits = waits.into_inner();
    let total: Duration = waits.iter().sum();
    // Every wait is whole seconds, so the paused clock moves by exactly them.
    assert_eq!(start.elapsed(), total);
    // The schedule: 1s, 2s, 4s, ... while the sum stays within the deadline.
    let mut expected = Vec::new();
    let mut sum = Duration::ZERO;
    for n in 0.. {
        let ceiling = policy.ceiling(n);
        if sum + ceiling > deadline {
            break;
        }
        sum += ceiling;
        expected.push(ceiling);
    }
    assert_eq!(waits, expected);
    assert_eq!(waits.len(), 34);
    assert!(*waits.last().unwrap() > Duration::from_secs(30 * YEAR));
}

fn record(waits: &RefCell<Vec<Duration>>, wait: Duration) {
    waits.borrow_mut().push(wait);
}

#[retry(
    max = 4294967295,
    base = "1s",
    cap = "18446744073s",
    jitter = "none",
    deadline = "8760000h",
    on_retry = |_, _, wait| record(waits, wait)
)]
async fn for_ever(waits: &RefCell<Vec<Duration>>) -> Result<(), Busy> {
    Err(Busy { retry_after: "" })
}

/// The attribute's expansion sleeps through the same helper as the closure
/// API: 1s, 2s, 4s, ... up to 2^33 s (272 years), within a 1,000-year deadline.
#[tokio::test(start_paused = true)]
async fn the_attribute_sleeps_waits_past_thirty_years_in_full() {
    let waits = RefCell::new(Vec::new());
    let start = Instant::now();
    assert!(for_ever(&waits).await.is_err());
    let waits = waits.into_inner();
    assert_eq!(waits.len(), 34);
    assert_eq!(start.elapsed(), waits.iter().sum::<Duration>());
}
