//! Features that meet: a tower client inside a retried attempt with a
//! handled give-up beside it; `hedge` with `timed_out` and `circuit_open`;
//! the closure API's `Policy::timed_out` with `hedge`, `breaker_with` and
//! `run_blocking`; hedged copies of a closure sharing the call's key; plain
//! functions' deadlines and keys, nested.

#[path = "support/counting.rs"]
mod counting;
use counting::{calls, count, own_call};

use std::sync::atomic::AtomicU32;
use std::time::Duration;

use retry_runtime::hedge::Hedge;
use retry_runtime::{current_attempt, retry, CircuitBreaker, Policy, TimedOut};

#[derive(Debug, Clone, PartialEq, Default)]
enum Error {
    #[default]
    Down,
}

// ---------------------------------------------------------------------------
// 1. A `tower::retry` client cloned inside a retried attempt (the usual
//    `client.clone().oneshot(req)`): tower clones the `RetryPolicy`, which
//    starts a call that may never be judged. It is not counted in flight,
//    so a give-up the body handles beside it still leaves the body's own
//    failure to be retried.
// ---------------------------------------------------------------------------

static TOWER_POLICY: Policy = Policy::new()
    .with_max_attempts(2)
    .with_base(Duration::from_millis(1));

type Client = tower::retry::Retry<
    retry_runtime::tower::RetryPolicy,
    tower::util::ServiceFn<
        fn(http::Request<()>) -> std::future::Ready<Result<http::Response<()>, std::io::Error>>,
    >,
>;

fn client() -> Client {
    fn ok(_: http::Request<()>) -> std::future::Ready<Result<http::Response<()>, std::io::Error>> {
        std::future::ready(Ok(http::Response::new(())))
    }
    tower::retry::Retry::new(
        retry_runtime::tower::RetryPolicy::new(&TOWER_POLICY),
        tower::service_fn(ok as fn(_) -> _),
    )
}

#[retry(max = 3, base = "1ms")]
async fn profile_down(calls: &AtomicU32) -> Result<String, Error> {
    count(calls);
    Err(Error::Down)
}

/// Baseline: a handled give-up, then the body's own failure: retried.
#[retry(max = 3, base = "10ms")]
async fn handler(inner: &AtomicU32, own: &AtomicU32) -> Result<String, Error> {
    let profile = profile_down(inner).await.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

/// The same handler, which also makes a (successful) request through a
/// tower client it shares, cloned for the request as tower users do.
#[retry(max = 3, base = "10ms")]
async fn handler_with_tower_client(
    client: &Client,
    inner: &AtomicU32,
    own: &AtomicU32,
) -> Result<String, Error> {
    use tower::ServiceExt;
    let response = client
        .clone()
        .oneshot(http::Request::new(()))
        .await
        .map_err(|_| Error::Down)?;
    assert_eq!(response.status(), 200);
    let profile = profile_down(inner).await.unwrap_or_default();
    own_call::<Error>(own).await?;
    Ok(profile)
}

#[tokio::test(start_paused = true)]
async fn a_handled_give_up_leaves_the_own_failure_retried() {
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(handler(&inner, &own).await, Err(Error::Down));
    assert_eq!((calls(&own), calls(&inner)), (3, 9));
}

#[tokio::test(start_paused = true)]
async fn a_cloned_tower_retry_client_is_not_counted_in_flight() {
    let client = client();
    let (inner, own) = (AtomicU32::new(0), AtomicU32::new(0));
    assert_eq!(
        handler_with_tower_client(&client, &inner, &own).await,
        Err(Error::Down)
    );
    // The tower request succeeded and returned before the give-up: the
    // handler's own failure should be retried as in the baseline.
    assert_eq!(
        (calls(&own), calls(&inner)),
        (3, 9),
        "own calls, inner calls: the outer stopped as if the give-up were propagated"
    );
}

// ---------------------------------------------------------------------------
// 2. `hedge = ...` with `timeout` and `timed_out`: a cut-off attempt fails
//    with what the key builds, as without `hedge`.
// ---------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum HedgeError {
    FromTimedOut,
    TimedOutKey,
}

impl From<TimedOut> for HedgeError {
    fn from(_: TimedOut) -> Self {
        HedgeError::FromTimedOut
    }
}

#[retry(max = 2, base = "1ms", timeout = "50ms", timed_out = |_| HedgeError::TimedOutKey)]
async fn unhedged_hangs() -> Result<(), HedgeError> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[retry(max = 2, hedge = "10ms", timeout = "50ms", timed_out = |_| HedgeError::TimedOutKey)]
async fn hedged_hangs() -> Result<(), HedgeError> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_timed_out_key_without_hedge() {
    assert_eq!(unhedged_hangs().await, Err(HedgeError::TimedOutKey));
}

#[tokio::test(start_paused = true)]
async fn hedge_honours_the_timed_out_key() {
    assert_eq!(hedged_hangs().await, Err(HedgeError::TimedOutKey));
}

// ---------------------------------------------------------------------------
// 3. The closure API's `Policy::timed_out` with hedge, breaker_with and
//    run_blocking.
// ---------------------------------------------------------------------------

#[derive(Debug, PartialEq, Clone)]
enum Foreign {
    Cut,
    Open,
    Body,
}

static CUT_POLICY: Policy<TimedOut> = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(1))
    .with_timeout(Duration::from_millis(50));

#[tokio::test(start_paused = true)]
async fn closure_timed_out_with_hedge() {
    let started = AtomicU32::new(0);
    let result: Result<(), Foreign> = CUT_POLICY
        .timed_out(|_| Foreign::Cut)
        .hedge(Hedge::after(Duration::from_millis(10)))
        .run(|| async {
            count(&started);
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .await;
    assert_eq!(result, Err(Foreign::Cut));
    assert_eq!(calls(&started), 3);
}

static CUT_BREAKER: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_name("features-cut");

#[tokio::test(start_paused = true)]
async fn closure_timed_out_with_breaker_with() {
    let started = AtomicU32::new(0);
    let run = || {
        CUT_POLICY
            .timed_out(|_| Foreign::Cut)
            .breaker_with(&CUT_BREAKER, |_| Foreign::Open)
            .run(|| async {
                count(&started);
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<(), Foreign>(())
            })
    };
    // Two cut-off attempts open the breaker: the caller gets its own last
    // error, not the refusal.
    assert_eq!(run().await, Err(Foreign::Cut));
    assert_eq!(calls(&started), 2);
    // The next call is refused.
    assert_eq!(run().await, Err(Foreign::Open));
    assert_eq!(calls(&started), 2);
}

#[test]
fn closure_timed_out_with_run_blocking() {
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(1))
        .with_timeout(Duration::from_millis(5));
    let mut tries = 0;
    let result: Result<u32, Foreign> = policy.timed_out(|_| Foreign::Cut).run_blocking(|| {
        tries += 1;
        std::thread::sleep(Duration::from_millis(20));
        if tries < 5 {
            Err(Foreign::Body)
        } else {
            Ok(tries)
        }
    });
    assert_eq!((result, tries), (Err(Foreign::Cut), 2));
}

// ---------------------------------------------------------------------------
// 4. The context's `blocking` (seen through `time_left`'s clock) and key,
//    nested. Under a paused tokio clock advanced an hour, a deadline read
//    on the wrong clock would be off by an hour.
// ---------------------------------------------------------------------------

fn near(left: Option<Duration>, expected: Duration) -> bool {
    left.is_some_and(|left| left <= expected && left + Duration::from_secs(2) > expected)
}

#[retry(max = 2, deadline = "10s")]
fn plain_with_deadline() -> Result<Option<Duration>, Error> {
    Ok(current_attempt().unwrap().time_left())
}

#[retry(max = 2)]
fn plain_inner_no_deadline() -> Result<Option<Duration>, Error> {
    // The nearest deadline is the async caller's, on tokio's clock: read on
    // the real one, it is an hour off under the advanced paused clock.
    Ok(current_attempt().unwrap().time_left())
}

#[retry(max = 2, deadline = "10s")]
fn plain_outer_calls_plain_inner() -> Result<(Option<Duration>, Option<Duration>), Error> {
    let inner = plain_inner_no_deadline()?;
    Ok((current_attempt().unwrap().time_left(), inner))
}

#[tokio::test(start_paused = true)]
async fn a_plain_fn_reads_its_deadline_on_the_real_clock() {
    tokio::time::advance(Duration::from_secs(3600)).await;
    let left = plain_with_deadline().unwrap();
    assert!(near(left, Duration::from_secs(10)), "{left:?}");
    let (outer, inner) = plain_outer_calls_plain_inner().unwrap();
    assert!(near(outer, Duration::from_secs(10)), "{outer:?}");
    assert!(near(inner, Duration::from_secs(10)), "{inner:?}");
}

#[retry(max = 3, base = "1ms")]
fn plain_keyed_outer(
    seen: &std::sync::Mutex<Vec<(retry_runtime::idempotency::IdempotencyKey, bool)>>,
) -> Result<(), Error> {
    let mine = current_attempt().unwrap().idempotency_key();
    let inner = plain_inner_key()?;
    let deadline_only = tokio_free_deadline_only_inner()?;
    let again = current_attempt().unwrap().idempotency_key();
    seen.lock().unwrap().push((
        mine,
        mine == again && inner != mine && deadline_only != mine,
    ));
    if current_attempt().unwrap().attempt() < 3 {
        return Err(Error::Down);
    }
    Ok(())
}

#[retry(max = 2, nested = "retry")]
fn plain_inner_key() -> Result<retry_runtime::idempotency::IdempotencyKey, Error> {
    Ok(current_attempt().unwrap().idempotency_key())
}

#[retry(max = 2, deadline = "5s", nested = "retry")]
fn tokio_free_deadline_only_inner() -> Result<retry_runtime::idempotency::IdempotencyKey, Error> {
    Ok(current_attempt().unwrap().idempotency_key())
}

#[test]
fn keys_of_nested_plain_calls() {
    let seen = std::sync::Mutex::new(Vec::new());
    plain_keyed_outer(&seen).unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|(key, ok)| *ok && *key == seen[0].0),
        "{seen:?}"
    );
    assert!(current_attempt().is_none());
}

// ---------------------------------------------------------------------------
// 5. `hedge = ...` with `breaker` and `circuit_open`: a refused call fails
//    with what the key builds, as without `hedge`.
// ---------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum OpenError {
    FromCircuitOpen,
    CircuitOpenKey,
}

impl From<retry_runtime::CircuitOpen> for OpenError {
    fn from(_: retry_runtime::CircuitOpen) -> Self {
        OpenError::FromCircuitOpen
    }
}

static FORCED_OPEN: CircuitBreaker = CircuitBreaker::new().with_name("features-forced");

#[retry(max = 2, hedge = "10ms", breaker = &FORCED_OPEN, circuit_open = |_| OpenError::CircuitOpenKey)]
async fn hedged_refused() -> Result<(), OpenError> {
    Ok(())
}

#[retry(max = 2, breaker = &FORCED_OPEN, circuit_open = |_| OpenError::CircuitOpenKey)]
async fn unhedged_refused() -> Result<(), OpenError> {
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn hedge_honours_the_circuit_open_key() {
    FORCED_OPEN.force_open();
    assert_eq!(unhedged_refused().await, Err(OpenError::CircuitOpenKey));
    assert_eq!(hedged_refused().await, Err(OpenError::CircuitOpenKey));
}

// ---------------------------------------------------------------------------
// 6. The closure API runs the closure (its synchronous part, where a
//    request is usually built) inside the attempt's context, hedged or
//    not: hedged copies share the call's idempotency key.
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn the_closure_api_builds_the_request_inside_the_attempt() {
    let policy = Policy::new().with_max_attempts(2);
    let mut seen = Vec::new();
    let _: std::io::Result<()> = policy
        .retrying()
        .run(|| {
            seen.push(current_attempt().map(|attempt| attempt.attempt()));
            async { Err(std::io::ErrorKind::Interrupted.into()) }
        })
        .await;
    assert_eq!(seen, [Some(1), Some(2)]);
}

#[tokio::test(start_paused = true)]
async fn hedged_copies_of_a_closure_share_the_calls_key() {
    let policy = Policy::new().with_max_attempts(2);
    let seen = std::sync::Mutex::new(Vec::new());
    let _: std::io::Result<()> = policy
        .retrying()
        .hedge(Hedge::after(Duration::from_millis(10)))
        .run(|| {
            // As `client.post(url).idempotency_key()` reads it.
            let key = retry_runtime::IdempotencyKey::for_this_call();
            let attempt = current_attempt().map(|attempt| attempt.attempt());
            seen.lock().unwrap().push((attempt, key));
            async { Err(std::io::ErrorKind::Interrupted.into()) }
        })
        .await;
    let seen = seen.into_inner().unwrap();
    // docs/hedging.md: "All attempts of one call share one idempotency key."
    assert_eq!(seen[0].1, seen[1].1, "two hedged copies, two keys");
    assert_eq!(
        seen.iter().map(|(attempt, _)| *attempt).collect::<Vec<_>>(),
        [Some(1), Some(2)]
    );
}

// 7. `hedge` with `policy = ...` and `timed_out`: the policy's timeout cuts
//    hedged attempts off with what the key builds.

#[retry(policy = &CUT_POLICY, hedge = "10ms", timed_out = |_| Foreign::Cut)]
async fn hedged_under_a_policy_hangs(started: &AtomicU32) -> Result<(), Foreign> {
    count(started);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn hedge_with_a_policy_honours_the_timed_out_key() {
    let started = AtomicU32::new(0);
    assert_eq!(
        hedged_under_a_policy_hangs(&started).await,
        Err(Foreign::Cut)
    );
    assert_eq!(calls(&started), 3);
}
