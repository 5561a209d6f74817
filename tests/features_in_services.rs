//! Features together, as a service uses them: retried functions calling
//! retried functions with fallbacks, fan-outs, spawned work and `select!`;
//! one breaker on two layers or two siblings, with hedging; hedging with a
//! deadline and a budget; calls dropped mid-wait or mid-attempt; a panic in
//! an inner body caught by the outer; hooks across layers. Every test counts
//! calls and checks the error returned, on a paused clock.

#[path = "support/counting.rs"]
mod counting;
use counting::{calls, count, own_call};

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{join_all, try_join_all};
use futures_util::stream::{FuturesUnordered, StreamExt};
use retry_runtime::{
    current_attempt, retry, CircuitBreaker, CircuitOpen, CircuitState, Stop, Stopped, TimedOut,
};
use tokio::time::{advance, sleep};

#[derive(Debug, Clone, PartialEq, Default)]
enum Error {
    #[default]
    Down,
    Refused,
    TimedOut,
    Invalid,
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Refused
    }
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

fn transient(error: &Error) -> bool {
    matches!(error, Error::Down | Error::TimedOut)
}

/// A dependency that is down: every call fails after a real wait.
#[retry(max = 3, base = "10ms", on = transient)]
async fn profile(calls: &AtomicU32) -> Result<String, Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

/// A dependency that answers after a while.
#[retry(max = 3, base = "10ms", on = transient)]
async fn slow_ok(calls: &AtomicU32, millis: u64) -> Result<u32, Error> {
    sleep(Duration::from_millis(millis)).await;
    count(calls);
    Ok(7)
}

// ---------------------------------------------------------------------
// A retried handler calling two retried functions, one with a fallback.

#[retry(max = 3, base = "10ms", on = transient)]
async fn two_deps_or_else(a: &AtomicU32, b: &AtomicU32) -> Result<String, Error> {
    let first = profile(a)
        .await
        .or_else(|_| Ok::<_, Error>("cached".into()))?;
    let second = profile(b).await?;
    Ok(first + &second)
}

#[tokio::test(start_paused = true)]
async fn fallback_on_one_and_question_mark_on_the_other_is_not_retried() {
    let (a, b) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(two_deps_or_else(&a, &b).await, Err(Error::Down));
    // The second inner call gave up and that failed the attempt: one handler
    // attempt, three calls to each.
    assert_eq!((calls(&a), calls(&b)), (3, 3));
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn match_then_own_failure(a: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let first = match profile(a).await {
        Ok(name) => name,
        Err(Error::Down) => String::new(),
        Err(other) => return Err(other),
    };
    own_call::<Error>(own).await?;
    Ok(first)
}

#[tokio::test(start_paused = true)]
async fn a_give_up_handled_by_match_leaves_the_own_failure_retried() {
    let (a, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(match_then_own_failure(&a, &own).await, Err(Error::Down));
    assert_eq!((calls(&own), calls(&a)), (3, 9));
}

// ---------------------------------------------------------------------
// Fan-outs.

#[retry(max = 3, base = "10ms", on = transient)]
async fn fan_out_with_fallbacks(a: &AtomicU32, own: &AtomicU32) -> Result<usize, Error> {
    let results = join_all((0..3).map(|_| profile(a))).await;
    let ok = results.into_iter().map(Result::unwrap_or_default).count();
    own_call::<Error>(own).await?;
    Ok(ok)
}

#[tokio::test(start_paused = true)]
async fn a_fan_out_with_every_item_handled_leaves_the_own_failure_retried() {
    let (a, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(fan_out_with_fallbacks(&a, &own).await, Err(Error::Down));
    assert_eq!((calls(&own), calls(&a)), (3, 27));
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn try_fan_out_mixed(a: &AtomicU32, ok: &AtomicU32) -> Result<u32, Error> {
    let slow = async { slow_ok(ok, 100).await.map(|_| String::new()) };
    let items = try_join_all(vec![
        Box::pin(profile(a)) as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>,
        Box::pin(slow),
    ])
    .await?;
    Ok(items.len() as u32)
}

#[tokio::test(start_paused = true)]
async fn try_join_all_of_a_give_up_and_a_slow_success_is_not_resent() {
    let (a, ok) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(try_fan_out_mixed(&a, &ok).await, Err(Error::Down));
    // The slow item was dropped by try_join_all: never counted.
    assert_eq!((calls(&a), calls(&ok)), (3, 0));
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn unordered_first_ok(a: &AtomicU32, ok: &AtomicU32) -> Result<u32, Error> {
    let mut set = FuturesUnordered::new();
    set.push(Box::pin(async { profile(a).await.map(|_| 0u32) })
        as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>);
    set.push(Box::pin(slow_ok(ok, 100)));
    // Take the first success; failures are skipped.
    while let Some(result) = set.next().await {
        if let Ok(value) = result {
            return Ok(value);
        }
    }
    Err(Error::Invalid)
}

#[tokio::test(start_paused = true)]
async fn a_fan_out_that_skips_a_give_up_returns_the_success() {
    let (a, ok) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(unordered_first_ok(&a, &ok).await, Ok(7));
    assert_eq!((calls(&a), calls(&ok)), (3, 1));
}

// ---------------------------------------------------------------------
// Spawned inner calls and select!.

#[retry(max = 3, base = "10ms", on = transient)]
async fn spawns_inner(a: Arc<AtomicU32>) -> Result<String, Error> {
    let a = a.clone();
    tokio::spawn(async move { profile(&a).await })
        .await
        .expect("no panic")
}

#[tokio::test(start_paused = true)]
async fn a_spawned_inner_call_is_not_part_of_the_attempt() {
    let a = Arc::new(AtomicU32::new(0));
    assert_eq!(spawns_inner(a.clone()).await, Err(Error::Down));
    // Spawned work is not part of the attempt (DESIGN 4.11): the outer
    // retries it, 3 x 3.
    assert_eq!(calls(&a), 9);
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn select_inner_or_timer(a: &AtomicU32) -> Result<String, Error> {
    tokio::select! {
        result = slow_inner(a) => result.map(|n| n.to_string()),
        () = sleep(Duration::from_millis(5)) => Err(Error::TimedOut),
    }
}

#[tokio::test(start_paused = true)]
async fn an_inner_call_that_loses_a_select_does_not_stop_the_outer() {
    let a = AtomicU32::new(0);
    // The inner call is cut off in its first 50 ms wait each time: the
    // outer's own TimedOut is retried by the outer.
    let result = select_inner_or_timer(&a).await;
    assert_eq!(result, Err(Error::TimedOut));
    assert_eq!(calls(&a), 3);
    assert_eq!(current_attempt(), None);
}

// ---------------------------------------------------------------------
// `timeout` firing while an inner call waits.

#[retry(max = 3, base = "50ms", jitter = "none", on = transient)]
async fn slow_inner(a: &AtomicU32) -> Result<u32, Error> {
    count(a);
    Err(Error::Down)
}

#[retry(max = 2, base = "1ms", timeout = "20ms", on = transient)]
async fn outer_with_timeout(a: &AtomicU32) -> Result<u32, Error> {
    slow_inner(a).await
}

#[tokio::test(start_paused = true)]
async fn a_timeout_while_the_inner_call_waits_is_the_outers_failure() {
    let a = AtomicU32::new(0);
    assert_eq!(outer_with_timeout(&a).await, Err(Error::TimedOut));
    // Each outer attempt: one inner call, then cut off in its 50 ms wait.
    assert_eq!(calls(&a), 2);
    assert_eq!(current_attempt(), None);
}

// ---------------------------------------------------------------------
// Dropping a call mid-wait or mid-attempt.

#[retry(max = 3, base = "10ms", jitter = "none", on = transient)]
async fn reads_its_attempt(seen: &Cell<u32>) -> Result<u32, Error> {
    let attempt = current_attempt().unwrap().attempt();
    seen.set(attempt);
    sleep(Duration::from_millis(1)).await;
    if attempt < 3 {
        Err(Error::Down)
    } else {
        Ok(attempt)
    }
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn outer_of_dropped(a: &AtomicU32, seen: &Cell<u32>) -> Result<u32, Error> {
    let outer = current_attempt().unwrap().attempt();
    // Drop an inner call mid-wait.
    let _ = tokio::time::timeout(Duration::from_millis(2), reads_its_attempt(seen)).await;
    assert_eq!(current_attempt().unwrap().attempt(), outer);
    profile(a).await.unwrap_or_default();
    assert_eq!(current_attempt().unwrap().attempt(), outer);
    own_call::<Error>(a).await?;
    Ok(outer)
}

#[tokio::test(start_paused = true)]
async fn dropping_calls_mid_wait_leaves_the_thread_as_it_was() {
    let seen = Cell::new(0);
    // Mid-attempt.
    {
        let call = reads_its_attempt(&seen);
        assert!(tokio::time::timeout(Duration::from_micros(500), call)
            .await
            .is_err());
    }
    assert_eq!(current_attempt(), None);
    // Mid-wait.
    assert!(
        tokio::time::timeout(Duration::from_millis(3), reads_its_attempt(&seen))
            .await
            .is_err()
    );
    assert_eq!(current_attempt(), None);
    // A later call on the same thread behaves as it would alone.
    assert_eq!(reads_its_attempt(&seen).await, Ok(3));
    // An inner call dropped mid-wait inside an outer attempt stays counted
    // in flight (docs/nesting.md): the later handled give-up is not taken
    // for handled, and the outer does not retry its own failure.
    let a = AtomicU32::new(0);
    assert_eq!(outer_of_dropped(&a, &seen).await, Err(Error::Down));
    assert_eq!(current_attempt(), None);
}

// ---------------------------------------------------------------------
// A panic inside an inner body, caught by the outer.

/// Runs `call` with the panics it catches kept off the output. The hook is
/// the process's: the tests that swap it take turns, so that none puts
/// back another's silent hook for good.
async fn quietly<T>(call: impl std::future::Future<Output = T>) -> T {
    static HOOK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = HOOK.lock().await;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let output = call.await;
    std::panic::set_hook(hook);
    output
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn panics(a: &AtomicU32) -> Result<u32, Error> {
    count(a);
    sleep(Duration::from_millis(1)).await;
    panic!("inner body panics");
}

static PANIC_BREAKER: CircuitBreaker = CircuitBreaker::new().with_name("panic");

#[retry(max = 2, base = "10ms", on = transient, deadline = "10s", breaker = &PANIC_BREAKER)]
async fn catches_panic(a: &AtomicU32) -> Result<u32, Error> {
    use futures::FutureExt;
    let before = current_attempt().unwrap();
    let caught = std::panic::AssertUnwindSafe(panics(a)).catch_unwind().await;
    assert!(caught.is_err());
    let after = current_attempt().unwrap();
    assert_eq!(
        (
            before.attempt(),
            before.deadline(),
            before.idempotency_key()
        ),
        (after.attempt(), after.deadline(), after.idempotency_key())
    );
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn a_panic_caught_in_the_outer_restores_its_context() {
    let a = AtomicU32::new(0);
    let result = quietly(catches_panic(&a)).await;
    assert_eq!(result, Err(Error::Down));
    // The panic is not retried: one inner call per outer attempt, and the
    // outer's own failure is retried by the outer.
    assert_eq!(calls(&a), 2);
    assert_eq!(current_attempt(), None);
    assert_eq!(PANIC_BREAKER.state(), CircuitState::Closed);
}

// A panic in the first poll of an inner attempt that entered its context
// the usual way (no deadline, no key, nothing marked in the outer's poll).
// The inner call has another `max` and draws its own key before it panics,
// so an outer context left as the inner's would show (the outer's attempt
// number alone cannot: both are 1 in attempt 1, and from attempt 2 the
// outer is keyed, which sends the inner the slow way in).

#[retry(max = 3, base = "10ms", on = transient)]
async fn draws_its_key_then_panics(
    keys: &std::sync::Mutex<Vec<retry_runtime::idempotency::IdempotencyKey>>,
) -> Result<u32, Error> {
    let key = current_attempt().unwrap().idempotency_key();
    keys.lock().unwrap().push(key);
    panic!("inner body panics in its first poll");
}

#[retry(max = 2, base = "10ms", on = transient)]
async fn catches_a_keyed_panic(
    inner: &std::sync::Mutex<Vec<retry_runtime::idempotency::IdempotencyKey>>,
    seen: &std::sync::Mutex<Vec<retry_runtime::AttemptContext>>,
) -> Result<u32, Error> {
    use futures::FutureExt;
    let caught = std::panic::AssertUnwindSafe(draws_its_key_then_panics(inner))
        .catch_unwind()
        .await;
    assert!(caught.is_err());
    seen.lock().unwrap().push(current_attempt().unwrap());
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_an_inner_first_poll_leaves_nothing_of_the_inner() {
    let inner = std::sync::Mutex::new(Vec::new());
    let seen = std::sync::Mutex::new(Vec::new());
    let result = quietly(catches_a_keyed_panic(&inner, &seen)).await;
    assert_eq!(result, Err(Error::Down));
    let seen = seen.into_inner().unwrap();
    let inner = inner.into_inner().unwrap();
    let frames: Vec<_> = seen
        .iter()
        .map(|c| (c.attempt(), c.max_attempts()))
        .collect();
    assert_eq!(frames, [(1, 2), (2, 2)]);
    // One key for the outer call's attempts, none of the inner calls'.
    assert_eq!(seen[0].idempotency_key(), seen[1].idempotency_key());
    assert!(!inner.contains(&seen[0].idempotency_key()));
    assert_eq!(current_attempt(), None);
}

// ---------------------------------------------------------------------
// Hooks across layers.

static INNER_RETRIES: AtomicU32 = AtomicU32::new(0);
static INNER_GIVE_UPS: AtomicU32 = AtomicU32::new(0);
static OUTER_RETRIES: AtomicU32 = AtomicU32::new(0);
static OUTER_GIVE_UPS: AtomicU32 = AtomicU32::new(0);
static OUTER_REASON: std::sync::Mutex<Option<(Stop, u32)>> = std::sync::Mutex::new(None);

#[retry(
    max = 3,
    base = "10ms",
    on = transient,
    on_retry = |_: &Error, _, _| { INNER_RETRIES.fetch_add(1, Ordering::SeqCst); },
    on_give_up = |_: &Result<u32, Error>, _: &Stopped| { INNER_GIVE_UPS.fetch_add(1, Ordering::SeqCst); },
)]
async fn hooked_inner(a: &AtomicU32) -> Result<u32, Error> {
    tokio::task::yield_now().await;
    count(a);
    Err(Error::Down)
}

#[retry(
    max = 3,
    base = "10ms",
    on = transient,
    on_retry = |_: &Error, _, _| { OUTER_RETRIES.fetch_add(1, Ordering::SeqCst); },
    on_give_up = |_: &Result<u32, Error>, stopped: &Stopped| {
        OUTER_GIVE_UPS.fetch_add(1, Ordering::SeqCst);
        *OUTER_REASON.lock().unwrap() = Some((stopped.reason(), stopped.attempts()));
    },
)]
async fn hooked_outer(a: &AtomicU32, own: &AtomicU32, handle: bool) -> Result<u32, Error> {
    if handle {
        let _ = hooked_inner(a).await;
        own_call::<Error>(own).await?;
        Ok(1)
    } else {
        hooked_inner(a).await
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_fire_once_per_event_at_each_layer() {
    let (a, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(hooked_outer(&a, &own, false).await, Err(Error::Down));
    assert_eq!(
        (
            INNER_RETRIES.load(Ordering::SeqCst),
            INNER_GIVE_UPS.load(Ordering::SeqCst),
            OUTER_RETRIES.load(Ordering::SeqCst),
            OUTER_GIVE_UPS.load(Ordering::SeqCst),
        ),
        (2, 1, 0, 1)
    );
    assert_eq!(*OUTER_REASON.lock().unwrap(), Some((Stop::Nested, 1)));

    assert_eq!(hooked_outer(&a, &own, true).await, Err(Error::Down));
    assert_eq!(
        (
            INNER_RETRIES.load(Ordering::SeqCst),
            INNER_GIVE_UPS.load(Ordering::SeqCst),
            OUTER_RETRIES.load(Ordering::SeqCst),
            OUTER_GIVE_UPS.load(Ordering::SeqCst),
        ),
        (2 + 6, 1 + 3, 2, 2)
    );
    assert_eq!(*OUTER_REASON.lock().unwrap(), Some((Stop::Exhausted, 3)));
    assert_eq!(calls(&own), 3);
}

// ---------------------------------------------------------------------
// `nested = "retry"` and a plain fn inside an async one.

#[retry(max = 2, base = "10ms", on = transient, nested = "retry")]
async fn multiplies(a: &AtomicU32) -> Result<String, Error> {
    profile(a).await
}

#[retry(max = 3, base = "1ms", on = transient)]
fn plain_inner(a: &AtomicU32) -> Result<u32, Error> {
    count(a);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn async_calls_plain(a: &AtomicU32, own: &AtomicU32) -> Result<u32, Error> {
    let attempt = current_attempt().unwrap().attempt();
    let _ = plain_inner(a);
    assert_eq!(current_attempt().unwrap().attempt(), attempt);
    own_call::<Error>(own).await?;
    Ok(attempt)
}

#[tokio::test(start_paused = true)]
async fn nested_retry_multiplies_and_a_plain_inner_handled_give_up_is_retried() {
    let a = AtomicU32::new(0);
    assert_eq!(multiplies(&a).await, Err(Error::Down));
    assert_eq!(calls(&a), 6);

    let (a, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(async_calls_plain(&a, &own).await, Err(Error::Down));
    // The plain call's give-up is handled, then the attempt pends on its own
    // call: the own failure is the outer's to retry.
    assert_eq!((calls(&own), calls(&a)), (3, 9));
}

// ---------------------------------------------------------------------
// One breaker on two siblings, and on an outer layer and an inner one.

static SIBLINGS: CircuitBreaker = CircuitBreaker::new()
    .with_name("siblings")
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

#[retry(max = 2, base = "10ms", on = transient, breaker = &SIBLINGS)]
async fn sibling(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    count(calls);
    sleep(Duration::from_millis(5)).await;
    if up.get() {
        Ok(1)
    } else {
        Err(Error::Down)
    }
}

#[retry(max = 2, base = "10ms", on = transient)]
async fn two_siblings(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    let (a, b) = tokio::join!(sibling(up, calls), sibling(up, calls));
    Ok(a? + b?)
}

#[tokio::test(start_paused = true)]
async fn two_siblings_share_a_breaker_as_two_calls() {
    let (up, calls_made) = (Cell::new(false), AtomicU32::new(0));
    // Both fail; the first failure opens the breaker (one failure in a row),
    // so neither is retried; the outer does not retry the give-up.
    assert_eq!(two_siblings(&up, &calls_made).await, Err(Error::Down));
    assert_eq!(calls(&calls_made), 2);
    assert_eq!(SIBLINGS.state(), CircuitState::Open);
    up.set(true);
    advance(Duration::from_secs(1)).await;
    // Half-open with one probe: one sibling probes, the other is refused,
    // and the refusal gives up; the probe closes the circuit.
    assert_eq!(two_siblings(&up, &calls_made).await, Err(Error::Refused));
    assert_eq!(SIBLINGS.state(), CircuitState::Closed);
    assert_eq!(two_siblings(&up, &calls_made).await, Ok(2));
}

static HEDGED_LAYERS: CircuitBreaker = CircuitBreaker::new()
    .with_name("hedged-layers")
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1)
    .with_close_after(1);

#[retry(max = 3, base = "100ms", on = transient, breaker = &HEDGED_LAYERS)]
async fn hedged_layers_inner(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    count(calls);
    sleep(Duration::from_millis(10)).await;
    if up.get() {
        Ok(1)
    } else {
        Err(Error::Down)
    }
}

#[retry(max = 2, hedge = "1s", on = transient, breaker = &HEDGED_LAYERS)]
async fn hedged_layers_outer(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    hedged_layers_inner(up, calls).await
}

#[tokio::test(start_paused = true)]
async fn a_hedged_outer_and_its_inner_call_share_one_breaker_as_one_call() {
    let (up, calls_made) = (Cell::new(false), AtomicU32::new(0));
    assert_eq!(
        hedged_layers_outer(&up, &calls_made).await,
        Err(Error::Down)
    );
    assert_eq!(HEDGED_LAYERS.state(), CircuitState::Open);

    up.set(true);
    advance(Duration::from_secs(1)).await;
    let before = calls(&calls_made);
    // The one probe place goes to the hedged attempt; the inner call runs
    // under its permit, is not refused, and its success closes the circuit.
    assert_eq!(hedged_layers_outer(&up, &calls_made).await, Ok(1));
    assert_eq!(calls(&calls_made), before + 1);
    assert_eq!(HEDGED_LAYERS.state(), CircuitState::Closed);
}

// ---------------------------------------------------------------------
// A hedged outer and the nesting rule.

#[retry(max = 3, hedge = "1s", on = transient)]
async fn hedged_handler_join(
    a: &AtomicU32,
    ok: &AtomicU32,
    own: &AtomicU32,
) -> Result<String, Error> {
    let (profile, _) = tokio::join!(profile(a), slow_ok(ok, 100));
    let profile = profile.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn unhedged_handler_join(
    a: &AtomicU32,
    ok: &AtomicU32,
    own: &AtomicU32,
) -> Result<String, Error> {
    let (profile, _) = tokio::join!(profile(a), slow_ok(ok, 100));
    let profile = profile.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_handled_give_up_beside_a_slow_call_leaves_the_own_failure_retried() {
    let (a, ok, own) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(unhedged_handler_join(&a, &ok, &own).await, Err(Error::Down));
    assert_eq!((calls(&own), calls(&a), calls(&ok)), (3, 9, 3));

    let (a, ok, own) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(hedged_handler_join(&a, &ok, &own).await, Err(Error::Down));
    // Hedged the same way: each failure starts the next attempt at once.
    assert_eq!((calls(&own), calls(&a), calls(&ok)), (3, 9, 3));
}

#[retry(max = 3, base = "10ms", on = transient)]
async fn very_slow_ok(calls: &AtomicU32) -> Result<u32, Error> {
    sleep(Duration::from_secs(5)).await;
    count(calls);
    Ok(1)
}

/// Attempt 1 waits on a very slow retried call; the hedge (attempt 2, after
/// 100 ms) and the attempt after it handle a give-up and fail on their own
/// call.
#[retry(max = 3, hedge = "100ms", on = transient)]
async fn hedged_handler_two_attempts(
    a: &AtomicU32,
    slow: &AtomicU32,
    own: &AtomicU32,
) -> Result<u32, Error> {
    if current_attempt().unwrap().attempt() == 1 {
        return very_slow_ok(slow).await;
    }
    let _ = profile(a).await;
    own_call::<Error>(own).await?;
    Ok(2)
}

#[tokio::test(start_paused = true)]
async fn a_hedged_attempt_is_judged_by_its_own_inner_calls() {
    let (a, slow, own) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    // Attempt 2's own failure is not a give-up of a layer below (attempt
    // 1's slow call in flight is not attempt 2's): attempt 3 starts at once
    // and fails the same way; the call then waits for attempt 1.
    assert_eq!(hedged_handler_two_attempts(&a, &slow, &own).await, Ok(1));
    assert_eq!((calls(&slow), calls(&own), calls(&a)), (1, 2, 6));
}

// ---------------------------------------------------------------------
// A hedged outer whose attempt another breaker refuses inside.

static HEDGED_GATEWAY: CircuitBreaker = CircuitBreaker::new().with_name("hedged-gateway");
static HEDGED_LEDGER: CircuitBreaker = CircuitBreaker::new().with_name("hedged-ledger");

#[retry(max = 2, on = transient, breaker = &HEDGED_LEDGER)]
async fn ledger_entry(calls: &AtomicU32) -> Result<(), Error> {
    count(calls);
    Ok(())
}

/// Retries every error, hedged, under the gateway's breaker.
#[retry(max = 2, hedge = "1s", breaker = &HEDGED_GATEWAY)]
async fn hedged_settle(calls: &AtomicU32) -> Result<(), Error> {
    ledger_entry(calls).await
}

#[tokio::test(start_paused = true)]
async fn refusals_by_an_inner_breaker_are_not_failures_of_a_hedged_outer() {
    HEDGED_LEDGER.force_open();
    let calls_made = AtomicU32::new(0);
    for _ in 0..30 {
        assert_eq!(hedged_settle(&calls_made).await, Err(Error::Refused));
    }
    assert_eq!(calls(&calls_made), 0);
    assert_eq!(HEDGED_GATEWAY.state(), CircuitState::Closed);
    HEDGED_LEDGER.reset();
    assert_eq!(hedged_settle(&calls_made).await, Ok(()));
}

// ---------------------------------------------------------------------
// Losing hedged attempts dropped while they hold a probe's permit.

static PROBED: CircuitBreaker = CircuitBreaker::new()
    .with_name("probed")
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(2)
    .with_close_after(3);

#[retry(max = 2, hedge = "10ms", on = transient, breaker = &PROBED)]
async fn hedged_probe(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    let attempt = current_attempt().unwrap().attempt();
    count(calls);
    // The first attempt is slow: the hedge wins and the first is dropped.
    sleep(Duration::from_millis(if attempt == 1 { 1000 } else { 5 })).await;
    if up.get() {
        Ok(attempt)
    } else {
        Err(Error::Down)
    }
}

#[tokio::test(start_paused = true)]
async fn a_losing_hedge_dropped_with_a_probe_frees_its_place() {
    let (up, calls_made) = (Cell::new(false), AtomicU32::new(0));
    assert_eq!(hedged_probe(&up, &calls_made).await, Err(Error::Down));
    assert_eq!(PROBED.state(), CircuitState::Open);
    up.set(true);
    advance(Duration::from_secs(1)).await;
    // Each call: both attempts take a probe place, the hedge answers, the
    // first is dropped and frees its place. Three successes close it.
    for _ in 0..3 {
        assert_eq!(hedged_probe(&up, &calls_made).await, Ok(2));
    }
    assert_eq!(PROBED.state(), CircuitState::Closed);
}

// ---------------------------------------------------------------------
// A hedge the breaker refuses gives its budget token back.

static ONE_PROBE: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(1)
    .with_open_for(Duration::from_secs(1))
    .with_jitter(0.0)
    .with_probes(1);

static REFUND_BUDGET: retry_runtime::RetryBudget = retry_runtime::RetryBudget::new(10, 0.0);

#[retry(max = 2, hedge = "10ms", on = transient, breaker = &ONE_PROBE, budget = &REFUND_BUDGET)]
async fn hedged_under_one_probe(up: &Cell<bool>, calls: &AtomicU32) -> Result<u32, Error> {
    count(calls);
    // Slower than the hedge delay: a hedge is due while it runs.
    sleep(Duration::from_millis(50)).await;
    if up.get() {
        Ok(1)
    } else {
        Err(Error::Down)
    }
}

#[tokio::test(start_paused = true)]
async fn a_hedge_the_breaker_refuses_gives_its_budget_token_back() {
    let (up, calls_made) = (Cell::new(false), AtomicU32::new(0));
    // Open the circuit: the failure (and its retry's refusal) takes tokens.
    assert!(hedged_under_one_probe(&up, &calls_made).await.is_err());
    assert_eq!(ONE_PROBE.state(), CircuitState::Open);
    up.set(true);
    advance(Duration::from_secs(1)).await;
    let (before, made_before) = (REFUND_BUDGET.tokens(), calls(&calls_made));
    // Half-open with one probe place: attempt 1 probes; the hedge due at
    // 10 ms takes a token, is refused by the breaker, and gives it back.
    assert_eq!(hedged_under_one_probe(&up, &calls_made).await, Ok(1));
    assert_eq!(calls(&calls_made), made_before + 1, "only the probe ran");
    assert!(
        (REFUND_BUDGET.tokens() - before).abs() < 1e-9,
        "{} tokens before, {} after",
        before,
        REFUND_BUDGET.tokens()
    );
}

// ---------------------------------------------------------------------
// Three layers with a hedged middle: a give-up below passes through an
// error the middle does not retry.

fn only_down(error: &Error) -> bool {
    *error == Error::Down
}

#[retry(max = 3, base = "10ms")]
async fn bottom_invalid(calls: &AtomicU32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Invalid)
}

#[retry(max = 2, hedge = "1s", on = only_down)]
async fn hedged_middle(calls: &AtomicU32) -> Result<(), Error> {
    bottom_invalid(calls).await
}

#[retry(max = 2, base = "10ms", on = only_down)]
async fn unhedged_middle(calls: &AtomicU32) -> Result<(), Error> {
    bottom_invalid(calls).await
}

#[retry(max = 3, base = "10ms")]
async fn top_of_hedged(calls: &AtomicU32) -> Result<(), Error> {
    hedged_middle(calls).await
}

#[retry(max = 3, base = "10ms")]
async fn top_of_unhedged(calls: &AtomicU32) -> Result<(), Error> {
    unhedged_middle(calls).await
}

#[tokio::test(start_paused = true)]
async fn a_hedged_middle_layer_passes_on_a_give_up_below_as_an_unhedged_one_does() {
    let calls_made = AtomicU32::new(0);
    assert_eq!(top_of_unhedged(&calls_made).await, Err(Error::Invalid));
    assert_eq!(calls(&calls_made), 3);
    let calls_made = AtomicU32::new(0);
    assert_eq!(top_of_hedged(&calls_made).await, Err(Error::Invalid));
    assert_eq!(calls(&calls_made), 3);
}

#[retry(max = 1, hedge = "1s")]
async fn hedged_single_shot(calls: &AtomicU32) -> Result<(), Error> {
    tokio::task::yield_now().await;
    count(calls);
    Err(Error::Down)
}

#[retry(max = 3, base = "10ms")]
async fn calls_a_hedged_single_shot(calls: &AtomicU32) -> Result<(), Error> {
    hedged_single_shot(calls).await
}

#[tokio::test(start_paused = true)]
async fn a_hedged_function_with_max_1_is_no_retry_layer() {
    let calls_made = AtomicU32::new(0);
    assert_eq!(
        calls_a_hedged_single_shot(&calls_made).await,
        Err(Error::Down)
    );
    assert_eq!(calls(&calls_made), 3);
}

// ---------------------------------------------------------------------
// Hedging with a deadline and a budget together.

static HEDGE_BUDGET: retry_runtime::RetryBudget = retry_runtime::RetryBudget::new(4, 0.0);
static HEDGE_STARTS: std::sync::Mutex<Vec<(u32, u64)>> = std::sync::Mutex::new(Vec::new());

#[derive(Debug, Clone, PartialEq)]
struct Failed(u32);

#[retry(max = 5, hedge = "100ms", deadline = "250ms", budget = &HEDGE_BUDGET)]
async fn hedged_with_deadline_and_budget(origin: tokio::time::Instant) -> Result<(), Failed> {
    let attempt = current_attempt().unwrap().attempt();
    let at = u64::try_from(origin.elapsed().as_millis()).unwrap();
    HEDGE_STARTS.lock().unwrap().push((attempt, at));
    sleep(Duration::from_millis(150)).await;
    Err(Failed(attempt))
}

#[tokio::test(start_paused = true)]
async fn hedging_with_a_deadline_and_a_budget_returns_the_last_failure() {
    let origin = tokio::time::Instant::now();
    let result = hedged_with_deadline_and_budget(origin).await;
    let starts = HEDGE_STARTS.lock().unwrap().clone();
    // Attempt 1 at 0, the hedge at 100 (a token: 4 -> 3), attempt 1 fails at
    // 150 (3 -> 2: no retry above half of 4), so no more start; attempt 2
    // fails at 250 and is the last to arrive.
    assert_eq!(starts, vec![(1, 0), (2, 100)]);
    assert_eq!(result, Err(Failed(2)));
    assert!(starts.iter().all(|&(_, at)| at < 250));
}

// ---------------------------------------------------------------------
// `current_attempt()` inside the bodies of nested calls under a hedge.

#[retry(max = 2, base = "1ms", jitter = "none")]
async fn inner_sees(seen: &std::sync::Mutex<Vec<(u32, u32)>>) -> Result<u32, Failed> {
    let attempt = current_attempt().unwrap();
    sleep(Duration::from_millis(1)).await;
    seen.lock()
        .unwrap()
        .push((attempt.attempt(), attempt.max_attempts()));
    if attempt.attempt() == 1 {
        Err(Failed(1))
    } else {
        Ok(attempt.attempt())
    }
}

#[retry(max = 3, hedge = "1s")]
async fn hedged_outer_sees(seen: &std::sync::Mutex<Vec<(u32, u32)>>) -> Result<u32, Failed> {
    let outer = current_attempt().unwrap();
    let key = outer.idempotency_key();
    let inner = inner_sees(seen).await?;
    let after = current_attempt().unwrap();
    assert_eq!(
        (after.attempt(), after.idempotency_key()),
        (outer.attempt(), key)
    );
    seen.lock()
        .unwrap()
        .push((after.attempt(), after.max_attempts()));
    Ok(inner)
}

#[tokio::test(start_paused = true)]
async fn each_body_sees_its_own_attempt_under_a_hedge() {
    let seen = std::sync::Mutex::new(Vec::new());
    assert_eq!(hedged_outer_sees(&seen).await, Ok(2));
    assert_eq!(*seen.lock().unwrap(), vec![(1, 2), (2, 2), (1, 3)]);
    assert_eq!(current_attempt(), None);
}
