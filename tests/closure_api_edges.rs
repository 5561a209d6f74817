//! The closure API under policies built at run time, held to what its docs
//! and the attribute promise: how a call is reported (`last_call()`,
//! `on_give_up`), and what configuration mistakes say.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::hedge::Hedge;
use retry_runtime::{last_call, retry, Policy, Stop, Stopped};

fn io(kind: std::io::ErrorKind) -> std::io::Error {
    kind.into()
}

thread_local! {
    static GAVE_UP: std::cell::Cell<Option<Stopped>> = const { std::cell::Cell::new(None) };
}

fn record_give_up<T>(_: &std::io::Result<T>, stopped: &Stopped) {
    GAVE_UP.with(|gave_up| gave_up.set(Some(*stopped)));
}

/// Attempt 1 answers after 100 ms; attempts 2 and 3, hedges started at 10
/// and 20 ms, would answer after a second.
fn first_answers(started: &AtomicU32) -> impl std::future::Future<Output = u32> + '_ {
    let attempt = started.fetch_add(1, Ordering::Relaxed) + 1;
    async move {
        let took = if attempt == 1 { 100 } else { 1000 };
        tokio::time::sleep(Duration::from_millis(took)).await;
        attempt
    }
}

/// `Stopped::attempts` is "the attempts the call made": a hedged call that
/// sent three copies made three attempts, whichever of them answered.
#[tokio::test(start_paused = true)]
async fn a_hedged_call_reports_every_attempt_it_made() {
    let policy = Policy::new().with_max_attempts(3);

    // Attempt 1 succeeds while attempts 2 and 3 still run.
    let started = AtomicU32::new(0);
    let answer: std::io::Result<u32> = policy
        .retrying()
        .hedge(Hedge::after(Duration::from_millis(10)))
        .run(|| async { Ok(first_answers(&started).await) })
        .await;
    assert_eq!(answer.unwrap(), 1);
    assert_eq!(started.load(Ordering::Relaxed), 3);
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Done, 3));

    // Attempt 1 fails with an error `on` rejects while 2 and 3 still run.
    let started = AtomicU32::new(0);
    GAVE_UP.with(|gave_up| gave_up.set(None));
    let answer: std::io::Result<u32> = policy
        .on(|error: &std::io::Error| error.kind() != std::io::ErrorKind::InvalidInput)
        .hedge(Hedge::after(Duration::from_millis(10)))
        .on_give_up(record_give_up)
        .run(|| async {
            match first_answers(&started).await {
                1 => Err(io(std::io::ErrorKind::InvalidInput)),
                attempt => Ok(attempt),
            }
        })
        .await;
    assert_eq!(answer.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(started.load(Ordering::Relaxed), 3);
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::NotRetryable, 3));
    let gave_up = GAVE_UP.with(std::cell::Cell::get).unwrap();
    assert_eq!(
        (gave_up.reason(), gave_up.attempts()),
        (Stop::NotRetryable, 3)
    );
    assert_eq!(
        gave_up.to_string(),
        "not_retryable after 3 attempts in 100ms"
    );
}

static STARTED: AtomicU32 = AtomicU32::new(0);

#[retry(max = 3, hedge = "10ms")]
async fn hedged_by_the_attribute() -> Result<u32, std::io::Error> {
    Ok(first_answers(&STARTED).await)
}

/// The attribute's hedged call reports the same.
#[tokio::test(start_paused = true)]
async fn the_attribute_reports_every_hedged_attempt_too() {
    assert_eq!(hedged_by_the_attribute().await.unwrap(), 1);
    assert_eq!(STARTED.load(Ordering::Relaxed), 3);
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Done, 3));
}

/// A policy built at run time is checked by `validate` with the attribute's
/// rules, and each error says, as the attribute's do, how to fix it.
#[test]
fn validation_errors_say_how_to_fix_the_key() {
    // With a valid timeout, so that every case has the type of the last.
    let policy = Policy::new().with_timeout(Duration::from_secs(1));
    let cases = [
        (
            policy.with_max_attempts(0),
            "`max`",
            "use 1 for a single attempt",
        ),
        (
            policy.with_base(Duration::ZERO),
            "`base`",
            "write a duration such as 100ms",
        ),
        (
            policy.with_base(Duration::from_secs(20)),
            "`cap` (10s) must be at least `base` (20s)",
            "raise `cap`, or lower `base`",
        ),
        (
            policy.with_multiplier(0.5),
            "`multiplier`",
            "use 2 to double each wait",
        ),
        (
            policy.with_multiplier(f64::NAN),
            "not NaN",
            "use 2 to double each wait",
        ),
        (
            policy.with_deadline(Duration::ZERO),
            "`deadline`",
            "remove `deadline` for no limit",
        ),
        (
            policy.with_timeout(Duration::ZERO),
            "`timeout`",
            "remove `timeout` for no limit",
        ),
    ];
    for (policy, key, fix) in cases {
        let error = policy.validate().unwrap_err().to_string();
        assert!(
            error.contains(key) && error.contains(fix),
            "{policy:?}: {error}"
        );
    }
    assert!(Policy::new().validate().is_ok());
}
