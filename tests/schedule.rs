//! Exact schedules on a paused clock (`jitter = "none"`): attempts, ceilings,
//! the cap, the multiplier, the classifier, and the error handed back.

mod support;

use retry_runtime::retry;
use support::{is_transient, Failure, Flaky};

#[retry(max = 4, base = "200ms", cap = "10s", jitter = "none", on = is_transient)]
async fn fetch(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(jitter = "none")]
async fn defaults(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 8, base = "100ms", cap = "1s", jitter = "none")]
async fn capped(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 5, base = "10ms", multiplier = 3, jitter = "none")]
async fn tripled(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 4, base = "100ms", multiplier = 1.5, jitter = "none")]
async fn one_and_a_half(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 3, base = "1m30s", cap = "2h", multiplier = 1, jitter = "none")]
async fn constant(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[retry(max = 1)]
async fn once(dep: &Flaky) -> Result<u32, Failure> {
    dep.call()
}

#[tokio::test(start_paused = true)]
async fn max_counts_every_attempt_and_waits_follow_the_ceilings() {
    let dep = Flaky::failing(10);
    let error = fetch(&dep).await.unwrap_err();
    // max = 4: the call and three retries, waiting 200, 400 and 800 ms.
    assert_eq!(dep.starts_ms(), [0, 200, 600, 1400]);
    // The caller gets the fourth call's error, unchanged.
    assert_eq!(
        error,
        Failure {
            call: 4,
            transient: true
        }
    );
}

#[tokio::test(start_paused = true)]
async fn success_on_a_retry_returns_that_value() {
    let dep = Flaky::failing(2);
    assert_eq!(fetch(&dep).await, Ok(3));
    assert_eq!(dep.starts_ms(), [0, 200, 600]);
}

#[tokio::test(start_paused = true)]
async fn first_attempt_success_never_waits() {
    let dep = Flaky::failing(0);
    let start = tokio::time::Instant::now();
    assert_eq!(fetch(&dep).await, Ok(1));
    assert_eq!(start.elapsed(), std::time::Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn defaults_are_three_attempts_from_100ms() {
    let dep = Flaky::failing(10);
    assert_eq!(defaults(&dep).await.unwrap_err().call, 3);
    assert_eq!(dep.starts_ms(), [0, 100, 300]);
}

#[tokio::test(start_paused = true)]
async fn cap_holds_every_later_wait() {
    let dep = Flaky::failing(100);
    capped(&dep).await.unwrap_err();
    let gaps: Vec<u128> = dep.gaps().iter().map(|d| d.as_millis()).collect();
    assert_eq!(gaps, [100, 200, 400, 800, 1000, 1000, 1000]);
}

#[tokio::test(start_paused = true)]
async fn multiplier_sets_the_growth() {
    let dep = Flaky::failing(100);
    tripled(&dep).await.unwrap_err();
    let gaps: Vec<u128> = dep.gaps().iter().map(|d| d.as_millis()).collect();
    assert_eq!(gaps, [10, 30, 90, 270]);

    let dep = Flaky::failing(100);
    one_and_a_half(&dep).await.unwrap_err();
    let gaps: Vec<u128> = dep.gaps().iter().map(|d| d.as_millis()).collect();
    assert_eq!(gaps, [100, 150, 225]);
}

#[tokio::test(start_paused = true)]
async fn multiplier_one_and_compound_durations_give_a_constant_wait() {
    let dep = Flaky::failing(100);
    constant(&dep).await.unwrap_err();
    assert_eq!(dep.starts_ms(), [0, 90_000, 180_000]);
}

#[tokio::test(start_paused = true)]
async fn max_one_never_retries() {
    let dep = Flaky::failing(100);
    assert_eq!(once(&dep).await.unwrap_err().call, 1);
    assert_eq!(dep.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_error_on_rejects_is_returned_at_once() {
    let dep = Flaky::permanent(10);
    let start = tokio::time::Instant::now();
    assert_eq!(
        fetch(&dep).await,
        Err(Failure {
            call: 1,
            transient: false
        })
    );
    assert_eq!(dep.calls(), 1);
    assert_eq!(start.elapsed(), std::time::Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn closures_classify_with_inferred_argument_types() {
    #[retry(max = 5, base = "1s", jitter = "none", on = |e| e.call < 3)]
    async fn until_third(dep: &Flaky) -> Result<u32, Failure> {
        dep.call()
    }
    let dep = Flaky::failing(10);
    // Calls 1 and 2 are retried; the third call's error is rejected by `on`.
    assert_eq!(until_third(&dep).await.unwrap_err().call, 3);
    assert_eq!(dep.starts_ms(), [0, 1000, 3000]);
}
