//! Never early (docs/semantics.md, rule 3): whatever the policy, the
//! clock and the hint, no retry is sent before the instant the server
//! named, on every entry point: the attribute, the closure API, a hedged
//! call, and the tower layer and the reqwest middleware in front of a real
//! server on 127.0.0.1. `Retry-After: <delay-seconds>` names the instant
//! that many seconds after the response; an HTTP-date (in any of its three
//! forms) names its instant on the wall clock, read through `parse_at`. A
//! hint longer than `cap` is not waited out, except under a gRPC service
//! config (gRFC A6 waits a pushback out whatever `maxBackoff`).
//!
//! On a paused clock the retried functions read a wall clock of the test's
//! making, which starts at any instant (a second's fraction included) and
//! moves with the paused clock; the HTTP layers read the real one, so
//! their check allows for the real time that passed.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/servers.rs"]
mod servers;

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use cases::cases;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use proptest::prelude::*;
use retry_runtime::config::grpc::ServiceConfig;
use retry_runtime::hedge::Hedge;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::retry_after::parse_at;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{retry, Jitter, Policy};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

/// What the server says when it fails an attempt.
#[derive(Clone, Copy, Debug)]
enum Hint {
    Absent,
    /// `Retry-After: <seconds>`.
    Seconds(u64),
    /// `Retry-After: <HTTP-date>`, that many whole seconds after the wall
    /// clock's second when it answers (at or before it for 0 and less).
    Date(i64, Form),
}

#[derive(Clone, Copy, Debug)]
enum Form {
    Imf,
    Rfc850,
    Asctime,
}

/// The instant a failed attempt's hint names.
#[derive(Clone, Copy, Debug)]
enum Named {
    None,
    After(Duration),
    At(SystemTime),
}

/// What the server saw of one attempt: when it started and answered (on the
/// paused clock), the wall clock when it answered, and what its hint named.
#[derive(Clone, Copy, Debug)]
struct Seen {
    start: Instant,
    answer: Instant,
    wall: SystemTime,
    named: Named,
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `secs` since the epoch as an HTTP-date in `form` (RFC 9110 section
/// 5.6.7), written here apart from the parser.
fn http_date(secs: i64, form: Form) -> String {
    let days = secs.div_euclid(86_400);
    let time = secs.rem_euclid(86_400);
    let (hour, minute, second) = (time / 3600, time / 60 % 60, time % 60);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = usize::try_from((days + 4).rem_euclid(7)).unwrap();
    let month = MONTHS[usize::try_from(month - 1).unwrap()];
    match form {
        Form::Imf => format!(
            "{}, {day:02} {month} {year:04} {hour:02}:{minute:02}:{second:02} GMT",
            DAYS[weekday]
        ),
        Form::Rfc850 => format!(
            "{}, {day:02}-{month}-{:02} {hour:02}:{minute:02}:{second:02} GMT",
            LONG_DAYS[weekday],
            year % 100
        ),
        Form::Asctime => format!(
            "{} {month} {day:>2} {hour:02}:{minute:02}:{second:02} {year}",
            DAYS[weekday]
        ),
    }
}

/// The `Retry-After` value of `hint`, given at `wall`, and what it names.
fn name(hint: Hint, wall: SystemTime) -> (Option<String>, Named) {
    match hint {
        Hint::Absent => (None, Named::None),
        Hint::Seconds(seconds) => (
            Some(seconds.to_string()),
            Named::After(Duration::from_secs(seconds)),
        ),
        Hint::Date(ahead, form) => {
            let second = i64::try_from(wall.duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap();
            let date = second + ahead;
            let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(date).unwrap());
            (Some(http_date(date, form)), Named::At(at))
        }
    }
}

/// One scenario: the policy, what each attempt answers and how long it
/// takes, the wall clock's start, and a hedged call's delay.
#[derive(Clone, Debug)]
struct Scenario {
    policy: Policy,
    /// Under a gRPC service config (gRFC A6).
    a6: bool,
    script: Vec<(Option<Hint>, Duration)>,
    wall: SystemTime,
    hedge: Duration,
}

impl Scenario {
    /// The answer of attempt `n` (from 0): `None` is a success.
    fn answer(&self, n: usize) -> (Option<Hint>, Duration) {
        self.script
            .get(n)
            .copied()
            .unwrap_or((None, Duration::ZERO))
    }

    /// The wait the server asked for after attempt `seen`, as the client
    /// reads it at the answer (the wall clock it read then is `wall`).
    fn asked(named: Named, wall: SystemTime) -> Option<Duration> {
        match named {
            Named::None => None,
            Named::After(wait) => Some(wait),
            Named::At(at) => Some(at.duration_since(wall).unwrap_or_default()),
        }
    }

    /// Whether a hint of `asked` is waited out.
    fn honoured(&self, asked: Duration) -> bool {
        if self.a6 {
            asked <= Duration::from_millis(i32::MAX as u64)
        } else {
            asked <= self.policy.cap()
        }
    }
}

/// The checks, over what the server saw. `modelled`: the wall clock is the
/// test's, moving with the paused clock exactly; otherwise it is the real
/// one, and a date is checked against the real time at the later attempt
/// plus the paused time between.
fn check(scenario: &Scenario, seen: &[Seen], modelled: bool, sequential: bool) {
    let max = scenario.policy.max_attempts() as usize;
    for (i, failed) in seen.iter().enumerate() {
        for (j, later) in seen.iter().enumerate() {
            if later.start <= failed.answer || i == j {
                continue;
            }
            let since = later.start - failed.answer;
            match failed.named {
                Named::None => {}
                Named::After(wait) => assert!(
                    since >= wait,
                    "attempt {j} {since:?} after attempt {i}'s answer, which asked {wait:?}: {scenario:?}"
                ),
                Named::At(date) => {
                    let at = if modelled {
                        failed.wall + since
                    } else {
                        later.wall + since
                    };
                    assert!(
                        at >= date,
                        "attempt {j} at {at:?}, before attempt {i}'s date {date:?}: {scenario:?}"
                    );
                }
            }
            // A hint longer than `cap` is not waited out: nothing starts
            // after it (the call returned, or a hedged call started no
            // further attempt).
            let asked = Scenario::asked(failed.named, failed.wall);
            let exact = modelled || matches!(failed.named, Named::After(_));
            if let (Some(asked), true) = (asked, exact) {
                assert!(
                    scenario.honoured(asked),
                    "attempt {j} started after attempt {i} asked {asked:?}: {scenario:?}"
                );
            }
        }
        // In the loop, a hint waited out is followed by the next attempt.
        let asked = Scenario::asked(failed.named, failed.wall);
        let exact = modelled || matches!(failed.named, Named::After(_));
        if let (true, Some(asked), true) = (sequential, asked, exact) {
            if i + 1 < max && scenario.honoured(asked) {
                assert!(
                    i + 1 < seen.len(),
                    "no attempt after {i}, asked {asked:?}: {scenario:?}"
                );
            }
        }
    }
}

// ------------------------------------------------ the retried functions

thread_local! {
    static SCENARIO: RefCell<Option<Scenario>> = const { RefCell::new(None) };
    static SEEN: RefCell<Vec<Seen>> = const { RefCell::new(Vec::new()) };
    static ORIGIN: Cell<Option<Instant>> = const { Cell::new(None) };
}

fn scenario() -> Scenario {
    SCENARIO.with(|s| s.borrow().clone().unwrap())
}

/// The test's wall clock: its start, moved by the paused clock.
fn wall_now() -> SystemTime {
    scenario().wall + (Instant::now() - ORIGIN.with(Cell::get).unwrap())
}

#[derive(Debug)]
struct Busy(Option<String>);

fn hint(busy: &Busy) -> Option<Duration> {
    busy.0
        .as_deref()
        .and_then(|value| parse_at(value, wall_now()))
}

/// The dependency: attempt n answers as the script says, after its time.
async fn dependency() -> Result<(), Busy> {
    let start = Instant::now();
    let n = SEEN.with(|seen| seen.borrow().len());
    SEEN.with(|seen| {
        seen.borrow_mut().push(Seen {
            start,
            answer: start,
            wall: wall_now(),
            named: Named::None,
        });
    });
    let (answer, took) = scenario().answer(n);
    tokio::time::sleep(took).await;
    let wall = wall_now();
    let Some(hint) = answer else {
        return Ok(());
    };
    let (header, named) = name(hint, wall);
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        seen[n].answer = Instant::now();
        seen[n].wall = wall;
        seen[n].named = named;
    });
    Err(Busy(header))
}

/// The scenario's policy, which carries no per-attempt timeout.
fn current() -> retry_runtime::Policy {
    scenario().policy
}

#[retry(policy = &current(), retry_after = hint)]
async fn attribute() -> Result<(), Busy> {
    dependency().await
}

async fn closure() -> Result<(), Busy> {
    current().retrying().retry_after(hint).run(dependency).await
}

async fn hedged() -> Result<(), Busy> {
    current()
        .retrying()
        .retry_after(hint)
        .hedge(Hedge::after(scenario().hedge))
        .run(dependency)
        .await
}

/// Runs one retried function under the scenario on a paused clock, and
/// checks what its dependency saw.
fn run_in_process(scenario: &Scenario, entry: u8) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    SCENARIO.with(|s| *s.borrow_mut() = Some(scenario.clone()));
    SEEN.with(|seen| seen.borrow_mut().clear());
    runtime.block_on(async {
        ORIGIN.with(|origin| origin.set(Some(Instant::now())));
        let _ = match entry {
            0 => attribute().await,
            1 => closure().await,
            _ => hedged().await,
        };
    });
    let seen = SEEN.with(|seen| seen.borrow().clone());
    check(scenario, &seen, true, entry < 2);
}

// ------------------------------------------------------ the HTTP layers

/// What the server knows: the scenario, and what it saw.
type Shared = Arc<(Scenario, Mutex<Vec<Seen>>)>;

/// Answers as the script says, at once, with the real wall clock.
async fn answer(State(shared): State<Shared>) -> Response {
    let (scenario, seen) = &*shared;
    let now = Instant::now();
    let wall = SystemTime::now();
    let mut seen = seen.lock().unwrap();
    let (hint, _) = scenario.answer(seen.len());
    let (header, named) = hint.map_or((None, Named::None), |hint| name(hint, wall));
    seen.push(Seen {
        start: now,
        answer: now,
        wall,
        named,
    });
    match (hint, header) {
        (None, _) => StatusCode::OK.into_response(),
        (Some(_), Some(value)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, value)],
        )
            .into_response(),
        (Some(_), None) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// Sends one GET through the tower layer (0) or the reqwest middleware
/// (1) to a real server, on a paused clock, and checks what it saw.
fn run_over_http(scenario: &Scenario, entry: u8) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let shared: Shared = Arc::new((scenario.clone(), Mutex::new(Vec::new())));
    runtime.block_on(async {
        let router = Router::new()
            .route("/", any(answer))
            .with_state(Arc::clone(&shared));
        let server = servers::serve(router, 0).await;
        let policy = Arc::new(scenario.policy);
        if entry == 0 {
            let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
            let mut service = ServiceBuilder::new()
                .layer(RetryLayer::new(policy))
                .service(client);
            let request = http::Request::get(server.url("/"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let _ = service.ready().await.unwrap().call(request).await;
        } else {
            let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                .with(RetryMiddleware::new(*policy))
                .build();
            let _ = client.get(server.url("/")).send().await;
        }
    });
    let seen = shared.1.lock().unwrap().clone();
    check(scenario, &seen, false, true);
}

// ------------------------------------------------------------ scenarios

fn hint_strategy() -> impl Strategy<Value = Option<Hint>> {
    let form = prop_oneof![Just(Form::Imf), Just(Form::Rfc850), Just(Form::Asctime)];
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Hint::Absent)),
        3 => (0u64..25).prop_map(|seconds| Some(Hint::Seconds(seconds))),
        3 => (-2i64..25, form).prop_map(|(ahead, form)| Some(Hint::Date(ahead, form))),
    ]
}

/// A policy of the attribute's keys, or one read from a gRPC service
/// config.
fn policy_strategy() -> impl Strategy<Value = (Policy, bool)> {
    let own = (
        2u32..5,
        1u64..500,
        500u64..20_000,
        prop_oneof![Just(1.0), Just(2.0), 1.0f64..3.0],
        prop::sample::select(Jitter::ALL.to_vec()),
    )
        .prop_map(|(max, base, cap, multiplier, jitter)| {
            let policy = Policy::new()
                .with_max_attempts(max)
                .with_base(Duration::from_millis(base))
                .with_cap(Duration::from_millis(cap.max(base)))
                .with_multiplier(multiplier)
                .with_jitter(jitter);
            (policy, false)
        });
    let config = (2u32..6, 10u64..1000, 100u64..2000, 0.5f64..3.0).prop_map(
        |(max, initial, most, multiplier)| {
            let config: ServiceConfig = serde_json::from_str(&format!(
                r#"{{ "methodConfig": [{{ "name": [{{}}], "retryPolicy": {{
                    "maxAttempts": {max}, "initialBackoff": "{}s", "maxBackoff": "{}s",
                    "backoffMultiplier": {multiplier}, "retryableStatusCodes": ["UNAVAILABLE"] }} }}] }}"#,
                initial as f64 / 1000.0,
                most as f64 / 1000.0,
            ))
            .unwrap();
            (config.methods()[0].policy(), true)
        },
    );
    prop_oneof![3 => own, 2 => config]
}

fn scenario_strategy() -> impl Strategy<Value = Scenario> {
    (
        policy_strategy(),
        prop::collection::vec(
            (hint_strategy(), (0u64..300).prop_map(Duration::from_millis)),
            1..6,
        ),
        // 1980 to 2090, any fraction of a second.
        (315_532_800u64..3_786_912_000, 0u32..1_000_000_000),
        (1u64..2000).prop_map(Duration::from_millis),
    )
        .prop_map(|((policy, a6), script, (secs, nanos), hedge)| Scenario {
            policy,
            a6,
            script,
            wall: UNIX_EPOCH + Duration::new(secs, nanos),
            hedge,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    /// The attribute, the closure API and a hedged call, on the test's
    /// wall clock.
    #[test]
    fn retried_functions_are_never_early(scenario in scenario_strategy()) {
        for entry in 0..3 {
            run_in_process(&scenario, entry);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    /// The tower layer and the reqwest middleware, against a real server,
    /// on the real wall clock.
    #[test]
    fn the_http_layers_are_never_early(scenario in scenario_strategy()) {
        for entry in 0..2 {
            run_over_http(&scenario, entry);
        }
    }
}

/// The check itself fails on a retry one millisecond early, for either
/// form of the hint: the property above cannot pass by checking nothing.
#[test]
fn the_check_catches_a_retry_one_millisecond_early() {
    let scenario = Scenario {
        policy: Policy::new(),
        a6: false,
        script: Vec::new(),
        wall: UNIX_EPOCH + Duration::from_millis(1_000_000_250),
        hedge: Duration::from_secs(1),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let start = runtime.block_on(async { Instant::now() });
    let answered = |named| Seen {
        start,
        answer: start,
        wall: scenario.wall,
        named,
    };
    let retried = |after: Duration| Seen {
        start: start + after,
        answer: start + after,
        wall: scenario.wall + after,
        named: Named::None,
    };
    let date = UNIX_EPOCH + Duration::from_secs(1_000_002);
    for (named, early, on_time) in [
        (Named::After(Duration::from_secs(2)), 1999, 2000),
        (Named::At(date), 1749, 1750),
    ] {
        check(
            &scenario,
            &[answered(named), retried(Duration::from_millis(on_time))],
            true,
            true,
        );
        let caught = std::panic::catch_unwind(|| {
            check(
                &scenario,
                &[answered(named), retried(Duration::from_millis(early))],
                true,
                true,
            );
        });
        assert!(caught.is_err(), "{named:?}");
    }
}
