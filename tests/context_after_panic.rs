//! A retried call that panics inside an attempt, its panic caught by the
//! attempt's body: the attempt's context is as it was before the call (its
//! number, its deadline, its idempotency key), whichever way into its own
//! attempt's context the call took (the usual way, a deadline of its own,
//! or the slow way under an attempt that drew its key); and outside any
//! attempt, there is none after.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::task::Poll;

use retry_runtime::{current_attempt, retry};

/// `future`, with a panic in any of its polls caught.
async fn caught<F: Future>(future: F) -> std::thread::Result<F::Output> {
    let mut future = pin!(future);
    std::future::poll_fn(move |cx| {
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    })
    .await
}

#[retry(max = 2)]
async fn panics() -> Result<(), std::io::Error> {
    assert_eq!(
        current_attempt().map(|attempt| attempt.max_attempts()),
        Some(2)
    );
    panic!("inside the attempt")
}

#[retry(max = 2, deadline = "5s")]
async fn panics_with_a_deadline() -> Result<(), std::io::Error> {
    assert!(current_attempt()
        .and_then(|attempt| attempt.deadline())
        .is_some());
    panic!("inside the attempt")
}

/// An attempt without a deadline whose body catches the panics of the
/// retried calls it makes: its context after each, against before.
#[retry(max = 3)]
async fn catches(draw_key_first: bool) -> Result<u32, std::io::Error> {
    let before = draw_key_first.then(|| current_attempt().expect("inside an attempt"));
    assert!(caught(panics()).await.is_err());
    assert!(caught(panics_with_a_deadline()).await.is_err());
    let after = current_attempt().expect("still inside the attempt");
    assert_eq!(after.attempt(), 1);
    assert_eq!(after.max_attempts(), 3);
    assert_eq!(after.deadline(), None, "the inner call's deadline is gone");
    if let Some(before) = before {
        assert_eq!(after, before, "the same key, drawn before the calls");
    }
    // The key drawn now is this attempt's for the rest of it.
    assert_eq!(current_attempt(), Some(after));
    Ok(after.attempt())
}

#[tokio::test]
async fn a_panic_inside_a_retried_call_leaves_the_enclosing_attempt_as_it_was() {
    assert_eq!(catches(false).await.unwrap(), 1);
    assert_eq!(catches(true).await.unwrap(), 1);
}

#[tokio::test]
async fn a_panic_caught_outside_any_attempt_leaves_no_attempt_behind() {
    assert!(caught(panics()).await.is_err());
    assert_eq!(current_attempt(), None);
    assert!(caught(panics_with_a_deadline()).await.is_err());
    assert_eq!(current_attempt(), None);
}
