//! Nesting is judged by what failed the outer attempt. An inner give-up
//! that fails the attempt (`?`, `try_join_all`, `join_all` then `?`, a
//! `FuturesUnordered` fan-out) stops the outer call, so the batch is not
//! re-sent; an inner give-up the body handled (a fallback,
//! `unwrap_or_default`, a degraded answer) leaves the body's own failure to
//! the outer's rules; a function that never retries (`max = 1`, a
//! breaker-only guard) is no retry layer. Each test counts the calls that
//! reach the bottom, on a paused clock. The shapes the mechanism cannot tell
//! apart are pinned at the end, with the way each errs.

#[path = "support/counting.rs"]
mod counting;
#[path = "support/counts.rs"]
mod counts;

use counting::{calls, count, own_call};

use std::sync::atomic::AtomicU32;

use futures_util::future::{join_all, try_join_all};
use futures_util::stream::{FuturesUnordered, StreamExt};
use retry_runtime::{retry, CircuitBreaker, CircuitOpen};

#[derive(Debug, Clone, PartialEq, Default)]
enum Error {
    #[default]
    Down,
    Refused,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Refused
    }
}

/// A dependency that is down: every call fails, after a real wait.
#[retry(max = 3, base = "10ms")]
async fn profile(calls: &AtomicU32) -> Result<String, Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

// A handled give-up does not switch off the outer's retries.

#[retry(max = 3, base = "10ms")]
async fn handler_with_default(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = profile(inner).await.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_give_up_handled_with_unwrap_or_default_leaves_the_own_failure_to_the_outer() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(handler_with_default(&inner, &own).await, Err(Error::Down));
    // Three attempts of the handler, each with the inner's three calls.
    assert_eq!(calls(&own), 3);
    assert_eq!(calls(&inner), 9);
}

#[retry(max = 3, base = "10ms")]
async fn handler_with_fallback(
    inner: &AtomicU32,
    fallback: &AtomicU32,
    own: &AtomicU32,
) -> Result<String, Error> {
    let profile = match profile(inner).await {
        Ok(profile) => profile,
        Err(_) => {
            count(fallback);
            "cached profile".to_owned()
        }
    };
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_give_up_handled_with_a_fallback_leaves_the_own_failure_to_the_outer() {
    let (inner, fallback, own) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        handler_with_fallback(&inner, &fallback, &own).await,
        Err(Error::Down)
    );
    assert_eq!((calls(&own), calls(&fallback), calls(&inner)), (3, 3, 9));
}

#[retry(max = 3, base = "10ms")]
async fn handler_with_degraded_answer(inner: &AtomicU32, own: &AtomicU32) -> Result<bool, Error> {
    let personalised = profile(inner).await.ok().is_some();
    own_call::<Error>(own).await?;
    Ok(personalised)
}

#[tokio::test(start_paused = true)]
async fn a_degraded_answer_leaves_the_own_failure_to_the_outer() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        handler_with_degraded_answer(&inner, &own).await,
        Err(Error::Down)
    );
    assert_eq!((calls(&own), calls(&inner)), (3, 9));
}

/// The own call recovers on the handler's second attempt.
#[retry(max = 3, base = "10ms")]
async fn handler_that_recovers(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = profile(inner).await.unwrap_or_default();
    tokio::task::yield_now().await;
    if count(own) < 2 {
        return Err(Error::Down);
    }
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_degrades_gracefully_is_retried_until_its_own_call_succeeds() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(handler_that_recovers(&inner, &own).await, Ok(String::new()));
    assert_eq!((calls(&own), calls(&inner)), (2, 6));
}

// A function that never retries is no retry layer.

#[retry(max = 1)]
async fn single_shot(calls: &AtomicU32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms")]
async fn calls_a_single_shot(calls: &AtomicU32) -> Result<(), Error> {
    single_shot(calls).await
}

#[tokio::test(start_paused = true)]
async fn an_inner_max_1_failure_is_retried_by_the_outer() {
    let calls_made = AtomicU32::new(0);
    assert_eq!(calls_a_single_shot(&calls_made).await, Err(Error::Down));
    assert_eq!(calls(&calls_made), 3);
}

static GUARD: CircuitBreaker = CircuitBreaker::new();

#[retry(max = 1, breaker = &GUARD)]
async fn guarded(calls: &AtomicU32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms")]
async fn calls_a_guarded_function(calls: &AtomicU32) -> Result<(), Error> {
    guarded(calls).await
}

#[tokio::test(start_paused = true)]
async fn an_inner_breaker_only_guard_is_no_retry_layer() {
    let calls_made = AtomicU32::new(0);
    assert_eq!(
        calls_a_guarded_function(&calls_made).await,
        Err(Error::Down)
    );
    assert_eq!(calls(&calls_made), 3);
}

// A give-up that fails the outer attempt stops the outer call.

#[retry(max = 3, base = "10ms")]
async fn propagates(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    count(own);
    profile(inner).await
}

#[tokio::test(start_paused = true)]
async fn a_give_up_propagated_with_question_mark_stops_the_outer() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    let counting = counts::Counting::on_this_thread();
    let nested = counting.now().nested;
    assert_eq!(propagates(&inner, &own).await, Err(Error::Down));
    assert_eq!((calls(&own), calls(&inner)), (1, 3));
    assert!(counting.now().nested > nested);
}

/// One item of a batch: item 0 is down, the others answer after a wait.
#[retry(max = 3, base = "10ms")]
async fn item(calls: &AtomicU32, id: u32) -> Result<u32, Error> {
    tokio::task::yield_now().await;
    count(calls);
    if id == 0 {
        Err(Error::Down)
    } else {
        Ok(id)
    }
}

#[retry(max = 3, base = "10ms")]
async fn batch_try_join_all(calls: &AtomicU32, batches: &AtomicU32) -> Result<Vec<u32>, Error> {
    count(batches);
    try_join_all((0..4).map(|id| item(calls, id))).await
}

#[tokio::test(start_paused = true)]
async fn try_join_all_does_not_resend_the_batch() {
    let (calls_made, batches) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        batch_try_join_all(&calls_made, &batches).await,
        Err(Error::Down)
    );
    // Item 0 three times, the three others once.
    assert_eq!((calls(&batches), calls(&calls_made)), (1, 6));
}

#[retry(max = 3, base = "10ms")]
async fn batch_join_all(calls: &AtomicU32, batches: &AtomicU32) -> Result<Vec<u32>, Error> {
    count(batches);
    join_all((0..4).map(|id| item(calls, id)))
        .await
        .into_iter()
        .collect()
}

#[tokio::test(start_paused = true)]
async fn join_all_then_question_mark_does_not_resend_the_batch() {
    let (calls_made, batches) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        batch_join_all(&calls_made, &batches).await,
        Err(Error::Down)
    );
    assert_eq!((calls(&batches), calls(&calls_made)), (1, 6));
}

/// Item 0 is down; the others take longer to answer than it takes to give
/// up, so the give-up happens while they are still in flight.
#[retry(max = 3, base = "10ms")]
async fn slow_item(calls: &AtomicU32, id: u32) -> Result<u32, Error> {
    tokio::time::sleep(std::time::Duration::from_millis(u64::from(id) * 100)).await;
    count(calls);
    if id == 0 {
        Err(Error::Down)
    } else {
        Ok(id)
    }
}

#[retry(max = 3, base = "10ms")]
async fn batch_unordered(calls: &AtomicU32, batches: &AtomicU32) -> Result<Vec<u32>, Error> {
    count(batches);
    let results: Vec<Result<u32, Error>> = (0..4)
        .map(|id| slow_item(calls, id))
        .collect::<FuturesUnordered<_>>()
        .collect()
        .await;
    results.into_iter().collect()
}

#[tokio::test(start_paused = true)]
async fn a_futures_unordered_fan_out_does_not_resend_the_batch() {
    let (calls_made, batches) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        batch_unordered(&calls_made, &batches).await,
        Err(Error::Down)
    );
    assert_eq!((calls(&batches), calls(&calls_made)), (1, 6));
}

#[retry(max = 3, base = "10ms")]
async fn batch_unordered_first_error(calls: &AtomicU32, batches: &AtomicU32) -> Result<u32, Error> {
    count(batches);
    let mut items: FuturesUnordered<_> = (0..4).map(|id| slow_item(calls, id)).collect();
    let mut sum = 0;
    while let Some(result) = items.next().await {
        sum += result?;
    }
    Ok(sum)
}

#[tokio::test(start_paused = true)]
async fn a_fan_out_that_returns_its_first_error_does_not_resend_the_batch() {
    let (calls_made, batches) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        batch_unordered_first_error(&calls_made, &batches).await,
        Err(Error::Down)
    );
    // Item 0 gives up at 20 ms, before the others answer: they are dropped
    // with the batch, which is not re-sent.
    assert_eq!(calls(&batches), 1);
    assert_eq!(calls(&calls_made), 3);
}

// Three layers of three, with handled give-ups in between.

#[retry(max = 3, base = "10ms")]
async fn bottom(calls: &AtomicU32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms")]
async fn middle(calls: &AtomicU32) -> Result<(), Error> {
    bottom(calls).await
}

#[retry(max = 3, base = "10ms")]
async fn top(calls: &AtomicU32) -> Result<(), Error> {
    middle(calls).await
}

#[tokio::test(start_paused = true)]
async fn three_layers_of_three_cost_three_calls() {
    let calls_made = AtomicU32::new(0);
    assert_eq!(top(&calls_made).await, Err(Error::Down));
    assert_eq!(calls(&calls_made), 3);
}

// The shapes the mechanism cannot tell apart.

/// The body handles the give-up, then fails without waiting on anything in
/// between: the failure looks like the give-up propagated.
#[retry(max = 3, base = "10ms")]
async fn handles_then_fails_at_once(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = profile(inner).await.unwrap_or_default();
    count(own);
    if profile.is_empty() {
        return Err(Error::Down);
    }
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_handled_give_up_then_a_failure_in_the_same_poll_errs_toward_not_retrying() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        handles_then_fails_at_once(&inner, &own).await,
        Err(Error::Down)
    );
    assert_eq!((calls(&own), calls(&inner)), (1, 3));
}

/// A give-up kept aside and propagated after the body waited on something
/// that is not a retried call: it looks handled.
#[retry(max = 2, base = "10ms")]
async fn propagates_later(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = profile(inner).await;
    tokio::task::yield_now().await;
    count(own);
    profile
}

#[tokio::test(start_paused = true)]
async fn a_give_up_propagated_after_other_waits_is_retried_once_by_the_outer() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(propagates_later(&inner, &own).await, Err(Error::Down));
    // The one shape that multiplies: two outer attempts of three calls.
    assert_eq!((calls(&own), calls(&inner)), (2, 6));
}

// Plain functions: calls run one after another, so a give-up is always
// followed by the body's next step in the same call; a handled give-up then
// an own failure cannot be told from a propagated one, and errs toward not
// retrying.

#[retry(max = 3, base = "1ms")]
fn blocking_profile(calls: &AtomicU32) -> Result<String, Error> {
    count(calls);
    Err(Error::Down)
}

#[retry(max = 1)]
fn blocking_single_shot(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "1ms")]
fn blocking_propagates(inner: &AtomicU32) -> Result<String, Error> {
    blocking_profile(inner)
}

#[retry(max = 3, base = "1ms")]
fn blocking_calls_a_single_shot(calls: &AtomicU32) -> Result<(), Error> {
    blocking_single_shot(calls)
}

#[retry(max = 3, base = "1ms")]
fn blocking_handles_then_fails(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = blocking_profile(inner).unwrap_or_default();
    count(own);
    if profile.is_empty() {
        return Err(Error::Down);
    }
    Ok(profile)
}

#[retry(max = 3, base = "1ms")]
fn blocking_middle(calls: &AtomicU32) -> Result<String, Error> {
    blocking_profile(calls)
}

#[retry(max = 3, base = "1ms")]
fn blocking_top(calls: &AtomicU32) -> Result<String, Error> {
    blocking_middle(calls)
}

#[test]
fn plain_functions_follow_the_same_rule() {
    let inner = AtomicU32::new(0);
    assert_eq!(blocking_propagates(&inner), Err(Error::Down));
    assert_eq!(calls(&inner), 3, "a propagated give-up stops the outer");

    let single = AtomicU32::new(0);
    assert_eq!(blocking_calls_a_single_shot(&single), Err(Error::Down));
    assert_eq!(calls(&single), 3, "max = 1 is no retry layer");

    let layers = AtomicU32::new(0);
    assert_eq!(blocking_top(&layers), Err(Error::Down));
    assert_eq!(calls(&layers), 3, "three layers of three: three calls");

    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(blocking_handles_then_fails(&inner, &own), Err(Error::Down));
    assert_eq!(
        (calls(&own), calls(&inner)),
        (1, 3),
        "a handled give-up then a failure errs toward not retrying"
    );
}

// Nesting deeper than the context keeps (16 attempts on one thread): the
// deeper calls run as if outside any attempt, and the outer ones keep
// theirs.

#[retry(max = 2, base = "1ms")]
fn nested_deep(depth: u32) -> Result<(u32, bool), Error> {
    let inner = if depth == 0 {
        (0, false)
    } else {
        nested_deep(depth - 1)?
    };
    let attempt = retry_runtime::current_attempt().map(|context| context.attempt());
    Ok((inner.0 + 1, inner.1 || attempt != Some(1)))
}

#[test]
fn twenty_attempts_one_inside_another_leave_the_outer_contexts_intact() {
    // Every level saw its own first attempt, or (beyond 16 deep) none.
    let (levels, _) = nested_deep(19).unwrap();
    assert_eq!(levels, 20);
    let (_, odd_out_within_16) = nested_deep(15).unwrap();
    assert!(!odd_out_within_16, "each of 16 levels sees its own attempt");
    assert_eq!(retry_runtime::current_attempt(), None);
}
