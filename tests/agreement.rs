//! One table of scenarios, run through every entry point (issue 30, point
//! 6): the attribute on an `async fn` and on a plain `fn`, the closure API
//! (async and blocking), the tower `RetryLayer` over a `service_fn`, the
//! reqwest middleware against an axum server on 127.0.0.1, and hedged calls
//! (the attribute's `hedge` key, the closure API's `.hedge(..)` and the
//! tower `HedgeLayer`) with a delay long enough that attempts never overlap.
//!
//! Each row is data: a policy shape, what the dependency answers on each
//! attempt, the budget (gRPC's rule or a ratio) and breaker (or adaptive
//! throttle) the call names, and what the sequential
//! decision (the attribute on an `async fn`, the reference) shows. Every
//! entry point must show the same [`Seen`]: result, calls reaching the
//! dependency, stop reason (`last_call()`), budget tokens, breaker record
//! and attempt start times on tokio's paused clock; except that a hedged
//! call starts its next attempt at once after a retryable failure (DESIGN
//! §4.15), so its starts (and, where the deadline then admits more
//! attempts, the rest) are the row's `hedged` expectation.
//!
//! Where an entry point cannot run a row, the row leaves its group out, and
//! the reason is written beside it:
//! - blocking: a plain function waits on the real clock, which never lands
//!   exactly on a deadline; its starts are compared with a slack;
//! - layers: the reqwest middleware's inner call runs in the server, and a
//!   give-up crosses services only as the server's mark (`retry-exhausted`,
//!   which `tower::ServerLayer` writes; the row `marked_mid_call` runs it
//!   through every entry point); rows whose attempt calls an inner retried
//!   function run through the tower `RetryLayer` alone (`tower_layer`),
//!   whose attempts run in the loop's attempt context as the attribute's do;
//! - hedge_layer: the `HedgeLayer` names no breaker and applies no
//!   per-attempt timeout (its docs say so).
//!
//! Hedged calls decide through the loop's own decision (issue 30): every
//! row runs through them, and their comments say what each showed before.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::any;
use axum::Router;
use http::{Request, Response, StatusCode};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{
    last_call, retry, seed_thread_rng, CircuitBreaker, CircuitOpen, CircuitState, Classification,
    Jitter, Policy, RetryBudget, Stop, TimedOut,
};
use tokio::time::Instant;
use tower::{Service, ServiceExt};

#[path = "support/servers.rs"]
mod servers;

// ---------------------------------------------------------------------------
// The dependency: what it answers on each attempt, and what a call shows.
// ---------------------------------------------------------------------------

/// What one attempt of the outer call does.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A success.
    Fine,
    /// An `Ok` that `on_ok` retries (over HTTP, a 503 response).
    Busy,
    /// An error `on` retries.
    Fail,
    /// An error `on` rejects.
    Reject,
    /// An error `on` retries, with the server's hint in seconds.
    Hint(u64),
    /// The attempt calls an inner retried function (2 attempts, 10 ms
    /// apart) whose calls all fail: it gives up, and its error fails the
    /// attempt.
    Inner,
    /// A failure the server below already retried and gave up on, marked
    /// so (`retry-exhausted`, as a `ServerLayer` answers; DESIGN §4.17),
    /// and judged by a ready-made classifier.
    Marked,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Fine(u32),
    Busy(u32),
}

/// Each error carries the number of the call to the dependency it came
/// from, so that the caller is seen to get the last one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum E {
    Transient(u32),
    Permanent(u32),
    Hinted(u32, Duration),
    Marked(u32),
    TimedOut,
    Open,
}

impl From<TimedOut> for E {
    fn from(_: TimedOut) -> Self {
        E::TimedOut
    }
}

impl From<CircuitOpen> for E {
    fn from(_: CircuitOpen) -> Self {
        E::Open
    }
}

type Answer = Result<Value, E>;

impl Step {
    fn answer(self, call: u32) -> Answer {
        match self {
            Step::Fine => Ok(Value::Fine(call)),
            Step::Busy => Ok(Value::Busy(call)),
            Step::Fail | Step::Inner => Err(E::Transient(call)),
            Step::Reject => Err(E::Permanent(call)),
            Step::Hint(secs) => Err(E::Hinted(call, Duration::from_secs(secs))),
            Step::Marked => Err(E::Marked(call)),
        }
    }
}

// The rules every entry point is given: `on`, `on_ok`, `retry_after`, and
// the same three as one classification for the HTTP entry points.

fn transient(e: &E) -> bool {
    match e {
        // The answer as the server sent it, judged by the ready-made
        // classifier: a 503 (transient) that the server marked.
        E::Marked(_) => retry_runtime::classify::http::is_transient_response(
            &Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header("retry-exhausted", "exhausted")
                .body(())
                .unwrap(),
        ),
        _ => !matches!(e, E::Permanent(_) | E::Open),
    }
}

fn busy(value: &Value) -> bool {
    matches!(value, Value::Busy(_))
}

fn hint(e: &E) -> Option<Duration> {
    match e {
        E::Hinted(_, hint) => Some(*hint),
        _ => None,
    }
}

fn classify(answer: &Answer) -> Classification {
    match answer {
        Ok(value) if busy(value) => Classification::Transient(None),
        Ok(_) => Classification::Done,
        Err(e) if transient(e) => Classification::Transient(hint(e)),
        Err(_) => Classification::Permanent,
    }
}

/// Counts the calls that reach it and when each started, on tokio's clock
/// (the real one outside a runtime), from its creation.
struct Dep {
    origin: Instant,
    latency: Duration,
    steps: &'static [Step],
    attempts: AtomicU32,
    starts: Mutex<Vec<Duration>>,
}

impl Dep {
    /// The step of the next outer attempt; past the row's list, `Fail`.
    fn next_step(&self) -> Step {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst);
        let index = usize::try_from(attempt).unwrap();
        self.steps.get(index).copied().unwrap_or(Step::Fail)
    }

    fn start(&self) -> u32 {
        let mut starts = self.starts.lock().unwrap();
        starts.push(self.origin.elapsed());
        u32::try_from(starts.len()).unwrap()
    }

    async fn call(&self, step: Step) -> Answer {
        let call = self.start();
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        step.answer(call)
    }

    fn call_now(&self, step: Step) -> Answer {
        step.answer(self.start())
    }
}

#[retry(max = 2, base = "10ms", jitter = "none")]
async fn inner(dep: &Dep) -> Answer {
    dep.call(Step::Fail).await
}

#[retry(max = 2, base = "10ms", jitter = "none")]
fn inner_blocking(dep: &Dep) -> Answer {
    dep.call_now(Step::Fail)
}

/// One run's dependency, budget and breaker, fresh for each entry point.
#[derive(Clone)]
struct Env {
    dep: Arc<Dep>,
    budget: Arc<RetryBudget>,
    breaker: Arc<CircuitBreaker>,
    opens_after: u32,
    adaptive: bool,
}

impl Env {
    fn new(row: &Row) -> Env {
        // The adaptive throttle's draws: the same for every entry point.
        seed_thread_rng(SEED);
        let budget = match row.budget {
            Budget::Tokens(max_tokens, ratio) => RetryBudget::new(max_tokens, ratio),
            Budget::Ratio(ratio) => RetryBudget::ratio(ratio, Duration::from_secs(10)),
        };
        let breaker = match row.throttle {
            Some(k) => CircuitBreaker::adaptive().with_requests_per_accept(k),
            None => CircuitBreaker::new()
                .with_consecutive_failures(row.opens_after)
                .with_min_calls(1000)
                .with_open_for(Duration::from_secs(60))
                .with_jitter(0.0),
        };
        let env = Env {
            dep: Arc::new(Dep {
                origin: Instant::now(),
                latency: Duration::from_millis(row.latency_ms),
                steps: row.steps,
                attempts: AtomicU32::new(0),
                starts: Mutex::new(Vec::new()),
            }),
            budget: Arc::new(budget),
            breaker: Arc::new(breaker),
            opens_after: row.opens_after,
            adaptive: row.throttle.is_some(),
        };
        if row.open_before {
            env.breaker.force_open();
        }
        for _ in 0..row.failures_before {
            if let Ok(permit) = env.breaker.acquire() {
                permit.record(false);
            }
        }
        env
    }

    /// One attempt of the outer call.
    async fn attempt(&self) -> Answer {
        match self.dep.next_step() {
            Step::Inner => inner(&self.dep).await,
            step => self.dep.call(step).await,
        }
    }

    fn attempt_now(&self) -> Answer {
        match self.dep.next_step() {
            Step::Inner => inner_blocking(&self.dep),
            step => self.dep.call_now(step),
        }
    }

    /// What the call that returned `result` shows. Read right after it.
    fn seen(&self, result: Answer) -> Seen {
        let stop = last_call().map(|stopped| (stopped.reason(), stopped.attempts()));
        let starts = self.dep.starts.lock().unwrap().clone();
        let refusing = self.breaker.refusal_probability();
        Seen {
            result,
            calls: starts.len(),
            stop,
            tokens: self.budget.tokens(),
            breaker: if self.adaptive {
                // It never opens: its record is `refusing`.
                (self.breaker.state(), 0)
            } else {
                breaker_record(&self.breaker, self.opens_after)
            },
            refusing,
            starts: starts.iter().map(|start| start.as_millis()).collect(),
        }
    }
}

/// The breaker's state and the failures in a row it has recorded: found by
/// recording failures until it opens (it opens after `opens_after` in a
/// row, and never on its ratio), so read it last.
fn breaker_record(breaker: &CircuitBreaker, opens_after: u32) -> (CircuitState, u32) {
    let state = breaker.state();
    let mut more = 0;
    while more < opens_after {
        match breaker.acquire() {
            Ok(permit) => permit.record(false),
            Err(_) => break,
        }
        more += 1;
    }
    (state, opens_after - more)
}

/// Everything the table compares.
#[derive(Debug, PartialEq)]
struct Seen {
    result: Answer,
    /// Calls that reached the dependency, inner calls included.
    calls: usize,
    /// `last_call()`: the reason and the attempts made.
    stop: Option<(Stop, u32)>,
    tokens: f64,
    breaker: (CircuitState, u32),
    /// `refusal_probability()`: 1 while open; for an adaptive throttle, its
    /// rule over the requests and accepts it counted.
    refusing: f64,
    /// When each call started, in whole milliseconds.
    starts: Vec<u128>,
}

// ---------------------------------------------------------------------------
// The policies, each written once for the attribute and once for the
// closure API and the layers; a row names one.
// ---------------------------------------------------------------------------

macro_rules! shape {
    ($name:ident, [$($keys:tt)*], $policy_type:ty = $policy:expr) => {
        mod $name {
            use super::*;

            pub static POLICY: $policy_type = $policy;
            /// What the layers run under: they cut no attempt off.
            pub static UNTIMED: Policy = $policy.without_timeout();

            pub async fn closure(env: &Env) -> Answer {
                POLICY
                    .on(transient)
                    .on_ok(busy)
                    .retry_after(hint)
                    .budget(&env.budget)
                    .breaker(&env.breaker)
                    .run(|| env.attempt())
                    .await
            }

            pub async fn hedged_closure(env: &Env) -> Answer {
                POLICY
                    .on(transient)
                    .on_ok(busy)
                    .retry_after(hint)
                    .budget(&env.budget)
                    .breaker(&env.breaker)
                    .hedge(Hedge::after(Duration::from_secs(10)))
                    .run(|| env.attempt())
                    .await
            }

            pub fn closure_blocking(env: &Env) -> Answer {
                POLICY
                    .on(transient)
                    .on_ok(busy)
                    .retry_after(hint)
                    .budget(&env.budget)
                    .breaker(&env.breaker)
                    .run_blocking(|| env.attempt_now())
            }

            #[retry($($keys)*, on = transient, on_ok = busy, retry_after = hint,
                    budget = &env.budget, breaker = &env.breaker)]
            pub async fn attribute(env: &Env) -> Answer {
                env.attempt().await
            }

            #[retry($($keys)*, on = transient, on_ok = busy, retry_after = hint,
                    budget = &env.budget, breaker = &env.breaker)]
            pub fn plain(env: &Env) -> Answer {
                env.attempt_now()
            }

            #[retry($($keys)*, on = transient, on_ok = busy, retry_after = hint,
                    budget = &env.budget, breaker = &env.breaker, hedge = "10s")]
            pub async fn hedged(env: &Env) -> Answer {
                env.attempt().await
            }
        }
    };
}

const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

// Waits of 100 and 200 ms.
shape!(
    plain,
    [max = 3, base = "100ms", cap = "1s", jitter = "none"],
    Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(ms(100))
        .with_cap(ms(1000))
        .with_jitter(Jitter::None)
);

// Waits of 100 ms, and a deadline.
shape!(
    deadline,
    [
        max = 10,
        base = "100ms",
        multiplier = 1,
        jitter = "none",
        deadline = "300ms"
    ],
    Policy = Policy::new()
        .with_max_attempts(10)
        .with_base(ms(100))
        .with_multiplier(1.0)
        .with_jitter(Jitter::None)
        .with_deadline(ms(300))
);

// The same with a per-attempt timeout, and another deadline.
shape!(
    deadline_timeout,
    [
        max = 10,
        base = "100ms",
        multiplier = 1,
        jitter = "none",
        deadline = "260ms",
        timeout = "1s"
    ],
    Policy<TimedOut> = Policy::new()
        .with_max_attempts(10)
        .with_base(ms(100))
        .with_multiplier(1.0)
        .with_jitter(Jitter::None)
        .with_deadline(ms(260))
        .with_timeout(ms(1000))
);

#[derive(Clone, Copy, Debug)]
enum Shape {
    Plain,
    Deadline,
    DeadlineTimeout,
}

impl Shape {
    /// The policy the layers run under, which cut no attempt off.
    fn policy(self) -> &'static Policy {
        match self {
            Shape::Plain => &plain::UNTIMED,
            Shape::Deadline => &deadline::UNTIMED,
            Shape::DeadlineTimeout => &deadline_timeout::UNTIMED,
        }
    }
}

// ---------------------------------------------------------------------------
// The entry points: each runs one call of a row and says what it showed.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Entry {
    /// The reference.
    Attribute,
    Closure,
    Tower,
    Middleware,
    HedgedAttribute,
    HedgedClosure,
    HedgeLayer,
}

/// Runs `row` through `entry` on the current (paused) runtime.
async fn run(row: &Row, entry: Entry) -> Seen {
    let env = Env::new(row);
    let shape = row.shape;
    let result = match entry {
        Entry::Attribute => match shape {
            Shape::Plain => plain::attribute(&env).await,
            Shape::Deadline => deadline::attribute(&env).await,
            Shape::DeadlineTimeout => deadline_timeout::attribute(&env).await,
        },
        Entry::HedgedAttribute => match shape {
            Shape::Plain => plain::hedged(&env).await,
            Shape::Deadline => deadline::hedged(&env).await,
            Shape::DeadlineTimeout => deadline_timeout::hedged(&env).await,
        },
        Entry::Closure => match shape {
            Shape::Plain => plain::closure(&env).await,
            Shape::Deadline => deadline::closure(&env).await,
            Shape::DeadlineTimeout => deadline_timeout::closure(&env).await,
        },
        Entry::HedgedClosure => match shape {
            Shape::Plain => plain::hedged_closure(&env).await,
            Shape::Deadline => deadline::hedged_closure(&env).await,
            Shape::DeadlineTimeout => deadline_timeout::hedged_closure(&env).await,
        },
        Entry::Tower => through_tower(shape, &env).await,
        Entry::Middleware => through_middleware(shape, &env).await,
        Entry::HedgeLayer => through_hedge_layer(shape, &env).await,
    };
    env.seen(result)
}

/// The tower layer over a `service_fn` that answers as the row says: an
/// `Ok` answer is the response's body, an error the service's error.
async fn through_tower(shape: Shape, env: &Env) -> Answer {
    let dependency = env.clone();
    let service = tower::service_fn(move |_: Request<String>| {
        let env = dependency.clone();
        async move { env.attempt().await.map(Response::new) }
    });
    let layer = RetryLayer::new(shape.policy())
        .with_budget(Arc::clone(&env.budget))
        .with_classifier(|_: &Request<String>, result: &Result<Response<Value>, E>| {
            classify(
                &result
                    .as_ref()
                    .map(|response| *response.body())
                    .map_err(|e| *e),
            )
        })
        .with_breaker(Arc::clone(&env.breaker));
    let mut client = tower::ServiceBuilder::new().layer(layer).service(service);
    let ready = client.ready().await.map_err(|_| "not ready").unwrap();
    match ready.call(Request::new(String::new())).await {
        Ok(response) => Ok(*response.body()),
        Err(BreakerError::Open(_)) => Err(E::Open),
        Err(BreakerError::Service(e)) => Err(e),
        Err(other) => panic!("{other}"),
    }
}

/// The tower `HedgeLayer` over a `service_fn` that answers as the row says,
/// its requests `Request<()>` (cloned for each copy). It names no breaker.
async fn through_hedge_layer(shape: Shape, env: &Env) -> Answer {
    let dependency = env.clone();
    let service = tower::service_fn(move |_: Request<()>| {
        let env = dependency.clone();
        async move { env.attempt().await }
    });
    let layer = HedgeLayer::new(shape.policy(), Hedge::after(Duration::from_secs(10)))
        .with_budget(Arc::clone(&env.budget))
        .with_classifier(|_: &Request<()>, answer: &Answer| classify(answer));
    let mut client = tower::ServiceBuilder::new().layer(layer).service(service);
    client.ready().await.unwrap().call(Request::new(())).await
}

/// The answer as the server writes it: the status a real server would send
/// (and `Retry-After` for a hint), and the answer itself in `x-answer`.
fn respond(answer: Answer) -> axum::response::Response {
    let (status, kind, call, retry_after) = match answer {
        Ok(Value::Fine(call)) => (StatusCode::OK, "fine", call, None),
        Ok(Value::Busy(call)) => (StatusCode::SERVICE_UNAVAILABLE, "busy", call, None),
        Err(E::Transient(call)) => (StatusCode::SERVICE_UNAVAILABLE, "fail", call, None),
        Err(E::Permanent(call)) => (StatusCode::BAD_REQUEST, "reject", call, None),
        Err(E::Marked(call)) => (StatusCode::SERVICE_UNAVAILABLE, "marked", call, None),
        Err(E::Hinted(call, hint)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "fail",
            call,
            Some(hint.as_secs()),
        ),
        Err(other) => panic!("the server does not answer {other:?}"),
    };
    let mut response = Response::builder()
        .status(status)
        .header("x-answer", format!("{kind} {call}"));
    if let Some(secs) = retry_after {
        response = response.header("retry-after", secs.to_string());
    }
    if kind == "marked" {
        response = response.header("retry-exhausted", "exhausted");
    }
    response.body(axum::body::Body::empty()).unwrap()
}

/// The answer a response carries, its hint read from `Retry-After`.
fn read(response: &reqwest::Response) -> Answer {
    let header = |name: &str| Some(response.headers().get(name)?.to_str().ok()?.to_owned());
    let answer = header("x-answer").expect("x-answer");
    let (kind, call) = answer.split_once(' ').unwrap();
    let call = call.parse().unwrap();
    let hint = header("retry-after").and_then(|value| retry_runtime::retry_after::parse(&value));
    match (kind, hint) {
        ("fine", _) => Ok(Value::Fine(call)),
        ("busy", _) => Ok(Value::Busy(call)),
        ("fail", None) => Err(E::Transient(call)),
        ("fail", Some(hint)) => Err(E::Hinted(call, hint)),
        ("reject", _) => Err(E::Permanent(call)),
        ("marked", _) => Err(E::Marked(call)),
        _ => panic!("{answer}"),
    }
}

/// The reqwest middleware against an axum server on 127.0.0.1 whose
/// handler answers as the row says.
async fn through_middleware(shape: Shape, env: &Env) -> Answer {
    async fn handle(State(env): State<Env>) -> axum::response::Response {
        respond(env.attempt().await)
    }

    let server = servers::serve(
        Router::new()
            .route("/", any(handle))
            .with_state(env.clone()),
        0,
    )
    .await;
    // No idle connections, whose timers would move the paused clock.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let middleware = RetryMiddleware::new(*shape.policy())
        .with_budget(Arc::clone(&env.budget))
        .with_breaker(Arc::clone(&env.breaker))
        .with_classifier(
            |_: &reqwest::Request, outcome: &retry_runtime::reqwest_middleware::Outcome| {
                match outcome {
                    Ok(response) => classify(&read(response)),
                    Err(error) => panic!("{error:?}"),
                }
            },
        );
    let client = reqwest_middleware::ClientBuilder::new(client)
        .with(middleware)
        .build();
    match client.get(server.url("/")).send().await {
        Ok(response) => read(&response),
        Err(reqwest_middleware::Error::Middleware(error)) if error.is::<CircuitOpen>() => {
            Err(E::Open)
        }
        Err(error) => panic!("{error:?}"),
    }
}

/// Runs `row` through a plain function's attribute or `run_blocking`, on
/// this thread, outside any runtime: waits block on the real clock.
fn run_blocking(row: &Row, closure: bool) -> Seen {
    let env = Env::new(row);
    let result = if closure {
        match row.shape {
            Shape::Plain => plain::closure_blocking(&env),
            Shape::Deadline => deadline::closure_blocking(&env),
            Shape::DeadlineTimeout => deadline_timeout::closure_blocking(&env),
        }
    } else {
        match row.shape {
            Shape::Plain => plain::plain(&env),
            Shape::Deadline => deadline::plain(&env),
            Shape::DeadlineTimeout => deadline_timeout::plain(&env),
        }
    };
    env.seen(result)
}

// ---------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------

struct Row {
    shape: Shape,
    /// What each outer attempt does, in order; `Fail` past the end.
    steps: &'static [Step],
    /// How long each call to the dependency takes.
    latency_ms: u64,
    budget: Budget,
    /// The breaker opens after this many failures in a row.
    opens_after: u32,
    /// The breaker is forced open before the call.
    open_before: bool,
    /// `Some(k)`: the breaker is `CircuitBreaker::adaptive()` with this K.
    throttle: Option<f32>,
    /// Failures the breaker records before the call.
    failures_before: u32,
    /// What the reference shows.
    expect: Expect,
    /// What a hedged call shows.
    hedged: Hedged,
}

struct Expect {
    result: Answer,
    stop: (Stop, u32),
    calls: usize,
    starts: &'static [u128],
    tokens: f64,
    breaker: (CircuitState, u32),
    refusing: f64,
}

impl Expect {
    fn seen(&self) -> Seen {
        assert_eq!(
            self.starts.len(),
            self.calls,
            "a row lists a start per call"
        );
        Seen {
            result: self.result,
            calls: self.calls,
            stop: Some(self.stop),
            tokens: self.tokens,
            breaker: self.breaker,
            refusing: self.refusing,
            starts: self.starts.to_vec(),
        }
    }
}

enum Hedged {
    /// As the reference, with these starts: each retry at once.
    Starts(&'static [u128]),
    /// Its own, where starting at once lets more attempts in before the
    /// deadline than the reference's waits do.
    Own(Expect),
}

/// `RetryBudget::new(max_tokens, token_ratio)`, or `RetryBudget::ratio` over
/// 10 s.
#[derive(Clone, Copy)]
enum Budget {
    Tokens(u32, f32),
    Ratio(f32),
}

const BUDGET: Budget = Budget::Tokens(100, 0.5);
/// The thread's random numbers, seeded before each run.
const SEED: u64 = 34;
const OPENS_AFTER: u32 = 20;

/// A budget of 4 allows a retry while more than 2 tokens are left after
/// the failure: attempt 1 leaves 3, attempt 2 leaves 2.
const BUDGET_EXHAUSTED_MID_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Fail, Step::Fine],
    latency_ms: 0,
    budget: Budget::Tokens(4, 0.5),
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(2)),
        stop: (Stop::Budget, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 2.0,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// Two failures in a row open the breaker: the second is not retried.
const BREAKER_OPENS_MID_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Fail, Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: 2,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(2)),
        stop: (Stop::Open, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 98.0,
        breaker: (CircuitState::Open, 2),
        refusing: 1.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// The server asks for 5 s, above `cap` (1 s): returned at once.
const HINT_LONGER_THAN_CAP: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Hint(5), Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Hinted(2, Duration::from_secs(5))),
        stop: (Stop::HintTooLong, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 98.0,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// Attempt 2's inner call gives up (calls 2 and 3): not retried, `nested`.
const INNER_GIVES_UP_MID_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Inner, Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(3)),
        stop: (Stop::Nested, 2),
        calls: 3,
        starts: &[0, 100, 110],
        tokens: 98.0,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0, 10]),
};

/// The last attempt's inner call gives up: `exhausted`, and its token
/// taken, as any last attempt's failure.
const INNER_GIVES_UP_ON_THE_LAST_ATTEMPT: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Fail, Step::Inner],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(4)),
        stop: (Stop::Exhausted, 3),
        calls: 4,
        starts: &[0, 100, 300, 310],
        tokens: 97.0,
        breaker: (CircuitState::Closed, 3),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0, 0, 10]),
};

/// A failure the server below already retried and gave up on, and marked
/// so: not retried (`nested`), and a failure for the budget (a token) and
/// the breaker, as an inner call's give-up in process is (DESIGN §4.17).
const MARKED_MID_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Marked, Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Marked(2)),
        stop: (Stop::Nested, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 98.0,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// An error `on` rejects: returned, no token taken, and a success for the
/// breaker (the dependency answered), which ends the failures in a row.
const ON_REJECTS: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Reject, Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Permanent(2)),
        stop: (Stop::NotRetryable, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 99.0,
        breaker: (CircuitState::Closed, 0),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// Two `Ok`s that `on_ok` retries, then a success: each retried `Ok` is a
/// failure for the budget and the breaker, the success gives back 0.5.
const ON_OK_RETRIES: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Busy, Step::Busy, Step::Fine],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Ok(Value::Fine(3)),
        stop: (Stop::Done, 3),
        calls: 3,
        starts: &[0, 100, 300],
        tokens: 98.5,
        breaker: (CircuitState::Closed, 0),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0, 0]),
};

/// Calls take 50 ms. The wait after the call at 150 ms ends exactly at the
/// deadline (300 ms): it is made. Hedged, attempts follow each other at
/// once, and the one due exactly at the deadline is made too.
const DEADLINE_EXACTLY_REACHED: Row = Row {
    shape: Shape::Deadline,
    steps: &[],
    latency_ms: 50,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(3)),
        stop: (Stop::Deadline, 3),
        calls: 3,
        starts: &[0, 150, 300],
        tokens: 97.0,
        breaker: (CircuitState::Closed, 3),
        refusing: 0.0,
    },
    hedged: Hedged::Own(Expect {
        result: Err(E::Transient(7)),
        stop: (Stop::Deadline, 7),
        calls: 7,
        starts: &[0, 50, 100, 150, 200, 250, 300],
        tokens: 93.0,
        breaker: (CircuitState::Closed, 7),
        refusing: 0.0,
    }),
};

/// Calls take 30 ms, under a per-attempt timeout. The wait after the call
/// at 130 ms would end exactly at the deadline (260 ms), where the attempt
/// would have no time: not made. Hedged, the attempt started at 240 ms has
/// 20 ms left and is cut off at the deadline; none starts at it.
const DEADLINE_EXACTLY_REACHED_UNDER_A_TIMEOUT: Row = Row {
    shape: Shape::DeadlineTimeout,
    steps: &[],
    latency_ms: 30,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(2)),
        stop: (Stop::Deadline, 2),
        calls: 2,
        starts: &[0, 130],
        tokens: 98.0,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Own(Expect {
        result: Err(E::TimedOut),
        stop: (Stop::Deadline, 9),
        calls: 9,
        starts: &[0, 30, 60, 90, 120, 150, 180, 210, 240],
        tokens: 91.0,
        breaker: (CircuitState::Closed, 9),
        refusing: 0.0,
    }),
};

/// The breaker is open before the call: refused, the dependency never
/// reached, nothing taken from the budget.
const BREAKER_OPEN_BEFORE_THE_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: true,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Open),
        stop: (Stop::Open, 1),
        calls: 0,
        starts: &[],
        tokens: 100.0,
        breaker: (CircuitState::Open, OPENS_AFTER),
        refusing: 1.0,
    },
    hedged: Hedged::Starts(&[]),
};

/// A ratio budget of 1.5 retries per first attempt: attempt 1's failure
/// leaves room for one retry (1 of 1.5), attempt 2's for none (2 of 1.5).
/// A failure takes nothing; the retry made does.
const RATIO_BUDGET_EXHAUSTED_MID_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Fail, Step::Fine],
    latency_ms: 0,
    budget: Budget::Ratio(1.5),
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: None,
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(2)),
        stop: (Stop::Budget, 2),
        calls: 2,
        starts: &[0, 100],
        tokens: 0.5,
        breaker: (CircuitState::Closed, 2),
        refusing: 0.0,
    },
    hedged: Hedged::Starts(&[0, 0]),
};

/// An adaptive throttle that has seen 1000 failures refuses the call
/// (p = 1000 / 1001, and under `SEED` it does): the dependency is never
/// reached, the refusal counts as a request, nothing is taken from the
/// budget.
const THROTTLE_REFUSES_THE_CALL: Row = Row {
    shape: Shape::Plain,
    steps: &[],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: Some(2.0),
    failures_before: 1000,
    expect: Expect {
        result: Err(E::Open),
        stop: (Stop::Open, 1),
        calls: 0,
        starts: &[],
        tokens: 100.0,
        breaker: (CircuitState::Closed, 0),
        refusing: 1001.0 / 1002.0,
    },
    hedged: Hedged::Starts(&[]),
};

/// An adaptive throttle with K = 1 lets attempt 1 through (nothing in its
/// window), then refuses each retry with the rule's chance: 1/2 after one
/// failure, 2/3 after two. Under `SEED`, attempt 2 goes through and
/// attempt 3 is refused: the caller gets attempt 2's own error. The
/// window then holds three requests (the refused one too) and no accept.
/// A hedged call retries at once, drawing no backoff, so the throttle's
/// draws fall on other numbers of the seeded sequence: under `SEED` both
/// its retries go through, and it ends `exhausted`, with the same three
/// requests in the window.
const THROTTLE_REFUSES_A_RETRY: Row = Row {
    shape: Shape::Plain,
    steps: &[Step::Fail, Step::Fail, Step::Fail],
    latency_ms: 0,
    budget: BUDGET,
    opens_after: OPENS_AFTER,
    open_before: false,
    throttle: Some(1.0),
    failures_before: 0,
    expect: Expect {
        result: Err(E::Transient(2)),
        stop: (Stop::Open, 3),
        calls: 2,
        starts: &[0, 100],
        tokens: 98.0,
        breaker: (CircuitState::Closed, 0),
        refusing: 0.75,
    },
    hedged: Hedged::Own(Expect {
        result: Err(E::Transient(3)),
        stop: (Stop::Exhausted, 3),
        calls: 3,
        starts: &[0, 0, 0],
        tokens: 97.0,
        breaker: (CircuitState::Closed, 0),
        refusing: 0.75,
    }),
};

// ---------------------------------------------------------------------------
// The groups of entry points a row is run through, and the tests.
// ---------------------------------------------------------------------------

/// Runs `future` on a runtime whose clock is paused, as
/// `#[tokio::test(start_paused = true)]` does: a test of the blocking group
/// makes its reference call on one, and its blocking calls outside it.
fn paused<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}

/// The reference run, checked against the row: the row's expectation is
/// what the sequential decision gives.
async fn reference(row: &Row) -> Seen {
    let seen = run(row, Entry::Attribute).await;
    assert_eq!(
        seen,
        row.expect.seen(),
        "the reference (attribute, async fn)"
    );
    seen
}

/// Runs `row` through each of `entries`, and fails naming every one that
/// does not show `expect`.
async fn agree(row: &Row, entries: &[Entry], expect: &Seen) {
    let mut differ = Vec::new();
    for &entry in entries {
        let seen = run(row, entry).await;
        if seen != *expect {
            differ.push((entry, seen));
        }
    }
    let differ: Vec<String> = differ
        .iter()
        .map(|(entry, seen)| format!("{entry:?}: {seen:?}"))
        .collect();
    assert!(
        differ.is_empty(),
        "expected {expect:?}\n{}",
        differ.join("\n")
    );
}

fn same_as_reference(row: &Row, entries: &[Entry]) {
    paused(async {
        let reference = reference(row).await;
        agree(row, entries, &reference).await;
    });
}

/// The closure API, async.
fn closure(row: &Row) {
    same_as_reference(row, &[Entry::Closure]);
}

/// The tower layer and the reqwest middleware.
fn layers(row: &Row) {
    same_as_reference(row, &[Entry::Tower, Entry::Middleware]);
}

/// The tower layer alone: an inner retried call in its attempt runs in the
/// same task, and its give-up is seen in process.
fn tower_layer(row: &Row) {
    same_as_reference(row, &[Entry::Tower]);
}

/// What a hedged call of `row` shows, from the reference's.
fn hedged_expect(row: &Row, reference: Seen) -> Seen {
    match &row.hedged {
        Hedged::Starts(starts) => Seen {
            starts: starts.to_vec(),
            calls: starts.len(),
            ..reference
        },
        Hedged::Own(own) => own.seen(),
    }
}

/// The attribute's and the closure API's hedged calls.
fn hedged(row: &Row) {
    paused(async {
        let expect = hedged_expect(row, reference(row).await);
        let entries = [Entry::HedgedAttribute, Entry::HedgedClosure];
        agree(row, &entries, &expect).await;
    });
}

/// The tower `HedgeLayer`: a hedged call whose breaker is untouched (the
/// layer names none; a `CircuitBreakerLayer` inside it would).
fn hedge_layer(row: &Row) {
    paused(async {
        let expect = Seen {
            breaker: (CircuitState::Closed, 0),
            refusing: 0.0,
            ..hedged_expect(row, reference(row).await)
        };
        agree(row, &[Entry::HedgeLayer], &expect).await;
    });
}

/// How late a blocking wait may end on a busy machine.
const SLACK_MS: u128 = 80;

/// The plain function's attribute and `run_blocking`: the same, with each
/// start no earlier than the reference's and at most `SLACK_MS` later.
fn blocking(row: &Row) {
    let reference = paused(reference(row));
    for closure in [false, true] {
        let seen = run_blocking(row, closure);
        let late = seen
            .starts
            .iter()
            .zip(&reference.starts)
            .all(|(seen, reference)| (*reference..reference + SLACK_MS).contains(seen));
        assert!(
            late && seen.starts.len() == reference.starts.len(),
            "closure: {closure}: starts {:?}, reference {:?}",
            seen.starts,
            reference.starts
        );
        let starts = reference.starts.clone();
        assert_eq!(Seen { starts, ..seen }, reference, "closure: {closure}");
    }
}

/// One module per row, one test per group of entry points it runs through.
macro_rules! table {
    ($($test:ident = $row:ident { $($(#[$attr:meta])* $group:ident),* $(,)? })*) => {
        $(
            mod $test {
                $(
                    #[test]
                    $(#[$attr])*
                    fn $group() {
                        super::$group(&super::$row);
                    }
                )*
            }
        )*
    };
}

table! {
    budget_exhausted_mid_call = BUDGET_EXHAUSTED_MID_CALL {
        closure, layers, blocking, hedged, hedge_layer,
    }
    // No `hedge_layer`: it names no breaker.
    breaker_opens_mid_call = BREAKER_OPENS_MID_CALL {
        closure, layers, blocking, hedged,
    }
    breaker_open_before_the_call = BREAKER_OPEN_BEFORE_THE_CALL {
        closure, layers, blocking, hedged,
    }
    ratio_budget_exhausted_mid_call = RATIO_BUDGET_EXHAUSTED_MID_CALL {
        closure, layers, blocking, hedged, hedge_layer,
    }
    // No `hedge_layer`: it names no breaker.
    throttle_refuses_the_call = THROTTLE_REFUSES_THE_CALL {
        closure, layers, blocking, hedged,
    }
    throttle_refuses_a_retry = THROTTLE_REFUSES_A_RETRY {
        closure, layers, blocking, hedged,
    }
    // Hedged attempts that do not overlap: no later failure of another
    // attempt can restart the call after the hint (that divergence needs
    // overlapping attempts, and keeps its own test).
    hint_longer_than_cap = HINT_LONGER_THAN_CAP {
        closure, layers, blocking, hedged, hedge_layer,
    }
    // `tower_layer`, not `layers`: see the module's docs. Hedged calls took
    // no budget token for the failed attempt before issue 30 (99 tokens
    // left, not 98).
    inner_gives_up_mid_call = INNER_GIVES_UP_MID_CALL {
        closure, tower_layer, blocking,
        hedged,
        hedge_layer,
    }
    // `tower_layer`, not `layers`: see the module's docs. Hedged calls
    // stopped `nested` instead of `exhausted`, with no token taken for the
    // last attempt, before issue 30.
    inner_gives_up_on_the_last_attempt = INNER_GIVES_UP_ON_THE_LAST_ATTEMPT {
        closure, tower_layer, blocking,
        hedged,
        hedge_layer,
    }
    marked_mid_call = MARKED_MID_CALL {
        closure, layers, blocking, hedged, hedge_layer,
    }
    on_rejects = ON_REJECTS {
        closure, layers, blocking, hedged, hedge_layer,
    }
    on_ok_retries = ON_OK_RETRIES {
        closure, layers, blocking, hedged, hedge_layer,
    }
    // No `blocking`: see the module's docs. Before issue 30 a hedged call
    // did not start the attempt due exactly at the deadline (300 ms).
    deadline_exactly_reached = DEADLINE_EXACTLY_REACHED {
        closure, layers,
        hedged,
        hedge_layer,
    }
    // No `hedge_layer` nor `layers`: they apply no per-attempt timeout (their
    // docs: add `tower::timeout` inside them) and so take a `Policy`, which
    // has none: the hedge layer's attempt at 240 ms is not cut off, and the
    // retry layer and the middleware make the attempt due exactly at the
    // deadline, as under `DEADLINE_EXACTLY_REACHED`.
    deadline_exactly_reached_under_a_timeout = DEADLINE_EXACTLY_REACHED_UNDER_A_TIMEOUT {
        closure, hedged,
    }
}
