//! Retry at one layer, the one closest to the failure (the `Nested` docs): a
//! retried function called inside another's attempt retries under its own
//! policy, within the outer deadline; once it gives up after retrying, the
//! outer call returns that error at once, unless the outer says
//! `nested = "retry"`. A failure no inner layer retried is judged by the
//! outer's own rules.

#[path = "support/counts.rs"]
mod counts;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::{current_attempt, retry};
use tokio::time::Instant;

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    BadRequest,
}

fn count(calls: &AtomicU32) -> u32 {
    calls.fetch_add(1, Ordering::SeqCst) + 1
}

// Three layers of three attempts, with an ordinary function between two of
// them.

#[retry(max = 3, base = "10ms")]
async fn bottom(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::Down)
}

async fn plain_layer(calls: &AtomicU32) -> Result<(), Error> {
    bottom(calls).await
}

#[retry(max = 3, base = "10ms")]
async fn middle(calls: &AtomicU32) -> Result<(), Error> {
    plain_layer(calls).await
}

#[retry(max = 3, base = "10ms")]
async fn top(calls: &AtomicU32) -> Result<(), Error> {
    middle(calls).await
}

#[retry(max = 3, base = "10ms", nested = "retry")]
async fn middle_that_multiplies(calls: &AtomicU32) -> Result<(), Error> {
    plain_layer(calls).await
}

#[retry(max = 3, base = "10ms", nested = "retry")]
async fn top_that_multiplies(calls: &AtomicU32) -> Result<(), Error> {
    middle_that_multiplies(calls).await
}

#[tokio::test(start_paused = true)]
async fn three_layers_of_three_attempts_cost_three_calls_at_the_bottom() {
    let calls = AtomicU32::new(0);
    let counting = counts::Counting::on_this_thread();
    let before = counting.now().nested;
    assert_eq!(top(&calls).await, Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The middle and the top each return at once, for reason `nested`.
    assert!(counting.now().nested - before >= 2);
}

#[tokio::test(start_paused = true)]
async fn nested_retry_on_the_outer_layers_multiplies_on_purpose() {
    let calls = AtomicU32::new(0);
    assert_eq!(top_that_multiplies(&calls).await, Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 27);
}

#[tokio::test(start_paused = true)]
async fn a_layer_called_on_its_own_retries() {
    let calls = AtomicU32::new(0);
    assert_eq!(bottom(&calls).await, Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(current_attempt(), None, "no context is left behind");
}

// A retried batch that fans out to retried uploads.

struct Store {
    uploads: AtomicU32,
    batches: AtomicU32,
    /// The upload call that fails once, transiently.
    blip: u32,
}

#[retry(max = 3, base = "10ms")]
async fn upload(store: &Store, _item: u32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    if count(&store.uploads) == store.blip {
        Err(Error::Down)
    } else {
        Ok(())
    }
}

#[retry(max = 3, base = "10ms")]
async fn upload_batch(store: &Store) -> Result<(), Error> {
    count(&store.batches);
    for item in 0..100 {
        upload(store, item).await?;
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn one_blip_in_a_retried_batch_resends_only_the_item_that_failed() {
    let store = Store {
        uploads: AtomicU32::new(0),
        batches: AtomicU32::new(0),
        blip: 37,
    };
    assert_eq!(upload_batch(&store).await, Ok(()));
    assert_eq!(store.uploads.load(Ordering::SeqCst), 101);
    assert_eq!(store.batches.load(Ordering::SeqCst), 1);
}

// A retried test, and a retried `main`, leave the retries of what they call
// as they are.

#[retry(max = 3, base = "10ms")]
async fn flaky_twice(calls: &AtomicU32) -> Result<u32, Error> {
    match count(calls) {
        call @ 3.. => Ok(call),
        _ => Err(Error::Down),
    }
}

/// The body of a `#[tokio::test]` retried against a flaky environment.
#[retry(max = 2, base = "10ms")]
async fn retried_test_body(calls: &AtomicU32) -> Result<(), Error> {
    assert_eq!(flaky_twice(calls).await?, 3);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_retried_test_of_a_retried_function_tests_its_retries() {
    let calls = AtomicU32::new(0);
    assert_eq!(retried_test_body(&calls).await, Ok(()));
    // The function retried as in production; the test ran once.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[retry(max = 3, base = "1ms")]
fn blocking_flaky_twice(calls: &AtomicU32) -> Result<u32, Error> {
    match count(calls) {
        call @ 3.. => Ok(call),
        _ => Err(Error::Down),
    }
}

#[retry(max = 3, base = "1ms")]
fn blocking_bottom(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::Down)
}

/// A `main` retried as a whole, as a batch job's might be.
#[retry(max = 3, base = "1ms")]
fn retried_main(calls: &AtomicU32, fail_for_good: bool) -> Result<u32, Error> {
    if fail_for_good {
        blocking_bottom(calls)?;
    }
    blocking_flaky_twice(calls)
}

#[test]
fn a_retried_main_leaves_the_retries_of_what_it_calls_as_they_are() {
    let calls = AtomicU32::new(0);
    assert_eq!(retried_main(&calls, false), Ok(3));
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // Plain functions follow the same rule: the inner layer's three calls,
    // and the outer returns at once.
    let calls = AtomicU32::new(0);
    assert_eq!(retried_main(&calls, true), Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[retry(max = 3, base = "10ms")]
async fn calls_a_plain_function(calls: &AtomicU32) -> Result<(), Error> {
    blocking_bottom(calls)
}

#[tokio::test(start_paused = true)]
async fn a_plain_function_inside_an_async_attempt_follows_the_same_rule() {
    let calls = AtomicU32::new(0);
    assert_eq!(calls_a_plain_function(&calls).await, Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

// Work spawned from an attempt is not part of it.

#[retry(max = 3, base = "10ms")]
async fn spawns_work(calls: Arc<AtomicU32>) -> Result<(), Error> {
    let calls = Arc::clone(&calls);
    let task = tokio::spawn(async move {
        assert_eq!(current_attempt(), None, "a spawned task runs no attempt");
        bottom(&calls).await
    });
    task.await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn work_spawned_from_an_attempt_is_not_part_of_it() {
    let calls = Arc::new(AtomicU32::new(0));
    assert_eq!(spawns_work(Arc::clone(&calls)).await, Err(Error::Down));
    // The spawned call's give-up is an ordinary failure to the outer, which
    // retries it by its own rules: 3 outer attempts of 3 calls.
    assert_eq!(calls.load(Ordering::SeqCst), 9);
}

// A failure no inner layer retried is judged by the outer's rules.

#[retry(max = 3, base = "10ms", on = |e| *e == Error::Down)]
async fn rejects_bad_requests(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::BadRequest)
}

#[retry(max = 3, base = "10ms")]
async fn retries_everything(calls: &AtomicU32) -> Result<(), Error> {
    rejects_bad_requests(calls).await
}

#[tokio::test(start_paused = true)]
async fn an_inner_permanent_error_is_judged_by_the_outer_rules() {
    let calls = AtomicU32::new(0);
    assert_eq!(retries_everything(&calls).await, Err(Error::BadRequest));
    // The inner made one attempt each time; the outer retried twice.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[retry(max = 3, base = "10ms")]
async fn outer_own_failure(calls: &AtomicU32, inner: &AtomicU32) -> Result<u32, Error> {
    // The inner call succeeds after retrying; the outer body then fails on
    // its own, and that failure is the outer's to retry.
    flaky_twice(inner).await?;
    count(calls);
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn the_outer_bodys_own_failure_is_retried_by_the_outer() {
    let (calls, inner) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(outer_own_failure(&calls, &inner).await, Err(Error::Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // 3 calls on the first outer attempt (two failures), 1 on each of the
    // two others.
    assert_eq!(inner.load(Ordering::SeqCst), 5);
}

// The outer deadline bounds the inner retries.

#[retry(max = 10, base = "300ms", cap = "10s", jitter = "none")]
async fn slow_to_recover(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms", deadline = "1s")]
async fn with_a_deadline(calls: &AtomicU32) -> Result<(), Error> {
    slow_to_recover(calls).await
}

#[tokio::test(start_paused = true)]
async fn the_outer_deadline_bounds_the_inner_retries() {
    let calls = AtomicU32::new(0);
    let started = Instant::now();
    assert_eq!(with_a_deadline(&calls).await, Err(Error::Down));
    // Waits of 300ms and 600ms fit in the outer's second; the next, 1.2s,
    // would pass it, so the inner stops at three calls, and the outer, whose
    // attempt it was part of, returns at once.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(started.elapsed(), Duration::from_millis(900));
}

#[tokio::test(start_paused = true)]
async fn an_inner_attempt_sees_the_nearest_deadline() {
    #[retry(max = 5)]
    async fn inner() -> Result<Option<Duration>, Error> {
        Ok(current_attempt().unwrap().time_left())
    }
    #[retry(max = 3, deadline = "1s")]
    async fn outer() -> Result<Option<Duration>, Error> {
        inner().await
    }
    assert_eq!(outer().await, Ok(Some(Duration::from_secs(1))));
    assert_eq!(inner().await, Ok(None));
}

// Unrelated calls are not nested.

/// Fails twice, then succeeds; yields between, so calls interleave on the
/// worker threads.
#[retry(max = 3, base = "1ms", cap = "2ms")]
async fn independent(calls: &AtomicU32) -> Result<u32, Error> {
    tokio::task::yield_now().await;
    let call = count(calls);
    tokio::task::yield_now().await;
    if call < 3 {
        Err(Error::Down)
    } else {
        Ok(call)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_unrelated_concurrent_calls_are_not_nested() {
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            tokio::spawn(async {
                let calls = AtomicU32::new(0);
                let result = independent(&calls).await;
                (result, calls.load(Ordering::SeqCst))
            })
        })
        .collect();
    for task in tasks {
        let (result, calls) = task.await.unwrap();
        assert_eq!((result, calls), (Ok(3), 3));
    }
}

/// Polls every future in turn from one task until all are done.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                if let std::task::Poll::Ready(value) = future.as_mut().poll(cx) {
                    *output = Some(value);
                }
            }
        }
        if outputs.iter().all(Option::is_some) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}

#[tokio::test(start_paused = true)]
async fn unrelated_calls_polled_together_in_one_task_are_not_nested() {
    // Fifty calls polled side by side in one task, outside any attempt: each
    // poll of one runs between polls of the others, never inside them.
    let counters: Vec<AtomicU32> = (0..50).map(|_| AtomicU32::new(0)).collect();
    let results = join_all(counters.iter().map(independent).collect()).await;
    assert!(results.iter().all(|result| *result == Ok(3)), "{results:?}");
}
