//! The `metastable` scenario: overload that outlives its trigger (Bronson et
//! al., HotOS 2021; Huang et al., OSDI 2022), driven by the library's real
//! code on a paused clock.
//!
//! - The server: 50 workers, each request taking an exponential time of
//!   mean 50 ms (capacity C = 1000 requests a second), one unbounded FIFO
//!   queue in front of them. It does the work of a request whose caller has
//!   left, unless the fleet runs `ServerLayer` on it: then a request whose
//!   deadline (the `x-envoy-expected-rq-timeout-ms` its attempt sent) has
//!   passed when a worker takes it is answered 504 at once.
//! - The clients: N processes sharing Poisson first attempts at `load` x C,
//!   each request sent by one process picked at random, through that
//!   process's own `RetryLayer` (its own budget, breaker or throttle) over
//!   tower's 1 s `TimeoutLayer`. A request whose attempt timed out and is
//!   not retried fails; timeouts are the only failure.
//! - The trigger: half the workers stop (each after the request it is
//!   serving) from 20 s for `trigger` seconds. The run lasts 150 s.
//!
//! Measured per second: first attempts, attempts sent, goodput (requests
//! answered with success while their caller waits), and the worker time
//! spent on requests whose caller had left.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use retry_runtime::tower::{BreakerError, HttpClassifier, RetryLayer, ServerBody, ServerLayer};
use retry_runtime::{CircuitBreaker, Jitter, Policy, RetryBudget};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep, sleep_until, Instant};
use tower::util::BoxCloneService;
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};

use crate::scenarios::Network;
use crate::simulation::simulate;

pub const WORKERS: usize = 50;
pub const MEAN_SERVICE: Duration = Duration::from_millis(50);
/// Requests a second the server completes with every worker busy.
pub const CAPACITY: f64 = 1000.0;
pub const TRIGGER_AT: u64 = 20;
pub const RUN_S: u64 = 150;
/// Each attempt is cut off after this long.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// Goodput has recovered when it is at least this share of the second's
/// first attempts for `STREAK` seconds in a row, within `WITHIN` seconds of
/// the trigger's end.
const RECOVERED: f64 = 0.95;
const STREAK: usize = 5;
const WITHIN: usize = 100;

/// What a fleet runs: its clients' policy, what each process guards its
/// calls with, and whether its servers drop requests whose caller has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fleet {
    /// One attempt; servers that do not drop.
    None,
    /// Three attempts, a fixed 100 ms apart.
    Naive,
    /// Three attempts, capped exponential backoff with full jitter (the
    /// attribute's defaults).
    Jitter,
    /// `Jitter` with gRPC's retry throttling, `RetryBudget::new(100, 0.1)`,
    /// in each process.
    Budget,
    /// `Jitter` with `CircuitBreaker::new()` in each process.
    Breaker,
    /// `Jitter` with `CircuitBreaker::adaptive()` in each process.
    Adaptive,
    /// What a fleet should run: see [`recommended`].
    Recommended,
    /// `recommended` without `ServerLayer` (only with `--policy`).
    Ratio,
    /// `none` with `ServerLayer` (only with `--policy`).
    ServerLayer,
    /// `recommended` with a 3 s deadline for its three attempts, each
    /// still cut off after 1 s (only with `--policy`).
    LongDeadline,
}

impl Fleet {
    pub const ALL: [Fleet; 7] = [
        Fleet::None,
        Fleet::Naive,
        Fleet::Jitter,
        Fleet::Budget,
        Fleet::Breaker,
        Fleet::Adaptive,
        Fleet::Recommended,
    ];

    /// The parts of `recommended` alone, for the docs: run only when named.
    const PARTS: [Fleet; 3] = [Fleet::Ratio, Fleet::ServerLayer, Fleet::LongDeadline];

    pub fn name(self) -> &'static str {
        match self {
            Fleet::Ratio => "ratio",
            Fleet::ServerLayer => "server_layer",
            Fleet::LongDeadline => "long_deadline",
            Fleet::None => "none",
            Fleet::Naive => "naive",
            Fleet::Jitter => "jitter",
            Fleet::Budget => "budget",
            Fleet::Breaker => "breaker",
            Fleet::Adaptive => "adaptive",
            Fleet::Recommended => "recommended",
        }
    }

    pub fn parse(name: &str) -> Option<Fleet> {
        Fleet::ALL
            .into_iter()
            .chain(Fleet::PARTS)
            .find(|fleet| fleet.name() == name)
    }

    /// The policy of each process's `RetryLayer`; tower's `TimeoutLayer`
    /// below it cuts each attempt off after [`TIMEOUT`].
    fn policy(self) -> Policy {
        let jitter = Policy::new();
        match self {
            Fleet::None => jitter.with_max_attempts(1),
            // The deadline its servers read (`x-envoy-expected-rq-timeout-ms`).
            Fleet::ServerLayer => jitter.with_max_attempts(1).with_deadline(TIMEOUT),
            Fleet::Naive => jitter
                .with_base(Duration::from_millis(100))
                .with_multiplier(1.0)
                .with_jitter(Jitter::None),
            Fleet::Recommended | Fleet::Ratio => recommended::POLICY,
            Fleet::LongDeadline => recommended::POLICY.with_deadline(TIMEOUT * 3),
            _ => jitter,
        }
    }

    fn budget(self) -> Option<RetryBudget> {
        match self {
            Fleet::Budget => Some(RetryBudget::new(100, 0.1)),
            Fleet::Recommended | Fleet::Ratio | Fleet::LongDeadline => Some(recommended::budget()),
            _ => None,
        }
    }

    fn breaker(self) -> Option<CircuitBreaker> {
        match self {
            Fleet::Breaker => Some(CircuitBreaker::new()),
            Fleet::Adaptive => Some(match ADAPTIVE.get() {
                Some(&(k, window)) => CircuitBreaker::adaptive()
                    .with_requests_per_accept(k)
                    .with_window(window),
                None => CircuitBreaker::adaptive(),
            }),
            _ => None,
        }
    }

    fn servers_drop(self) -> bool {
        matches!(
            self,
            Fleet::Recommended | Fleet::ServerLayer | Fleet::LongDeadline
        )
    }
}

/// The adaptive throttle's K and window, when `--adaptive K,SECONDS` sets
/// them (to measure others than the defaults).
pub static ADAPTIVE: std::sync::OnceLock<(f32, Duration)> = std::sync::OnceLock::new();

/// What a fleet should run (docs/overload.md): three attempts, each cut
/// off after 1 s, within a call deadline of 1 s that each attempt sends,
/// backoff with full jitter; in each process a budget of retries up to a
/// tenth of the first attempts of the last 10 s, with no floor; and
/// `ServerLayer` on every server.
pub mod recommended {
    use std::time::Duration;

    use retry_runtime::{Policy, RetryBudget};

    use super::TIMEOUT;

    /// Three attempts, each cut off after [`TIMEOUT`] (by tower's
    /// `TimeoutLayer` under the `RetryLayer`), within a call deadline of the
    /// same second, which every attempt sends to the server
    /// (`x-envoy-expected-rq-timeout-ms`): a retry only where a failure
    /// leaves time for one, never after a timeout.
    pub const POLICY: Policy = Policy::new().with_max_attempts(3).with_deadline(TIMEOUT);

    pub const fn budget() -> RetryBudget {
        RetryBudget::ratio(0.1, Duration::from_secs(10))
    }
}

/// One point of the grid.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub fleet: Fleet,
    pub clients: u32,
    /// First attempts as a share of the server's capacity.
    pub load: f64,
    pub trigger_s: u64,
}

/// What a run measured, per second.
#[derive(Debug, Default)]
pub struct Series {
    pub first: Vec<u64>,
    pub attempts: Vec<u64>,
    pub goodput: Vec<u64>,
    /// Worker time on requests whose caller had left, in microseconds.
    pub wasted_us: u64,
    /// Worker time on every request, in microseconds.
    pub worked_us: u64,
    /// When the first attempt timed out.
    pub first_timeout: Option<Duration>,
}

/// A run's figures.
#[derive(Debug)]
pub struct Run {
    pub point: Point,
    pub series: Series,
    /// Seconds from the trigger's end until goodput recovered, if it did
    /// within `WITHIN` seconds.
    pub recovery_s: Option<u64>,
    pub amplification_peak: f64,
    pub amplification_10s: f64,
    /// Worker time on requests whose caller had left, in seconds of the
    /// whole server (all its workers).
    pub wasted_s: f64,
    /// Mean goodput per second during the trigger.
    pub goodput_during: f64,
}

impl Run {
    pub fn json(&self) -> String {
        let Point {
            fleet,
            clients,
            load,
            trigger_s,
        } = self.point;
        let recovery = self
            .recovery_s
            .map_or_else(|| "null".to_owned(), |s| s.to_string());
        format!(
            r#"{{"scenario":"metastable","policy":"{}","clients":{clients},"load":{load},"trigger_s":{trigger_s},"recovery_s":{recovery},"amplification_peak":{:.2},"amplification_10s":{:.2},"wasted_s":{:.1},"goodput_during":{:.0}}}"#,
            fleet.name(),
            self.amplification_peak,
            self.amplification_10s,
            self.wasted_s,
            self.goodput_during
        )
    }

    /// The run's per-second counts, for a plot of your own (`--series`).
    pub fn series_json(&self) -> String {
        let list = |counts: &[u64]| {
            counts
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let Point {
            fleet,
            clients,
            load,
            trigger_s,
        } = self.point;
        let series = &self.series;
        #[allow(clippy::cast_precision_loss)]
        let worked_s = series.worked_us as f64 / 1e6 / WORKERS as f64;
        format!(
            r#"{{"scenario":"metastable_series","policy":"{}","clients":{clients},"load":{load},"trigger_s":{trigger_s},"worked_s":{worked_s:.1},"first":[{}],"attempts":[{}],"goodput":[{}]}}"#,
            fleet.name(),
            list(&series.first),
            list(&series.attempts),
            list(&series.goodput)
        )
    }

    pub fn text(&self) -> String {
        let Point {
            fleet,
            clients,
            load,
            trigger_s,
        } = self.point;
        let recovery = self
            .recovery_s
            .map_or_else(|| "never".to_owned(), |s| format!("{s} s"));
        format!(
            "metastable {:<12} N {clients:>4}, {load} C, trigger {trigger_s:>2} s: recovers {recovery:>6}, amplification peak {:.2}, 10 s {:.2}, wasted {:.1} s, goodput during {:.0}/s",
            fleet.name(),
            self.amplification_peak,
            self.amplification_10s,
            self.wasted_s,
            self.goodput_during
        )
    }
}

/// Per-second counters, shared by every task of a run.
struct Stats {
    start: Instant,
    first: Vec<AtomicU64>,
    attempts: Vec<AtomicU64>,
    goodput: Vec<AtomicU64>,
    wasted_us: AtomicU64,
    worked_us: AtomicU64,
    first_timeout_us: AtomicU64,
}

impl Stats {
    fn new(start: Instant) -> Stats {
        let seconds = || (0..RUN_S).map(|_| AtomicU64::new(0)).collect();
        Stats {
            start,
            first: seconds(),
            attempts: seconds(),
            goodput: seconds(),
            wasted_us: AtomicU64::new(0),
            worked_us: AtomicU64::new(0),
            first_timeout_us: AtomicU64::new(u64::MAX),
        }
    }

    fn count(&self, counts: &[AtomicU64]) {
        let second = usize::try_from(self.start.elapsed().as_secs()).unwrap_or(usize::MAX);
        if let Some(count) = counts.get(second) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn timed_out(&self) {
        let at = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.first_timeout_us.fetch_min(at, Ordering::Relaxed);
    }

    fn series(&self) -> Series {
        let load =
            |counts: &[AtomicU64]| counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let first_timeout = self.first_timeout_us.load(Ordering::Relaxed);
        Series {
            first: load(&self.first),
            attempts: load(&self.attempts),
            goodput: load(&self.goodput),
            wasted_us: self.wasted_us.load(Ordering::Relaxed),
            worked_us: self.worked_us.load(Ordering::Relaxed),
            first_timeout: (first_timeout != u64::MAX)
                .then(|| Duration::from_micros(first_timeout)),
        }
    }
}

/// The workers: a FIFO queue of requests waiting for one of them (tokio's
/// semaphore is fair), as a tower service whose readiness is a worker's
/// permit, so that a layer above it sees when a request leaves the queue.
struct Workers<S> {
    pool: Arc<Pool>,
    inner: S,
    waiting: Option<std::pin::Pin<Box<dyn Future<Output = OwnedSemaphorePermit> + Send>>>,
    permit: Option<OwnedSemaphorePermit>,
}

/// The workers' permits, and how many of them are stopped.
struct Pool {
    permits: Arc<Semaphore>,
    /// Workers to stop as soon as they finish the request they serve.
    owed: AtomicUsize,
    stopped: AtomicUsize,
}

impl Pool {
    /// `workers` stop: those idle at once, the others when they finish.
    fn stop(&self, workers: usize) {
        let idle = self.permits.forget_permits(workers);
        self.owed.store(workers - idle, Ordering::SeqCst);
        self.stopped.store(workers, Ordering::SeqCst);
    }

    /// The stopped workers start again.
    fn restart(&self) {
        let owed = self.owed.swap(0, Ordering::SeqCst);
        let stopped = self.stopped.swap(0, Ordering::SeqCst);
        self.permits.add_permits(stopped - owed);
    }

    /// A worker finished a request: it takes the next, or stops.
    fn release(&self, permit: OwnedSemaphorePermit) {
        let owed = self
            .owed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |owed| {
                owed.checked_sub(1)
            });
        if owed.is_ok() {
            permit.forget();
        }
    }
}

/// A permit taken and not used (the request was answered without its
/// handler) goes back as a finished request's does.
impl<S> Drop for Workers<S> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.pool.release(permit);
        }
    }
}

impl<S: Clone> Clone for Workers<S> {
    fn clone(&self) -> Self {
        Workers {
            pool: Arc::clone(&self.pool),
            inner: self.inner.clone(),
            waiting: None,
            permit: None,
        }
    }
}

impl<S, B> Service<Request<B>> for Workers<S>
where
    S: Service<Request<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        if self.permit.is_none() {
            let permits = Arc::clone(&self.pool.permits);
            let waiting = self.waiting.get_or_insert_with(|| {
                Box::pin(async move { permits.acquire_owned().await.expect("never closed") })
            });
            let permit = std::task::ready!(waiting.as_mut().poll(cx));
            self.waiting = None;
            self.permit = Some(permit);
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let permit = self.permit.take().expect("poll_ready first");
        let pool = Arc::clone(&self.pool);
        let served = self.inner.call(request);
        Box::pin(async move {
            let response = served.await;
            pool.release(permit);
            response
        })
    }
}

/// The worker time a response took, which the handler attaches.
#[derive(Clone, Copy)]
struct Served(Duration);

type Server = BoxCloneService<Request<()>, Response<()>, BoxError>;
type Client = BoxCloneService<Request<()>, Response<()>, BoxError>;

/// The server: `ServerLayer` (when the fleet runs it) over the workers
/// over the handler, which works for an exponential time.
fn server(pool: &Arc<Pool>, drops: bool, rng: &Arc<Mutex<Network>>) -> Server {
    let rng = Arc::clone(rng);
    let handler = tower::service_fn(move |_: Request<()>| {
        let work = exponential(&rng, MEAN_SERVICE);
        async move {
            sleep(work).await;
            let mut response = Response::new(());
            response.extensions_mut().insert(Served(work));
            Ok::<_, BoxError>(response)
        }
    });
    let workers = Workers {
        pool: Arc::clone(pool),
        inner: handler,
        waiting: None,
        permit: None,
    };
    if drops {
        BoxCloneService::new(
            ServiceBuilder::new()
                .map_response(|response: Response<ServerBody<()>>| response.map(|_| ()))
                .layer(ServerLayer::new())
                .service(workers),
        )
    } else {
        BoxCloneService::new(workers)
    }
}

/// A draw from the exponential distribution of mean `mean`.
fn exponential(rng: &Mutex<Network>, mean: Duration) -> Duration {
    let u = rng.lock().unwrap().unit();
    mean.mul_f64(-(1.0 - u).ln())
}

/// One client process: its retry layer (with its budget and breaker) over
/// a 1 s timeout over the connection to the server, which hands each
/// attempt to the server and waits for the answer; a caller that leaves
/// (its attempt timed out) leaves the request queued at the server.
fn client(fleet: Fleet, server: &Server, stats: &Arc<Stats>) -> Client {
    let (server, stats) = (server.clone(), Arc::clone(stats));
    let connection = tower::service_fn(move |request: Request<()>| {
        stats.count(&stats.attempts);
        let (answer, answered) = oneshot::channel::<Response<()>>();
        let (server, stats) = (server.clone(), Arc::clone(&stats));
        tokio::spawn(async move {
            let Ok(response) = server.oneshot(request).await else {
                return;
            };
            let work = response.extensions().get::<Served>().map(|served| served.0);
            let work = u64::try_from(work.unwrap_or_default().as_micros()).unwrap_or(0);
            stats.worked_us.fetch_add(work, Ordering::Relaxed);
            if answer.send(response).is_err() {
                stats.wasted_us.fetch_add(work, Ordering::Relaxed);
            }
        });
        async move { answered.await.map_err(BoxError::from) }
    });
    let policy = Arc::new(fleet.policy());
    let mut retry =
        RetryLayer::new(policy).with_classifier(HttpClassifier::default().boxed_errors());
    if let Some(budget) = fleet.budget() {
        retry = retry.with_budget(Arc::new(budget));
    }
    let timed = ServiceBuilder::new()
        .layer(tower::timeout::TimeoutLayer::new(TIMEOUT))
        .service(connection);
    match fleet.breaker() {
        Some(breaker) => BoxCloneService::new(
            ServiceBuilder::new()
                .map_err(|error| match error {
                    BreakerError::Service(error) => error,
                    other => BoxError::from(other.to_string()),
                })
                .layer(retry.with_breaker(Arc::new(breaker)))
                .service(timed),
        ),
        None => BoxCloneService::new(retry.layer(timed)),
    }
}

/// Runs one point of the grid.
pub fn run(point: Point, seed: u64) -> Run {
    let series = simulate(seed, async move {
        let start = Instant::now();
        let stats = Arc::new(Stats::new(start));
        let pool = Arc::new(Pool {
            permits: Arc::new(Semaphore::new(WORKERS)),
            owed: AtomicUsize::new(0),
            stopped: AtomicUsize::new(0),
        });
        let service_rng = Arc::new(Mutex::new(Network::seed(seed ^ 0x5eed)));
        let server = server(&pool, point.fleet.servers_drop(), &service_rng);
        let clients: Vec<Client> = (0..point.clients)
            .map(|_| client(point.fleet, &server, &stats))
            .collect();
        {
            let pool = Arc::clone(&pool);
            let trigger = Duration::from_secs(point.trigger_s);
            tokio::spawn(async move {
                sleep_until(start + Duration::from_secs(TRIGGER_AT)).await;
                pool.stop(WORKERS / 2);
                sleep(trigger).await;
                pool.restart();
            });
        }
        let mut arrivals = Network::seed(seed);
        let rate = point.load * CAPACITY;
        let end = start + Duration::from_secs(RUN_S);
        let mut at = start;
        loop {
            at += Duration::from_secs_f64(-(1.0 - arrivals.unit()).ln() / rate);
            if at >= end {
                break;
            }
            sleep_until(at).await;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let process = (arrivals.unit() * f64::from(point.clients)) as usize;
            let client = clients[process.min(clients.len() - 1)].clone();
            let stats = Arc::clone(&stats);
            tokio::spawn(async move {
                stats.count(&stats.first);
                let answer = client.oneshot(Request::new(())).await;
                match answer {
                    Ok(response) if response.status().is_success() => stats.count(&stats.goodput),
                    Ok(_) => {}
                    Err(_) => stats.timed_out(),
                }
            });
        }
        sleep_until(end).await;
        stats.series()
    });
    figures(point, series)
}

/// The figures of a run from its series.
fn figures(point: Point, series: Series) -> Run {
    let trigger_end = usize::try_from(TRIGGER_AT + point.trigger_s).unwrap_or(usize::MAX);
    let recovered = |second: usize| {
        #[allow(clippy::cast_precision_loss)]
        let ok = |s: usize| series.goodput[s] as f64 >= RECOVERED * series.first[s] as f64;
        (second..second + STREAK).all(|s| s < series.first.len() && ok(s))
    };
    let recovery_s = (trigger_end..=trigger_end + WITHIN)
        .find(|&second| recovered(second))
        .map(|second| (second - trigger_end) as u64);
    #[allow(clippy::cast_precision_loss)]
    let ratio = |attempts: u64, first: u64| attempts as f64 / first.max(1) as f64;
    let amplification_peak = series
        .attempts
        .iter()
        .zip(&series.first)
        .filter(|(_, &first)| first > 0)
        .map(|(&attempts, &first)| ratio(attempts, first))
        .fold(0.0, f64::max);
    let from = series
        .first_timeout
        .map_or(TRIGGER_AT, |at| at.as_secs())
        .saturating_add(5);
    let window = usize::try_from(from).unwrap_or(usize::MAX)
        ..usize::try_from(from + 10).unwrap_or(usize::MAX);
    let sum = |counts: &[u64]| {
        counts
            .get(window.clone())
            .unwrap_or(&[])
            .iter()
            .sum::<u64>()
    };
    let amplification_10s = ratio(sum(&series.attempts), sum(&series.first));
    #[allow(clippy::cast_precision_loss)]
    let wasted_s = series.wasted_us as f64 / 1e6 / WORKERS as f64;
    let during = usize::try_from(TRIGGER_AT).unwrap_or(0)..trigger_end;
    #[allow(clippy::cast_precision_loss)]
    let goodput_during =
        series.goodput[during.clone()].iter().sum::<u64>() as f64 / during.len().max(1) as f64;
    Run {
        point,
        series,
        recovery_s,
        amplification_peak,
        amplification_10s,
        wasted_s,
        goodput_during,
    }
}

/// The grid of points a run of the example covers, from its arguments, and
/// the runs, a few at a time.
pub mod grid {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::{run, Fleet, Point, Run};

    pub struct Grid {
        fleets: Vec<Fleet>,
        clients: Vec<u32>,
        loads: Vec<f64>,
        triggers: Vec<u64>,
        pub jobs: usize,
    }

    fn list<T: std::str::FromStr>(
        args: &[String],
        name: &str,
        all: Vec<T>,
    ) -> Result<Vec<T>, String> {
        let Some(value) = args
            .iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
        else {
            return Ok(all);
        };
        value
            .split(',')
            .map(|item| {
                item.parse()
                    .map_err(|_| format!("{name}: cannot read {item:?}"))
            })
            .collect()
    }

    pub fn from_args(args: &[String]) -> Result<Grid, String> {
        let fleets = list::<String>(args, "--policy", Vec::new())?;
        let fleets = if fleets.is_empty() {
            Fleet::ALL.to_vec()
        } else {
            fleets
                .iter()
                .map(|name| Fleet::parse(name).ok_or(format!("--policy: no policy {name:?}")))
                .collect::<Result<_, _>>()?
        };
        if let [k, window] = list::<f32>(args, "--adaptive", Vec::new())?[..] {
            let _ = super::ADAPTIVE.set((k, std::time::Duration::from_secs_f32(window)));
        }
        // A run that never recovers holds a few hundred thousand queued
        // requests: about half a gigabyte each at the peak.
        let cores = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(4);
        Ok(Grid {
            fleets,
            clients: list(args, "--clients", vec![10, 100, 1000])?,
            loads: list(args, "--load", vec![0.7, 0.8, 0.9])?,
            triggers: list(args, "--trigger", vec![5, 10, 20])?,
            jobs: list(args, "--jobs", vec![cores])?
                .first()
                .copied()
                .unwrap_or(1)
                .max(1),
        })
    }

    impl Grid {
        /// Every point, by load, trigger, clients, then policy.
        pub fn points(&self) -> Vec<Point> {
            let mut points = Vec::new();
            for &load in &self.loads {
                for &trigger_s in &self.triggers {
                    for &clients in &self.clients {
                        for &fleet in &self.fleets {
                            points.push(Point {
                                fleet,
                                clients,
                                load,
                                trigger_s,
                            });
                        }
                    }
                }
            }
            points
        }

        pub fn shows(&self, point: &Point) -> bool {
            self.points().iter().any(|p| same(p, point))
        }
    }

    pub fn same(a: &Point, b: &Point) -> bool {
        a.fleet == b.fleet
            && a.clients == b.clients
            && (a.load - b.load).abs() < 1e-9
            && a.trigger_s == b.trigger_s
    }

    /// The seed of a point: the same for every policy, so that they all
    /// see the same arrivals.
    fn seed(point: &Point) -> u64 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let load = (point.load * 100.0).round() as u64;
        u64::from(point.clients) << 32 | load << 16 | point.trigger_s
    }

    /// Runs every point, `jobs` at a time, each on a thread of its own;
    /// the runs in the order of `points`.
    pub fn run_all(points: Vec<Point>, jobs: usize) -> Vec<Run> {
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<Option<Run>>> = Mutex::new(points.iter().map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..jobs.min(points.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&point) = points.get(i) else {
                        break;
                    };
                    let finished = run(point, seed(&point));
                    done.lock().unwrap()[i] = Some(finished);
                });
            }
        });
        done.into_inner().unwrap().into_iter().flatten().collect()
    }
}
