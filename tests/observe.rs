//! `on_retry` hooks and the attempt context, checked against the attempts
//! actually made.

use std::cell::RefCell;
use std::time::Duration;

use retry_runtime::{current_attempt, retry};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
struct Failure(u32);

/// What the hook was called with: error, attempt, wait.
type HookCall = (Failure, u32, Duration);

thread_local! {
    static HOOK_CALLS: RefCell<Vec<HookCall>> = RefCell::default();
}

fn record(error: &Failure, attempt: u32, wait: Duration) {
    HOOK_CALLS.with(|calls| calls.borrow_mut().push((error.clone(), attempt, wait)));
}

#[retry(max = 4, base = "100ms", jitter = "none", on_retry = record)]
async fn flaky(calls: &RefCell<u32>, failures: u32) -> Result<u32, Failure> {
    *calls.borrow_mut() += 1;
    let call = *calls.borrow();
    if call <= failures {
        Err(Failure(call))
    } else {
        Ok(call)
    }
}

#[tokio::test(start_paused = true)]
async fn the_hook_sees_each_retry_before_its_wait() {
    HOOK_CALLS.with(|calls| calls.borrow_mut().clear());
    let calls = RefCell::new(0);
    assert_eq!(flaky(&calls, 10).await, Err(Failure(4)));
    let seen = HOOK_CALLS.with(|calls| calls.take());
    // Three retries; none after the last attempt.
    assert_eq!(
        seen,
        [
            (Failure(1), 1, Duration::from_millis(100)),
            (Failure(2), 2, Duration::from_millis(200)),
            (Failure(3), 3, Duration::from_millis(400)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_hook_is_called_before_the_wait_starts() {
    #[retry(max = 2, base = "1s", jitter = "none", on_retry = |_, _, _| STAMPS.with(|s| s.borrow_mut().push(Instant::now())))]
    async fn failing() -> Result<(), Failure> {
        STAMPS.with(|s| s.borrow_mut().push(Instant::now()));
        Err(Failure(0))
    }
    thread_local! {
        static STAMPS: RefCell<Vec<Instant>> = RefCell::default();
    }
    failing().await.unwrap_err();
    let stamps = STAMPS.with(RefCell::take);
    // Attempt, hook (same instant), attempt one second later.
    assert_eq!(stamps.len(), 3);
    assert_eq!(stamps[1], stamps[0]);
    assert_eq!(stamps[2] - stamps[1], Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn on_retry_ok_sees_retried_ok_values_and_on_retry_the_errors() {
    #[retry(
        max = 4,
        base = "10ms",
        jitter = "none",
        on_ok = |v| *v < 2,
        on_retry = |e, a, w| SEEN.with(|s| s.borrow_mut().push(format!("error {e:?} after attempt {a}, wait {w:?}"))),
        on_retry_ok = |v, a, w| SEEN.with(|s| s.borrow_mut().push(format!("value {v} after attempt {a}, wait {w:?}"))),
    )]
    async fn counts(calls: &RefCell<u32>) -> Result<u32, Failure> {
        *calls.borrow_mut() += 1;
        let call = *calls.borrow();
        if call == 1 {
            return Err(Failure(1));
        }
        Ok(call - 1)
    }
    thread_local! {
        static SEEN: RefCell<Vec<String>> = RefCell::default();
    }
    let calls = RefCell::new(0);
    assert_eq!(counts(&calls).await, Ok(2));
    assert_eq!(
        SEEN.with(RefCell::take),
        [
            "error Failure(1) after attempt 1, wait 10ms",
            "value 1 after attempt 2, wait 20ms"
        ]
    );
}

/// What the body saw: attempt, max attempts, last, time left.
type Seen = (u32, u32, bool, Option<Duration>);

#[tokio::test(start_paused = true)]
async fn the_body_reads_its_attempt_and_time_left() {
    #[retry(max = 3, base = "100ms", jitter = "none", deadline = "1s")]
    async fn observed(seen: &RefCell<Vec<Seen>>) -> Result<(), Failure> {
        let context = current_attempt().unwrap();
        seen.borrow_mut().push((
            context.attempt(),
            context.max_attempts(),
            context.is_last(),
            context.time_left(),
        ));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Still readable after an `.await` inside the attempt.
        assert_eq!(current_attempt().unwrap().attempt(), context.attempt());
        Err(Failure(context.attempt()))
    }
    let seen = RefCell::default();
    assert_eq!(observed(&seen).await, Err(Failure(3)));
    let ms = Duration::from_millis;
    assert_eq!(
        seen.take(),
        [
            (1, 3, false, Some(ms(1000))),
            (2, 3, false, Some(ms(850))),
            (3, 3, true, Some(ms(600)))
        ]
    );
    assert_eq!(current_attempt(), None);
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_reads_its_own_attempts() {
    #[retry(max = 5)]
    async fn inner() -> Result<(u32, u32), Failure> {
        let context = current_attempt().unwrap();
        Ok((context.attempt(), context.max_attempts()))
    }
    #[retry(max = 3)]
    async fn outer() -> Result<(u32, u32), Failure> {
        inner().await
    }
    assert_eq!(outer().await, Ok((1, 5)));
    assert_eq!(inner().await, Ok((1, 5)));
}

#[test]
fn plain_functions_read_their_attempt_too() {
    #[retry(max = 3, base = "1ms")]
    fn blocking(seen: &RefCell<Vec<u32>>) -> Result<(), Failure> {
        let attempt = current_attempt().unwrap().attempt();
        seen.borrow_mut().push(attempt);
        Err(Failure(attempt))
    }
    let seen = RefCell::default();
    assert_eq!(blocking(&seen), Err(Failure(3)));
    assert_eq!(seen.take(), [1, 2, 3]);
    assert_eq!(current_attempt(), None);
}
