//! The attempts a call made and why it stopped, read after it returns with
//! `last_call()`, for logs such as "failed after 3 attempts", without
//! wrapping the error.

use std::cell::Cell;

use retry_runtime::{last_call, retry, Policy, Stop};

#[derive(Debug, PartialEq)]
struct Failure {
    transient: bool,
}

#[retry(max = 4, base = "10ms", on = |failure| failure.transient)]
async fn fails_until(calls: &Cell<u32>, succeeds_at: u32, transient: bool) -> Result<u32, Failure> {
    calls.set(calls.get() + 1);
    if calls.get() < succeeds_at {
        Err(Failure { transient })
    } else {
        Ok(calls.get())
    }
}

fn last() -> (Stop, u32) {
    let last = last_call().expect("a call ended on this thread");
    assert_eq!(last.elapsed(), None);
    (last.reason(), last.attempts())
}

#[tokio::test(start_paused = true)]
async fn each_call_leaves_its_attempts_and_reason() {
    let calls = Cell::new(0);
    assert_eq!(
        fails_until(&calls, 10, true).await,
        Err(Failure { transient: true })
    );
    assert_eq!(last(), (Stop::Exhausted, 4));
    assert_eq!(
        last_call().unwrap().to_string(),
        "exhausted after 4 attempts"
    );

    calls.set(0);
    assert_eq!(fails_until(&calls, 3, true).await, Ok(3));
    assert_eq!(last(), (Stop::Done, 3));

    // A success at once overwrites what the call before left.
    calls.set(0);
    assert_eq!(fails_until(&calls, 1, true).await, Ok(1));
    assert_eq!(last(), (Stop::Done, 1));

    calls.set(0);
    fails_until(&calls, 10, false).await.unwrap_err();
    assert_eq!(last(), (Stop::NotRetryable, 1));
    assert_eq!(
        last_call().unwrap().to_string(),
        "not_retryable after 1 attempt"
    );
}

#[tokio::test(start_paused = true)]
async fn an_outer_call_ends_after_the_inner_one() {
    #[retry(max = 3, base = "1ms")]
    async fn outer(calls: &Cell<u32>) -> Result<u32, Failure> {
        fails_until(calls, 10, true).await
    }
    let calls = Cell::new(0);
    outer(&calls).await.unwrap_err();
    // The inner call made 4 attempts and gave up; the outer returned at once.
    assert_eq!(calls.get(), 4);
    assert_eq!(last(), (Stop::Nested, 1));
}

#[test]
fn plain_functions_and_the_closure_api_leave_them_too() {
    #[retry(max = 2, base = "1ms")]
    fn blocking() -> Result<(), std::io::Error> {
        Err(std::io::ErrorKind::ConnectionReset.into())
    }
    blocking().unwrap_err();
    assert_eq!(last(), (Stop::Exhausted, 2));

    let mut calls = 0;
    let result: std::io::Result<u32> = Policy::new()
        .with_max_attempts(5)
        .with_base(std::time::Duration::from_millis(1))
        .retrying()
        .run_blocking(|| {
            calls += 1;
            if calls < 2 {
                Err(std::io::ErrorKind::Interrupted.into())
            } else {
                Ok(calls)
            }
        });
    assert_eq!(result.unwrap(), 2);
    assert_eq!(last(), (Stop::Done, 2));
}

#[test]
fn no_call_yet_is_none() {
    std::thread::spawn(|| assert_eq!(last_call(), None))
        .join()
        .unwrap();
}
