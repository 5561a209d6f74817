//! `cargo run --release --example herd [-- --json] [--svg PATH]
//! [--outage-svg PATH] [--runs N] [--only SCENARIO]`
//!
//! Thousands of tokio tasks under a paused clock, calling `#[retry]`
//! functions against an in-process simulated service, so every figure comes
//! from the real attribute and runtime. Four scenarios under each of the
//! four jitters, and one of guards against an outage:
//!
//! - `burst`: 1000 clients fail at t = 0 and retry once with a 2 s ceiling;
//!   the busiest 100 ms window of retry arrivals.
//! - `waves`: 1000 clients fail at t = 0 and make 3 retries each (base
//!   100 ms, cap 2 s), every attempt failing; the busiest 10 ms window.
//! - `contention`: the optimistic-concurrency model of the AWS Architecture
//!   Blog post "Exponential Backoff And Jitter": N clients each write one row
//!   once, reading its version then writing conditionally, every message
//!   delayed by |Normal(10 ms, 2 ms)|; total writes and the time until the
//!   last client succeeds, averaged over `--runs` runs (100).
//! - `outage`: 1000 clients with `max = 4` against a service down for 20 s,
//!   with and without a shared `RetryBudget::new(100, 0.1)`, and with a
//!   shared `CircuitBreaker::new()`; calls and amplification (calls per
//!   request). JSON lines say which with `guard`: `none`, `budget`,
//!   `breaker`.
//! - `recovery`: the outage as a service sees it. Requests arrive steadily,
//!   50 a second for 60 s; the service is down from 10 s to 30 s, and a call
//!   to it then fails after 1 s (a timeout), while a healthy call takes
//!   20 ms. Clients make up to 4 attempts (base 100 ms, cap 2 s, full
//!   jitter) under each guard: none, the budget, the breaker with its
//!   defaults. Calls per request and the callers' mean wait during the
//!   outage, and the time from the service's recovery until every request
//!   succeeds again; `--outage-svg PATH` draws calls per second for the
//!   three guards. One run per guard (the runs are deterministic).
//!
//! `--only SCENARIO` runs one scenario (`burst`, `waves`, `contention`,
//! `outage`, `recovery`).

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use retry_runtime::{
    retry, seed_thread_rng, CircuitBreaker, CircuitOpen, Jitter, Policy, RetryBudget, TimedOut,
};
use tokio::time::{sleep, Instant};

const STRATEGIES: [Jitter; 4] = [
    Jitter::None,
    Jitter::Full,
    Jitter::Equal,
    Jitter::Decorrelated,
];

/// What the simulated service answers when it fails.
#[derive(Debug)]
struct Unavailable;

impl From<TimedOut> for Unavailable {
    fn from(_: TimedOut) -> Self {
        Unavailable
    }
}

/// A call the breaker refused fails as the service would have, at once.
impl From<CircuitOpen> for Unavailable {
    fn from(_: CircuitOpen) -> Self {
        Unavailable
    }
}

/// The service: records when each call arrives; fails every call before
/// `down_until`.
struct Service {
    start: Instant,
    down_until: Duration,
    arrivals: RefCell<Vec<Duration>>,
}

impl Service {
    fn new(down_until: Duration) -> Self {
        Service {
            start: Instant::now(),
            down_until,
            arrivals: RefCell::default(),
        }
    }

    fn call(&self) -> Result<(), Unavailable> {
        let now = self.start.elapsed();
        self.arrivals.borrow_mut().push(now);
        if now <= self.down_until {
            Err(Unavailable)
        } else {
            Ok(())
        }
    }

    /// Arrival times of retries: every call after t = 0.
    fn retries(&self) -> Vec<Duration> {
        self.arrivals
            .borrow()
            .iter()
            .copied()
            .filter(|t| !t.is_zero())
            .collect()
    }
}

/// A client of the service under a policy chosen at run time.
#[retry(policy = policy)]
async fn client(policy: &Policy, service: &Service) -> Result<(), Unavailable> {
    service.call()
}

/// The same client drawing retries from a shared budget.
#[retry(policy = policy, budget = budget)]
async fn budgeted_client(
    policy: &Policy,
    budget: &RetryBudget,
    service: &Service,
) -> Result<(), Unavailable> {
    service.call()
}

/// The same client behind a shared circuit breaker.
#[retry(policy = policy, breaker = breaker)]
async fn guarded_client(
    policy: &Policy,
    breaker: &CircuitBreaker,
    service: &Service,
) -> Result<(), Unavailable> {
    service.call()
}

/// What stands between the clients and a failing service.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Guard {
    None,
    Budget,
    Breaker,
}

impl Guard {
    const ALL: [Guard; 3] = [Guard::None, Guard::Budget, Guard::Breaker];

    fn name(self) -> &'static str {
        match self {
            Guard::None => "none",
            Guard::Budget => "budget",
            Guard::Breaker => "breaker",
        }
    }
}

/// Runs `scenario` on a fresh single-threaded runtime with a paused clock,
/// so thousands of tasks run in simulated time, deterministically.
fn simulate<F: Future>(seed: u64, scenario: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    seed_thread_rng(seed);
    runtime.block_on(scenario)
}

/// Polls every future from one task until all are done: thousands of
/// clients without spawning.
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
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

/// The most arrivals in any window of `window` (a sliding window).
fn busiest(mut arrivals: Vec<Duration>, window: Duration) -> usize {
    arrivals.sort();
    let mut best = 0;
    let mut start = 0;
    for end in 0..arrivals.len() {
        while arrivals[end] - arrivals[start] >= window {
            start += 1;
        }
        best = best.max(end - start + 1);
    }
    best
}

fn policy(jitter: Jitter, max: u32, base: Duration, cap: Duration) -> Policy {
    Policy::new()
        .with_max_attempts(max)
        .with_base(base)
        .with_cap(cap)
        .with_jitter(jitter)
}

/// 1000 clients fail at t = 0 and retry once with a 2 s ceiling.
///
/// For decorrelated jitter the first retry's ceiling is `3 * base`, so base
/// is a third of 2 s; for the others base is the ceiling itself.
fn burst(jitter: Jitter) -> Vec<Duration> {
    let base = match jitter {
        Jitter::Decorrelated => Duration::from_secs(2) / 3,
        _ => Duration::from_secs(2),
    };
    let policy = policy(jitter, 2, base, Duration::from_secs(2));
    simulate(1, async {
        let service = Service::new(Duration::ZERO);
        join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
        service.retries()
    })
}

/// 1000 clients fail at t = 0 and make 3 retries each, every attempt failing.
fn waves(jitter: Jitter) -> Vec<Duration> {
    let policy = policy(
        jitter,
        4,
        Duration::from_millis(100),
        Duration::from_secs(2),
    );
    simulate(2, async {
        let service = Service::new(Duration::from_secs(3600));
        join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
        service.retries()
    })
}

/// The row every contending client wants to write once.
struct Row {
    version: Cell<u64>,
    writes: Cell<u64>,
    network: RefCell<SmallRng>,
}

impl Row {
    /// One message's network delay: |Normal(10 ms, 2 ms)| (Box-Muller).
    async fn message(&self) {
        let (u, v): (f64, f64) = {
            let mut rng = self.network.borrow_mut();
            (rng.random::<f64>(), rng.random::<f64>())
        };
        let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        sleep(Duration::from_secs_f64(
            (10.0 + 2.0 * normal).abs() / 1000.0,
        ))
        .await;
    }
}

#[derive(Debug)]
struct Conflict;

impl From<TimedOut> for Conflict {
    fn from(_: TimedOut) -> Self {
        Conflict
    }
}

/// Reads the row's version, then writes it if nobody wrote in between.
#[retry(policy = policy)]
async fn write_once(policy: &Policy, row: &Row) -> Result<(), Conflict> {
    row.message().await; // read request
    let seen = row.version.get();
    row.message().await; // read response
    row.message().await; // conditional write request
    row.writes.set(row.writes.get() + 1);
    let written = row.version.get() == seen;
    if written {
        row.version.set(seen + 1);
    }
    row.message().await; // write response
    if written {
        Ok(())
    } else {
        Err(Conflict)
    }
}

/// Mean writes and mean time until the last client succeeds, over `runs`.
fn contention(jitter: Jitter, clients: u32, runs: u32) -> (f64, f64) {
    let policy = policy(
        jitter,
        u32::MAX,
        Duration::from_millis(10),
        Duration::from_secs(2),
    );
    let mut writes = 0.0;
    let mut time = 0.0;
    for run in 0..runs {
        let seed = u64::from(run) << 32 | u64::from(clients);
        let (run_writes, run_time) = simulate(seed, async {
            let start = Instant::now();
            let row = Row {
                version: Cell::new(0),
                writes: Cell::new(0),
                network: RefCell::new(SmallRng::seed_from_u64(seed)),
            };
            let results = join_all((0..clients).map(|_| write_once(&policy, &row)).collect()).await;
            assert!(
                results.iter().all(Result::is_ok),
                "every client writes eventually"
            );
            (row.writes.get(), start.elapsed())
        });
        #[allow(clippy::cast_precision_loss)]
        {
            writes += run_writes as f64;
        }
        time += run_time.as_secs_f64() * 1000.0;
    }
    (writes / f64::from(runs), time / f64::from(runs))
}

/// 1000 clients, `max = 4`, against a service down for 20 s: total calls.
fn outage(jitter: Jitter, guard: Guard) -> usize {
    let policy = policy(
        jitter,
        4,
        Duration::from_millis(100),
        Duration::from_secs(2),
    );
    simulate(3, async {
        let service = Service::new(Duration::from_secs(20));
        let budget = RetryBudget::new(100, 0.1);
        let breaker = CircuitBreaker::new();
        match guard {
            Guard::None => {
                join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
            }
            Guard::Budget => {
                join_all(
                    (0..1000)
                        .map(|_| budgeted_client(&policy, &budget, &service))
                        .collect(),
                )
                .await;
            }
            Guard::Breaker => {
                join_all(
                    (0..1000)
                        .map(|_| guarded_client(&policy, &breaker, &service))
                        .collect(),
                )
                .await;
            }
        }
        let calls = service.arrivals.borrow().len();
        calls
    })
}

/// The `recovery` scenario's service: down from `DOWN_FROM` to `DOWN_UNTIL`,
/// when a call fails after `SLOW_FAILURE`; a healthy call takes
/// `HEALTHY_CALL`.
const DOWN_FROM: Duration = Duration::from_secs(10);
const DOWN_UNTIL: Duration = Duration::from_secs(30);
const SLOW_FAILURE: Duration = Duration::from_secs(1);
const HEALTHY_CALL: Duration = Duration::from_millis(20);
const REQUESTS_PER_SECOND: u32 = 50;
const SECONDS: u32 = 60;

/// A service that is slow to fail: records when each call starts.
struct SlowService {
    start: Instant,
    calls: RefCell<Vec<Duration>>,
}

impl SlowService {
    async fn call(&self) -> Result<(), Unavailable> {
        let now = self.start.elapsed();
        self.calls.borrow_mut().push(now);
        if (DOWN_FROM..DOWN_UNTIL).contains(&now) {
            sleep(SLOW_FAILURE).await;
            Err(Unavailable)
        } else {
            sleep(HEALTHY_CALL).await;
            Ok(())
        }
    }
}

#[retry(policy = policy)]
async fn slow_client(policy: &Policy, service: &SlowService) -> Result<(), Unavailable> {
    service.call().await
}

#[retry(policy = policy, budget = budget)]
async fn slow_budgeted_client(
    policy: &Policy,
    budget: &RetryBudget,
    service: &SlowService,
) -> Result<(), Unavailable> {
    service.call().await
}

#[retry(policy = policy, breaker = breaker)]
async fn slow_guarded_client(
    policy: &Policy,
    breaker: &CircuitBreaker,
    service: &SlowService,
) -> Result<(), Unavailable> {
    service.call().await
}

/// One request: when it started, how long its caller waited, and whether it
/// succeeded.
struct Request {
    start: Duration,
    waited: Duration,
    ok: bool,
}

/// What the `recovery` scenario measures under one guard.
struct Recovery {
    /// Calls that reached the service during the outage, per request made
    /// during it.
    calls_per_request: f64,
    /// The mean wait of the callers of requests made during the outage.
    mean_wait: Duration,
    /// The share of those callers answered at once.
    at_once: f64,
    /// From the service's recovery until every later request succeeds.
    recovered_after: Duration,
    /// Calls reaching the service in each second.
    calls_per_second: Vec<u32>,
}

fn recovery(guard: Guard) -> Recovery {
    let policy = policy(
        Jitter::Full,
        4,
        Duration::from_millis(100),
        Duration::from_secs(2),
    );
    let (calls, requests) = simulate(4, async {
        let service = SlowService {
            start: Instant::now(),
            calls: RefCell::default(),
        };
        let budget = RetryBudget::new(100, 0.1);
        let breaker = CircuitBreaker::new();
        let (service, policy, budget, breaker) = (&service, &policy, &budget, &breaker);
        let requests = join_all(
            (0..REQUESTS_PER_SECOND * SECONDS)
                .map(|n| async move {
                    let start = Duration::from_secs(1) * n / REQUESTS_PER_SECOND;
                    sleep(start).await;
                    let outcome = match guard {
                        Guard::None => slow_client(policy, service).await,
                        Guard::Budget => slow_budgeted_client(policy, budget, service).await,
                        Guard::Breaker => slow_guarded_client(policy, breaker, service).await,
                    };
                    Request {
                        start,
                        waited: service.start.elapsed() - start,
                        ok: outcome.is_ok(),
                    }
                })
                .collect(),
        )
        .await;
        (service.calls.take(), requests)
    });
    let during = |t: &Duration| (DOWN_FROM..DOWN_UNTIL).contains(t);
    let outage_requests: Vec<&Request> = requests.iter().filter(|r| during(&r.start)).collect();
    let outage_calls = calls.iter().filter(|t| during(t)).count();
    #[allow(clippy::cast_precision_loss)]
    let calls_per_request = outage_calls as f64 / outage_requests.len().max(1) as f64;
    let waited: Duration = outage_requests.iter().map(|r| r.waited).sum();
    let mean_wait = waited / u32::try_from(outage_requests.len().max(1)).unwrap_or(u32::MAX);
    #[allow(clippy::cast_precision_loss)]
    let at_once = outage_requests
        .iter()
        .filter(|r| r.waited.is_zero())
        .count() as f64
        / outage_requests.len().max(1) as f64;
    let last_failure = requests
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.start)
        .max()
        .unwrap_or_default();
    let recovered_after = requests
        .iter()
        .map(|r| r.start)
        .find(|&start| start > last_failure)
        .unwrap_or_default()
        .saturating_sub(DOWN_UNTIL);
    let mut calls_per_second = vec![0u32; SECONDS as usize];
    for t in calls {
        if let Some(count) = usize::try_from(t.as_secs())
            .ok()
            .and_then(|second| calls_per_second.get_mut(second))
        {
            *count += 1;
        }
    }
    Recovery {
        calls_per_request,
        mean_wait,
        at_once,
        recovered_after,
        calls_per_second,
    }
}

/// Calls reaching the service per second through the outage and recovery,
/// one line per guard, as an SVG line chart.
fn draw_recovery(path: &str, runs: &[(Guard, Recovery)]) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let top = runs
        .iter()
        .flat_map(|(_, run)| run.calls_per_second.iter().copied())
        .max()
        .unwrap_or(1);
    let root = SVGBackend::new(path, (900, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "50 requests/s, service down from 10 s to 30 s: calls reaching it per second",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..SECONDS, 0u32..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("calls per second")
        .disable_x_mesh()
        .draw()?;
    let outage = u32::try_from(DOWN_FROM.as_secs()).unwrap_or(0)
        ..u32::try_from(DOWN_UNTIL.as_secs()).unwrap_or(0);
    chart.draw_series(std::iter::once(Rectangle::new(
        [(outage.start, 0), (outage.end, top + top / 10)],
        RGBColor(230, 230, 230).filled(),
    )))?;
    for (guard, run) in runs {
        let (color, label) = match guard {
            Guard::None => (
                RED,
                format!(
                    "no guard: {:.2} calls per request in the outage",
                    run.calls_per_request
                ),
            ),
            Guard::Budget => (
                BLUE,
                format!("RetryBudget::new(100, 0.1): {:.2}", run.calls_per_request),
            ),
            Guard::Breaker => (
                RGBColor(0, 140, 0),
                format!(
                    "CircuitBreaker::new(): {:.3}, back {:.1} s after recovery",
                    run.calls_per_request,
                    run.recovered_after.as_secs_f64()
                ),
            ),
        };
        let points: Vec<(u32, u32)> = (0u32..).zip(run.calls_per_second.iter().copied()).collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Retry arrivals per 10 ms over the first second, no jitter against full
/// jitter, as an SVG line chart.
fn draw(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let bins = 100;
    let histogram = |arrivals: Vec<Duration>| {
        let mut counts = vec![0u32; bins];
        for t in arrivals {
            if let Some(count) = usize::try_from(t.as_millis() / 10)
                .ok()
                .and_then(|bin| counts.get_mut(bin))
            {
                *count += 1;
            }
        }
        counts
    };
    let none = histogram(waves(Jitter::None));
    let full = histogram(waves(Jitter::Full));
    let top = none.iter().chain(&full).copied().max().unwrap_or(1);

    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "1000 clients fail at t = 0: retry arrivals per 10 ms (3 retries, base 100 ms)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..1000u32, 0u32..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("time since the failure (ms)")
        .y_desc("retries arriving per 10 ms")
        .disable_x_mesh()
        .draw()?;
    let series = |counts: &[u32]| {
        counts
            .iter()
            .enumerate()
            .map(|(bin, count)| (u32::try_from(bin).unwrap_or(0) * 10, *count))
            .collect::<Vec<_>>()
    };
    chart
        .draw_series(LineSeries::new(series(&none), RED.stroke_width(2)))?
        .label("no jitter: three spikes of 1000")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(series(&full), BLUE.stroke_width(2)))?
        .label("full jitter: the same retries, spread out")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let svg = args
        .iter()
        .position(|a| a == "--svg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runs_scenario = |name: &str| only.as_deref().is_none_or(|only| only == name);
    let outage_svg = args
        .iter()
        .position(|a| a == "--outage-svg")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<u32>())
        .transpose()?
        .unwrap_or(100)
        .max(1);

    let mut table = String::new();
    let mut line = |json_line: String, text: String| {
        if json {
            println!("{json_line}");
        } else {
            table.push_str(&text);
            table.push('\n');
        }
    };

    for (scenario, window) in [
        ("burst", Duration::from_millis(100)),
        ("waves", Duration::from_millis(10)),
    ] {
        if !runs_scenario(scenario) {
            continue;
        }
        for jitter in STRATEGIES {
            let arrivals = if scenario == "burst" {
                burst(jitter)
            } else {
                waves(jitter)
            };
            let retries = arrivals.len();
            let peak = busiest(arrivals, window);
            let window_ms = window.as_millis();
            line(
                format!(r#"{{"scenario":"{scenario}","strategy":"{jitter}","clients":1000,"busiest":{peak},"window_ms":{window_ms}}}"#),
                format!("{scenario:<10} {jitter:<13} {retries:>5} retries, busiest {window_ms:>3} ms window: {peak:>4}"),
            );
        }
    }
    for jitter in STRATEGIES {
        if !runs_scenario("contention") {
            break;
        }
        for clients in (10..=190).step_by(10) {
            let (calls, time_ms) = contention(jitter, clients, runs);
            line(
                format!(r#"{{"scenario":"contention","strategy":"{jitter}","clients":{clients},"calls":{calls:.1},"time_ms":{time_ms:.1}}}"#),
                format!("contention {jitter:<13} {clients:>4} clients: {calls:>8.1} writes, last success at {time_ms:>8.1} ms"),
            );
        }
    }
    for jitter in STRATEGIES {
        if !runs_scenario("outage") {
            break;
        }
        for guard in Guard::ALL {
            let calls = outage(jitter, guard);
            #[allow(clippy::cast_precision_loss)]
            let amplification = calls as f64 / 1000.0;
            let with_budget = guard == Guard::Budget;
            let name = guard.name();
            line(
                format!(r#"{{"scenario":"outage","strategy":"{jitter}","clients":1000,"guard":"{name}","budget":{with_budget},"calls":{calls},"amplification":{amplification:.3}}}"#),
                format!("outage     {jitter:<13} guard {name:<8} {calls:>5} calls, amplification {amplification:.3}"),
            );
        }
    }
    let mut recoveries = Vec::new();
    if runs_scenario("recovery") {
        for guard in Guard::ALL {
            let run = recovery(guard);
            let name = guard.name();
            let per_request = run.calls_per_request;
            let wait_ms = run.mean_wait.as_secs_f64() * 1000.0;
            let at_once = run.at_once * 100.0;
            let recovered_ms = run.recovered_after.as_secs_f64() * 1000.0;
            line(
                format!(r#"{{"scenario":"recovery","strategy":"full","requests_per_second":{REQUESTS_PER_SECOND},"guard":"{name}","calls_per_request":{per_request:.3},"mean_wait_ms":{wait_ms:.1},"answered_at_once_percent":{at_once:.1},"recovered_after_ms":{recovered_ms:.0}}}"#),
                format!("recovery   full          guard {name:<8} {per_request:>6.3} calls per request in the outage, callers wait {wait_ms:>5.0} ms ({at_once:>4.1}% at once), all requests succeed {recovered_ms:>6.0} ms after recovery"),
            );
            recoveries.push((guard, run));
        }
    }
    if !json {
        let mut header = String::new();
        writeln!(
            header,
            "herd: 1000 simulated clients per scenario, paused clock, real #[retry] functions"
        )?;
        writeln!(header, "(contention: mean of {runs} runs per row)\n")?;
        print!("{header}{table}");
    }
    if let Some(path) = outage_svg {
        draw_recovery(&path, &recoveries)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    if let Some(path) = svg {
        draw(&path)?;
        if !json {
            println!("\nwrote {path}");
        }
    }
    Ok(())
}
