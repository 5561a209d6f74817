//! The loop without the macro: a policy built at run time over a closure.

mod support;

use std::time::Duration;

use retry_runtime::{Jitter, Policy};
use support::{is_transient, Failure, Flaky};

fn policy() -> Policy {
    Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(200))
        .with_jitter(Jitter::None)
}

#[tokio::test(start_paused = true)]
async fn runs_the_same_schedule_as_the_attribute() {
    let dep = Flaky::failing(10);
    let error = policy().retry(|| async { dep.call() }).await.unwrap_err();
    assert_eq!(error.call, 4);
    assert_eq!(dep.starts_ms(), [0, 200, 600, 1400]);
}

#[tokio::test(start_paused = true)]
async fn on_limits_retries_to_accepted_errors() {
    let dep = Flaky::permanent(10);
    let result = policy().on(is_transient).run(|| async { dep.call() }).await;
    assert_eq!(
        result,
        Err(Failure {
            call: 1,
            transient: false
        })
    );

    let dep = Flaky::failing(2);
    assert_eq!(
        policy().on(is_transient).run(|| async { dep.call() }).await,
        Ok(3)
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_from_configuration_is_honoured() {
    let dep = Flaky::failing(10);
    let policy = policy().with_deadline(Duration::from_millis(700));
    policy.retry(|| async { dep.call() }).await.unwrap_err();
    // The third wait (800ms) would end at 1400ms, past 700ms.
    assert_eq!(dep.starts_ms(), [0, 200, 600]);
}

#[test]
fn jitter_names_round_trip() {
    for jitter in Jitter::ALL {
        assert_eq!(jitter.name().parse::<Jitter>(), Ok(jitter));
        assert_eq!(jitter.to_string(), jitter.name());
    }
    let error = "Full".parse::<Jitter>().unwrap_err();
    assert!(error.to_string().contains("\"full\""), "{error}");
}

#[test]
fn policies_are_built_in_constants() {
    const POLICY: Policy = Policy::new()
        .with_max_attempts(6)
        .with_base(Duration::from_millis(200))
        .with_cap(Duration::from_secs(10))
        .with_multiplier(2.0)
        .with_jitter(Jitter::Decorrelated)
        .with_deadline(Duration::from_secs(30));
    static SHARED: Policy = POLICY.without_deadline();
    assert_eq!(POLICY.max_attempts(), 6);
    assert_eq!(SHARED.deadline(), None);
    let ceilings: Vec<u128> = (0..7).map(|n| POLICY.ceiling(n).as_millis()).collect();
    assert_eq!(ceilings, [200, 400, 800, 1600, 3200, 6400, 10_000]);
}

#[tokio::test(start_paused = true)]
async fn the_closure_runs_inside_its_attempt() {
    let seen = std::cell::RefCell::new(Vec::new());
    let result: Result<(), Failure> = policy()
        .retry(|| {
            // The synchronous part of the closure sees its attempt too.
            seen.borrow_mut()
                .push(retry_runtime::current_attempt().map(|c| c.attempt()));
            async {
                Err(Failure {
                    call: 0,
                    transient: true,
                })
            }
        })
        .await;
    assert!(result.is_err());
    assert_eq!(seen.take(), [Some(1), Some(2), Some(3), Some(4)]);
}

#[test]
fn blocking_closures_retry_on_the_calling_thread() {
    let dep = Flaky::failing(2);
    let quick = policy().with_base(Duration::from_millis(1));
    assert_eq!(quick.on(is_transient).run_blocking(|| dep.call()), Ok(3));
}
