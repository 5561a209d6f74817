//! Retry at one layer: a retried function reached from inside another's
//! attempt makes one attempt, unless it says `nested = "retry"`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use retry_runtime::{current_attempt, retry};

#[derive(Debug, PartialEq)]
struct Down;

#[retry(max = 3, base = "10ms")]
async fn bottom(calls: &AtomicU32) -> Result<(), Down> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

#[retry(max = 3, base = "10ms", nested = "retry")]
async fn bottom_that_retries_anyway(calls: &AtomicU32) -> Result<(), Down> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

/// An ordinary function between two retried layers.
async fn plain_layer(calls: &AtomicU32, stubborn: bool) -> Result<(), Down> {
    if stubborn {
        bottom_that_retries_anyway(calls).await
    } else {
        bottom(calls).await
    }
}

#[retry(max = 3, base = "10ms")]
async fn middle(calls: &AtomicU32, stubborn: bool) -> Result<(), Down> {
    plain_layer(calls, stubborn).await
}

#[retry(max = 3, base = "10ms")]
async fn top(calls: &AtomicU32, stubborn: bool) -> Result<(), Down> {
    middle(calls, stubborn).await
}

#[tokio::test(start_paused = true)]
async fn three_layers_of_three_attempts_cost_three_calls() {
    let calls = AtomicU32::new(0);
    assert_eq!(top(&calls, false).await, Err(Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn nested_retry_opts_back_in() {
    let calls = AtomicU32::new(0);
    assert_eq!(top(&calls, true).await, Err(Down));
    // The top retries three times; each time the bottom retries three times.
    assert_eq!(calls.load(Ordering::SeqCst), 9);
}

#[tokio::test(start_paused = true)]
async fn a_layer_called_on_its_own_retries() {
    let calls = AtomicU32::new(0);
    assert_eq!(bottom(&calls).await, Err(Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(current_attempt(), None, "no context is left behind");
}

#[retry(max = 3, base = "10ms")]
async fn spawns_work(calls: Arc<AtomicU32>) -> Result<(), Down> {
    let calls = Arc::clone(&calls);
    let task = tokio::spawn(async move { bottom(&calls).await });
    task.await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn work_spawned_from_an_attempt_is_not_nested() {
    let calls = Arc::new(AtomicU32::new(0));
    assert_eq!(spawns_work(Arc::clone(&calls)).await, Err(Down));
    // Each of the 3 outer attempts spawns a task whose call retries 3 times.
    assert_eq!(calls.load(Ordering::SeqCst), 9);
}

#[retry(max = 3, base = "1ms")]
fn blocking_bottom(calls: &AtomicU32) -> Result<(), Down> {
    calls.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

#[retry(max = 3, base = "10ms")]
async fn calls_a_plain_function(calls: &AtomicU32) -> Result<(), Down> {
    blocking_bottom(calls)
}

#[tokio::test(start_paused = true)]
async fn plain_functions_follow_the_same_rule() {
    let calls = AtomicU32::new(0);
    assert_eq!(calls_a_plain_function(&calls).await, Err(Down));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// Fails twice, then succeeds; yields between, so calls interleave on the
/// worker threads.
#[retry(max = 3, base = "1ms", cap = "2ms")]
async fn independent(calls: &AtomicU32) -> Result<u32, Down> {
    tokio::task::yield_now().await;
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::task::yield_now().await;
    if call < 3 {
        Err(Down)
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
