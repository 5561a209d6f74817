//! `CircuitBreaker` on a paused clock: the state machine step by step, the
//! limit on concurrent probes, recovery, the `breaker` key and the closure
//! API in the retry loop, and a real loopback server that goes down and
//! comes back.

#[path = "support/counts.rs"]
mod counts;

use std::cell::Cell;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Policy};
use tokio::time::advance;

/// Opens at half the calls failing over at least 4 (and not on a run of
/// failures alone), for exactly 1 s, then 2 s, capped at 3 s; one probe at a
/// time, two successes close it.
const fn strict() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_window(Duration::from_secs(10))
        .with_min_calls(4)
        .with_failure_ratio(0.5)
        .with_consecutive_failures(0)
        .with_open_for(Duration::from_secs(1))
        .with_max_open_for(Duration::from_secs(3))
        .with_probes(1)
        .with_close_after(2)
        .with_jitter(0.0)
}

fn record(breaker: &CircuitBreaker, success: bool) {
    breaker
        .acquire()
        .expect("the breaker lets the call through")
        .record(success);
}

/// Trips a `strict()` breaker: four failures.
fn trip(breaker: &CircuitBreaker) {
    for _ in 0..4 {
        record(breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn opens_once_the_failure_ratio_is_reached_over_the_minimum_calls() {
    let breaker = strict();
    // Three failures are below the minimum of four calls.
    for _ in 0..3 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    // The fourth call, a failure: 4 of 4 failed.
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(breaker.acquire().unwrap_err(), CircuitOpen);
}

#[tokio::test(start_paused = true)]
async fn stays_closed_while_failures_are_below_the_ratio() {
    let breaker = strict();
    for _ in 0..20 {
        record(&breaker, true);
        record(&breaker, true);
        record(&breaker, false);
    }
    // 40 successes and 20 failures: a third failed.
    assert_eq!(breaker.state(), CircuitState::Closed);
    // Twenty more failures make it half.
    for _ in 0..20 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_run_of_failures_opens_it_whatever_the_window_holds() {
    let breaker = strict().with_min_calls(1000).with_consecutive_failures(5);
    for _ in 0..100 {
        record(&breaker, true);
    }
    // Four failures, a success: the run starts again.
    for _ in 0..4 {
        record(&breaker, false);
    }
    record(&breaker, true);
    for _ in 0..4 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn the_defaults_open_on_ten_failures_in_a_row_or_half_of_twenty_calls() {
    let breaker = CircuitBreaker::new();
    for _ in 0..9 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);

    let breaker = CircuitBreaker::new();
    for _ in 0..9 {
        record(&breaker, true);
        record(&breaker, false);
    }
    record(&breaker, true);
    assert_eq!(breaker.state(), CircuitState::Closed, "19 calls");
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open, "10 of 20 failed");
    // Open for 2.5 s to 5 s (5 s, jittered by half).
    advance(Duration::from_millis(2499)).await;
    assert!(breaker.acquire().is_err());
    advance(Duration::from_millis(2501)).await;
    assert!(breaker.acquire().unwrap().is_probe());
}

#[tokio::test(start_paused = true)]
async fn failures_older_than_the_window_are_forgotten() {
    let breaker = strict();
    for _ in 0..3 {
        record(&breaker, false);
    }
    advance(Duration::from_secs(11)).await;
    // Three new failures: three calls in the window, below the minimum.
    for _ in 0..3 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn refuses_for_the_open_period_then_lets_a_probe_through() {
    let breaker = strict();
    trip(&breaker);
    advance(Duration::from_millis(999)).await;
    assert!(breaker.acquire().is_err());
    assert_eq!(breaker.state(), CircuitState::Open);
    advance(Duration::from_millis(1)).await;
    let probe = breaker.acquire().expect("the open period is over");
    assert!(probe.is_probe());
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    // One probe at a time: the next call is refused while it runs.
    assert!(breaker.acquire().is_err());
    probe.record(true);
    assert_eq!(
        breaker.state(),
        CircuitState::HalfOpen,
        "one of two successes"
    );
    record(&breaker, true);
    assert_eq!(breaker.state(), CircuitState::Closed);
    // Closed with an empty window: three failures do not reopen it.
    for _ in 0..3 {
        record(&breaker, false);
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_for_twice_as_long_up_to_the_cap() {
    let breaker = strict();
    trip(&breaker);
    // Open periods: 1 s, then 2 s, 3 s (capped, not 4 s), 3 s.
    for period in [1000, 2000, 3000, 3000] {
        assert!(breaker.acquire().is_err());
        advance(Duration::from_millis(period - 1)).await;
        assert!(breaker.acquire().is_err(), "open for {period} ms");
        advance(Duration::from_millis(1)).await;
        record(&breaker, false);
        assert_eq!(breaker.state(), CircuitState::Open);
    }
    // After recovery the periods start again at 1 s.
    advance(Duration::from_secs(3)).await;
    record(&breaker, true);
    record(&breaker, true);
    assert_eq!(breaker.state(), CircuitState::Closed);
    trip(&breaker);
    advance(Duration::from_secs(1)).await;
    assert!(breaker.acquire().is_ok());
}

#[tokio::test(start_paused = true)]
async fn open_periods_are_jittered_within_the_configured_share() {
    retry_runtime::seed_thread_rng(11);
    let mut periods = Vec::new();
    for _ in 0..50 {
        let breaker = strict().with_jitter(0.5);
        trip(&breaker);
        let mut waited = 0;
        while breaker.acquire().is_err() {
            advance(Duration::from_millis(10)).await;
            waited += 10;
        }
        periods.push(waited);
    }
    assert!(
        periods.iter().all(|p| (500..=1000).contains(p)),
        "{periods:?}"
    );
    let distinct = {
        let mut sorted = periods.clone();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.len()
    };
    assert!(distinct > 10, "the periods vary: {periods:?}");
}

#[tokio::test(start_paused = true)]
async fn at_most_the_configured_probes_run_at_once() {
    let breaker = strict().with_probes(3).with_close_after(5);
    trip(&breaker);
    advance(Duration::from_secs(1)).await;
    let probes: Vec<_> = (0..3).map(|_| breaker.acquire().unwrap()).collect();
    for _ in 0..10 {
        assert!(breaker.acquire().is_err(), "three probes already run");
    }
    // A probe that finishes frees its slot; so does one cancelled.
    let mut probes = probes.into_iter();
    probes.next().unwrap().record(true);
    let fourth = breaker.acquire().expect("a slot was freed");
    assert!(breaker.acquire().is_err());
    drop(probes.next());
    let fifth = breaker.acquire().expect("a cancelled probe frees its slot");
    assert!(breaker.acquire().is_err());
    // Any probe failing reopens the circuit; late outcomes of the others
    // change nothing.
    fourth.record(false);
    assert_eq!(breaker.state(), CircuitState::Open);
    fifth.record(true);
    probes.next().unwrap().record(true);
    assert_eq!(breaker.state(), CircuitState::Open);
    assert!(breaker.acquire().is_err());
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_send_at_most_the_probe_limit() {
    static BREAKER: CircuitBreaker = strict().with_probes(2).with_close_after(100);
    let calls = Cell::new(0u32);
    let in_flight = Cell::new(0u32);
    let most = Cell::new(0u32);

    #[retry(max = 1, breaker = &BREAKER)]
    async fn slow(
        calls: &Cell<u32>,
        in_flight: &Cell<u32>,
        most: &Cell<u32>,
    ) -> Result<(), Failure> {
        calls.set(calls.get() + 1);
        in_flight.set(in_flight.get() + 1);
        most.set(most.get().max(in_flight.get()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        in_flight.set(in_flight.get() - 1);
        Ok(())
    }

    trip(&BREAKER);
    advance(Duration::from_secs(1)).await;
    let calls_before = calls.get();
    let outcomes = futures_join(50, || slow(&calls, &in_flight, &most)).await;
    assert_eq!(calls.get() - calls_before, 2, "two probes");
    assert_eq!(most.get(), 2);
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 2);
    assert!(outcomes
        .iter()
        .filter_map(|o| o.as_ref().err())
        .all(|e| *e == Failure::Open));
}

/// Polls `n` futures made by `make` together on this task.
async fn futures_join<F: std::future::Future>(n: usize, make: impl Fn() -> F) -> Vec<F::Output> {
    let mut futures: Vec<_> = (0..n).map(|_| Box::pin(make())).collect();
    let mut outputs: Vec<Option<F::Output>> = (0..n).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[derive(Debug, PartialEq)]
enum Failure {
    Unavailable(u32),
    NotFound,
    Open,
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure::Open
    }
}

// The closure API cuts attempts off when the policy has a timeout.
impl From<retry_runtime::TimedOut> for Failure {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Failure::Unavailable(0)
    }
}

fn is_transient(failure: &Failure) -> bool {
    matches!(failure, Failure::Unavailable(_))
}

static LOOP_BREAKER: CircuitBreaker = strict();

/// Every call fails; counts the calls that ran.
#[retry(max = 3, base = "10ms", jitter = "none", on = is_transient, breaker = &LOOP_BREAKER)]
async fn always_down(calls: &Cell<u32>) -> Result<(), Failure> {
    calls.set(calls.get() + 1);
    Err(Failure::Unavailable(calls.get()))
}

#[tokio::test(start_paused = true)]
async fn the_loop_stops_retrying_when_the_circuit_opens_and_then_refuses_at_once() {
    let calls = Cell::new(0);
    let counting = counts::Counting::on_this_thread();
    let before = counting.now();
    // Three attempts, all failing: three calls in the window.
    assert_eq!(always_down(&calls).await, Err(Failure::Unavailable(3)));
    // The next call's first attempt is the fourth failure: the circuit
    // opens, and the caller gets that attempt's error without a retry.
    assert_eq!(always_down(&calls).await, Err(Failure::Unavailable(4)));
    assert_eq!(LOOP_BREAKER.state(), CircuitState::Open);
    // Refused at once, without running the body or waiting.
    let start = tokio::time::Instant::now();
    assert_eq!(always_down(&calls).await, Err(Failure::Open));
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(calls.get(), 4);
    let after = counting.now();
    assert!(
        after.open - before.open >= 2,
        "two calls stopped by the breaker"
    );
    assert!(after.circuit_opened > before.circuit_opened);
}

static PERMANENT_BREAKER: CircuitBreaker = strict();

#[retry(max = 3, on = is_transient, breaker = &PERMANENT_BREAKER)]
async fn not_found() -> Result<(), Failure> {
    Err(Failure::NotFound)
}

#[tokio::test(start_paused = true)]
async fn errors_on_rejects_count_as_the_dependency_answering() {
    for _ in 0..20 {
        assert_eq!(not_found().await, Err(Failure::NotFound));
    }
    assert_eq!(PERMANENT_BREAKER.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_asks_the_breaker_too() {
    let breaker = strict();
    let policy = Policy::new()
        .with_max_attempts(2)
        .with_base(Duration::from_millis(10));
    let calls = Cell::new(0);
    let run = || {
        policy.on(is_transient).breaker(&breaker).run(|| {
            calls.set(calls.get() + 1);
            let outcome: Result<(), Failure> = Err(Failure::Unavailable(calls.get()));
            async move { outcome }
        })
    };
    assert_eq!(run().await, Err(Failure::Unavailable(2)));
    assert_eq!(run().await, Err(Failure::Unavailable(4)));
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(run().await, Err(Failure::Open));
    assert_eq!(calls.get(), 4);

    advance(Duration::from_secs(1)).await;
    let recovered: Result<u32, Failure> = policy
        .on(is_transient)
        .breaker(&breaker)
        .run(|| async { Ok(7) })
        .await;
    assert_eq!(recovered, Ok(7));
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
}

static BLOCKING_BREAKER: CircuitBreaker = strict();

#[retry(max = 2, base = "1ms", on = is_transient, breaker = &BLOCKING_BREAKER)]
fn blocking_down(calls: &Cell<u32>) -> Result<(), Failure> {
    calls.set(calls.get() + 1);
    Err(Failure::Unavailable(calls.get()))
}

#[test]
fn plain_functions_use_the_breaker_on_the_real_clock() {
    let calls = Cell::new(0);
    assert_eq!(blocking_down(&calls), Err(Failure::Unavailable(2)));
    assert_eq!(blocking_down(&calls), Err(Failure::Unavailable(4)));
    assert_eq!(blocking_down(&calls), Err(Failure::Open));
    assert_eq!(calls.get(), 4);
}

mod loopback {
    //! A real HTTP server on 127.0.0.1 that goes down and comes back.

    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::get;
    use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState};
    use tokio::time::advance;

    #[derive(Default)]
    struct Health {
        up: AtomicBool,
        hits: AtomicU32,
    }

    async fn inventory(State(health): State<Arc<Health>>) -> StatusCode {
        health.hits.fetch_add(1, Ordering::SeqCst);
        if health.up.load(Ordering::SeqCst) {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        }
    }

    /// The server runs on its own thread and runtime, on the real clock, so
    /// the test's paused clock never advances while a request is in flight.
    fn serve(health: Arc<Health>) -> std::net::SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new()
                    .route("/", get(inventory))
                    .with_state(health);
                axum::serve(listener, app).await.unwrap();
            });
        });
        address
    }

    #[derive(Debug, PartialEq)]
    enum ApiError {
        Status(u16),
        Transport,
        Open,
    }

    impl From<CircuitOpen> for ApiError {
        fn from(_: CircuitOpen) -> Self {
            ApiError::Open
        }
    }

    fn is_transient(error: &ApiError) -> bool {
        matches!(error, ApiError::Status(503) | ApiError::Transport)
    }

    static INVENTORY: CircuitBreaker = super::strict();

    #[retry(max = 2, base = "50ms", on = is_transient, breaker = &INVENTORY)]
    async fn check(client: &reqwest::Client, url: &str) -> Result<(), ApiError> {
        let response = client
            .get(url)
            .send()
            .await
            .map_err(|_| ApiError::Transport)?;
        match response.status().as_u16() {
            200 => Ok(()),
            status => Err(ApiError::Status(status)),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_goes_down_is_left_alone_until_it_comes_back() {
        let health = Arc::new(Health::default());
        health.up.store(true, Ordering::SeqCst);
        let url = format!("http://{}/", serve(Arc::clone(&health)));
        // No idle connections, whose timers would let the paused clock jump.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let hits = || health.hits.load(Ordering::SeqCst);

        assert_eq!(check(&client, &url).await, Ok(()));
        health.up.store(false, Ordering::SeqCst);
        // Down: two failed attempts, then a third: 3 of 4 calls failed, and
        // the circuit opens; that call is not retried.
        assert_eq!(check(&client, &url).await, Err(ApiError::Status(503)));
        assert_eq!(check(&client, &url).await, Err(ApiError::Status(503)));
        assert_eq!(INVENTORY.state(), CircuitState::Open);
        let sent = hits();
        for _ in 0..100 {
            assert_eq!(check(&client, &url).await, Err(ApiError::Open));
        }
        assert_eq!(hits(), sent, "no request reaches the server while open");

        // After the open period, one probe; still down, so it reopens.
        advance(Duration::from_secs(1)).await;
        assert_eq!(check(&client, &url).await, Err(ApiError::Status(503)));
        assert_eq!(hits(), sent + 1, "one probe, not retried");
        assert_eq!(check(&client, &url).await, Err(ApiError::Open));

        // The server comes back; the breaker learns it at the next probe,
        // 2 s later, and closes after two successes.
        health.up.store(true, Ordering::SeqCst);
        advance(Duration::from_millis(1999)).await;
        assert_eq!(check(&client, &url).await, Err(ApiError::Open));
        advance(Duration::from_millis(1)).await;
        assert_eq!(check(&client, &url).await, Ok(()));
        assert_eq!(check(&client, &url).await, Ok(()));
        assert_eq!(INVENTORY.state(), CircuitState::Closed);
        for _ in 0..10 {
            assert_eq!(check(&client, &url).await, Ok(()));
        }
        assert_eq!(hits(), sent + 1 + 12);
    }
}

static HINTED_BREAKER: CircuitBreaker = strict();
static HINTED_BUDGET: retry_runtime::RetryBudget = retry_runtime::RetryBudget::new(100, 0.1);

/// Fails, asking for a 1 s wait.
#[retry(
    max = 3,
    deadline = "10s",
    on = is_transient,
    retry_after = |_| Some(Duration::from_secs(1)),
    budget = &HINTED_BUDGET,
    breaker = &HINTED_BREAKER,
)]
async fn hinted(calls: &Cell<u32>) -> Result<(), Failure> {
    calls.set(calls.get() + 1);
    Err(Failure::Unavailable(calls.get()))
}

/// A caller whose own attempt failed and whose retry is refused gets its own
/// error back, not `CircuitOpen` (docs/breaker.md): the library
/// returns the last real error.
#[tokio::test(start_paused = true)]
async fn a_retry_whose_circuit_opened_during_the_wait_is_refused_with_the_callers_own_error() {
    let calls = Cell::new(0);
    let (outcome, ()) = tokio::join!(hinted(&calls), async {
        // While the call waits out the server's hint, other calls fail.
        tokio::time::sleep(Duration::from_millis(100)).await;
        for _ in 0..3 {
            record(&HINTED_BREAKER, false);
        }
    });
    assert_eq!(HINTED_BREAKER.state(), CircuitState::Open);
    assert_eq!(outcome, Err(Failure::Unavailable(1)));
    assert_eq!(calls.get(), 1, "the retry was not sent");
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_returns_the_callers_own_error_when_its_retry_is_refused() {
    let breaker = strict();
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_secs(1))
        .with_jitter(retry_runtime::Jitter::None);
    let calls = Cell::new(0);
    let run = policy.on(is_transient).breaker(&breaker).run(|| {
        calls.set(calls.get() + 1);
        let outcome: Result<(), Failure> = Err(Failure::Unavailable(calls.get()));
        async move { outcome }
    });
    let (outcome, ()) = tokio::join!(run, async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for _ in 0..3 {
            record(&breaker, false);
        }
    });
    assert_eq!(outcome, Err(Failure::Unavailable(1)));
    assert_eq!(calls.get(), 1);
}

static INNER_BREAKER: CircuitBreaker = strict();

#[retry(max = 3, on = is_transient, breaker = &INNER_BREAKER)]
async fn inner(calls: &Cell<u32>) -> Result<(), Failure> {
    calls.set(calls.get() + 1);
    Ok(())
}

/// Would retry every error of its own body; a refusal by the inner call's
/// breaker is the inner layer giving up, so it is not retried here.
#[retry(max = 5, base = "10ms")]
async fn outer(calls: &Cell<u32>, outer_calls: &Cell<u32>) -> Result<(), Failure> {
    outer_calls.set(outer_calls.get() + 1);
    inner(calls).await
}

#[tokio::test(start_paused = true)]
async fn an_inner_refusal_is_not_retried_by_the_outer_layer() {
    trip(&INNER_BREAKER);
    let (calls, outer_calls) = (Cell::new(0), Cell::new(0));
    // Retry closest to the failure (DESIGN 4.11): the inner layer gave up
    // (its breaker is open), so the outer call returns at once instead of
    // waiting out four more refusals.
    assert_eq!(outer(&calls, &outer_calls).await, Err(Failure::Open));
    assert_eq!((calls.get(), outer_calls.get()), (0, 1));
}
