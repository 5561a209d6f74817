//! The `tracing` events of every way a call stops, for the attribute and the
//! closure API, against the table in `retry_runtime::observe`: one INFO
//! `attempt failed; retrying` per retry, whose `wait_ms` is the wait actually
//! slept; one DEBUG `attempt failed; not retrying` or WARN `attempt failed;
//! giving up` per call, whose `reason` is `Stop::as_str`; `error.type` on
//! every event of a failed attempt; and none for a success. Alone in its
//! test binary: tracing caches, per call site and process-wide, whether
//! anyone listens.

#[path = "support/events.rs"]
mod events;
#[path = "support/trace_tree.rs"]
mod trace_tree;

use std::cell::RefCell;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, CircuitOpen, Policy, RetryBudget, Stop, TimedOut};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum Failure {
    Transient,
    Fatal,
    Slow,
    Open,
    TimedOut,
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure::Open
    }
}

impl From<TimedOut> for Failure {
    fn from(_: TimedOut) -> Self {
        Failure::TimedOut
    }
}

fn transient(failure: &Failure) -> bool {
    *failure != Failure::Fatal
}

fn hint(failure: &Failure) -> Option<Duration> {
    (*failure == Failure::Slow).then_some(Duration::from_secs(60))
}

thread_local! {
    static STARTS: RefCell<Vec<Instant>> = RefCell::default();
}

fn started() {
    STARTS.with(|starts| starts.borrow_mut().push(Instant::now()));
}

const ERROR: &str = "tracing_give_up_reasons::Failure";

/// Full jitter: the waits are drawn; the events must say which.
#[retry(max = 4, base = "100ms", on = transient)]
async fn exhausted() -> Result<(), Failure> {
    started();
    Err(Failure::Transient)
}

#[retry(max = 4, base = "100ms", jitter = "none", on = transient)]
async fn fatal_second() -> Result<(), Failure> {
    started();
    if retry_runtime::current_attempt().unwrap().attempt() == 1 {
        Err(Failure::Transient)
    } else {
        Err(Failure::Fatal)
    }
}

#[retry(max = 10, base = "100ms", jitter = "none", deadline = "250ms")]
async fn past_the_deadline() -> Result<(), Failure> {
    Err(Failure::Transient)
}

static BUDGET: RetryBudget = RetryBudget::new(2, 0.1);

#[retry(max = 10, base = "10ms", jitter = "none", budget = &BUDGET)]
async fn over_budget() -> Result<(), Failure> {
    Err(Failure::Transient)
}

#[retry(max = 4, base = "10ms", jitter = "none", cap = "1s", retry_after = hint)]
async fn hint_too_long() -> Result<(), Failure> {
    Err(Failure::Slow)
}

static BREAKER: CircuitBreaker = CircuitBreaker::new().with_consecutive_failures(2);

#[retry(max = 5, base = "10ms", jitter = "none", breaker = &BREAKER)]
async fn behind_a_breaker() -> Result<(), Failure> {
    Err(Failure::Transient)
}

/// Parses `name=value` out of an event.
fn field<'e>(event: &'e str, name: &str) -> Option<&'e str> {
    let start = event.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &event[start..];
    Some(rest.split(' ').next().unwrap())
}

/// Checks the events of one call that stopped for `reason` after
/// `retries` retries.
fn check(events: &[String], function: &str, retries: usize, level: &str, reason: Stop) {
    assert_eq!(events.len(), retries + 1, "{events:#?}");
    for (index, event) in events[..retries].iter().enumerate() {
        assert!(
            event.starts_with("INFO message=attempt failed; retrying "),
            "{event}"
        );
        assert_eq!(field(event, "function"), Some(&*format!("\"{function}\"")));
        assert_eq!(
            field(event, "code.function.name"),
            Some(&*format!("\"{function}\""))
        );
        assert_eq!(field(event, "attempt"), Some(&*format!("{}", index + 1)));
        assert!(field(event, "wait_ms").is_some(), "{event}");
        assert_eq!(
            field(event, "error.type"),
            Some(&*format!("\"{ERROR}\"")),
            "{event}"
        );
    }
    let last = &events[retries];
    let message = if reason == Stop::NotRetryable {
        "not retrying"
    } else {
        "giving up"
    };
    assert!(
        last.starts_with(&format!("{level} message=attempt failed; {message} ")),
        "{last}"
    );
    assert_eq!(
        field(last, "reason"),
        Some(&*format!("\"{}\"", reason.as_str()))
    );
    assert_eq!(
        field(last, "code.function.name"),
        Some(&*format!("\"{function}\""))
    );
    assert_eq!(field(last, "function"), Some(&*format!("\"{function}\"")));
    assert_eq!(
        field(last, "error.type"),
        Some(&*format!("\"{ERROR}\"")),
        "{last}"
    );
}

/// The waits the events report, in nanoseconds.
fn reported_waits(events: &[String]) -> Vec<Duration> {
    events
        .iter()
        .filter_map(|event| field(event, "wait_ms"))
        .map(|ms| Duration::from_secs_f64(ms.parse::<f64>().unwrap() / 1000.0))
        .collect()
}

fn slept() -> Vec<Duration> {
    let starts = STARTS.with(RefCell::take);
    starts.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

/// Within tokio's timer granularity (1 ms), never shorter.
fn assert_slept(reported: &[Duration], slept: &[Duration]) {
    assert_eq!(reported.len(), slept.len(), "{reported:?} {slept:?}");
    for (reported, slept) in reported.iter().zip(slept) {
        assert!(
            *slept >= *reported && *slept - *reported < Duration::from_millis(1),
            "reported {reported:?}, slept {slept:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn each_way_to_stop_has_its_events() {
    let (tree, _guard) = trace_tree::install();
    let name = |function: &str| format!("tracing_give_up_reasons::{function}");

    STARTS.with(RefCell::take);
    assert_eq!(exhausted().await, Err(Failure::Transient));
    let events = tree.take().runtime_events();
    check(&events, &name("exhausted"), 3, "WARN", Stop::Exhausted);
    assert_slept(&reported_waits(&events), &slept());

    assert_eq!(fatal_second().await, Err(Failure::Fatal));
    let events = tree.take().runtime_events();
    check(
        &events,
        &name("fatal_second"),
        1,
        "DEBUG",
        Stop::NotRetryable,
    );
    assert_eq!(reported_waits(&events), [Duration::from_millis(100)]);
    assert_eq!(slept(), [Duration::from_millis(100)]);

    assert_eq!(past_the_deadline().await, Err(Failure::Transient));
    let events = tree.take().runtime_events();
    // 100 ms, then 200 ms would end at 300 ms, past 250 ms.
    check(
        &events,
        &name("past_the_deadline"),
        1,
        "WARN",
        Stop::Deadline,
    );

    assert_eq!(over_budget().await, Err(Failure::Transient));
    let events = tree.take().runtime_events();
    assert!(
        events.last().unwrap().contains("reason=\"budget\""),
        "{events:#?}"
    );
    let retries = events.len() - 1;
    check(&events, &name("over_budget"), retries, "WARN", Stop::Budget);

    assert_eq!(hint_too_long().await, Err(Failure::Slow));
    let events = tree.take().runtime_events();
    check(
        &events,
        &name("hint_too_long"),
        0,
        "WARN",
        Stop::HintTooLong,
    );

    // Two failures open the breaker: the second is not retried; the next
    // call is refused.
    assert_eq!(behind_a_breaker().await, Err(Failure::Transient));
    let events: Vec<_> = tree
        .take()
        .runtime_events()
        .into_iter()
        .filter(|event| !event.contains("message=circuit opened"))
        .collect();
    check(&events, &name("behind_a_breaker"), 1, "WARN", Stop::Open);
    assert_eq!(behind_a_breaker().await, Err(Failure::Open));
    let events = tree.take().runtime_events();
    // A refused call: the runtime's event (the breaker adds none now).
    let of_call: Vec<_> = events
        .into_iter()
        .filter(|event| event.contains("attempt failed"))
        .collect();
    assert_eq!(of_call.len(), 1, "{of_call:#?}");
    assert!(of_call[0].starts_with("WARN "), "{of_call:#?}");
    assert_eq!(field(&of_call[0], "reason"), Some("\"open\""));
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_has_the_same_events() {
    let (tree, _guard) = trace_tree::install();
    const CLOSURE_ERROR: &str = "std::io::error::Error";
    let io = || std::io::Error::from(std::io::ErrorKind::ConnectionReset);

    STARTS.with(RefCell::take);
    let policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(100));
    let result: std::io::Result<()> = policy
        .retrying()
        .run(|| async {
            started();
            Err(io())
        })
        .await;
    assert!(result.is_err());
    let events = tree.take().runtime_events();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert!(events[..2].iter().all(|event| event.starts_with("INFO ")
        && field(event, "code.function.name") == Some("\"closure\"")
        && field(event, "error.type") == Some(&*format!("\"{CLOSURE_ERROR}\""))));
    assert!(events[2].starts_with("WARN message=attempt failed; giving up"));
    assert_eq!(field(&events[2], "reason"), Some("\"exhausted\""));
    assert_eq!(
        field(&events[2], "error.type"),
        Some(&*format!("\"{CLOSURE_ERROR}\""))
    );
    assert_slept(&reported_waits(&events), &slept());

    // Not retryable.
    let result: std::io::Result<()> = policy
        .on(|_: &std::io::Error| false)
        .run(|| async { Err(io()) })
        .await;
    assert!(result.is_err());
    let events = tree.take().runtime_events();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(events[0].starts_with("DEBUG message=attempt failed; not retrying"));
    assert_eq!(field(&events[0], "reason"), Some("\"not_retryable\""));

    // A deadline.
    let deadline = Policy::new()
        .with_max_attempts(10)
        .with_base(Duration::from_millis(100))
        .with_jitter(retry_runtime::Jitter::None)
        .with_deadline(Duration::from_millis(250));
    let result: std::io::Result<()> = deadline.retrying().run(|| async { Err(io()) }).await;
    assert!(result.is_err());
    let events = tree.take().runtime_events();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(field(&events[1], "reason"), Some("\"deadline\""));
    assert!(events[1].starts_with("WARN "));

    // A hint above the cap.
    let capped = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(10))
        .with_cap(Duration::from_secs(1));
    let result: std::io::Result<()> = capped
        .retrying()
        .retry_after(|_: &std::io::Error| Some(Duration::from_secs(60)))
        .run(|| async { Err(io()) })
        .await;
    assert!(result.is_err());
    let events = tree.take().runtime_events();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(field(&events[0], "reason"), Some("\"hint_too_long\""));
    assert!(events[0].starts_with("WARN "));

    // A success: nothing.
    let result: std::io::Result<u32> = policy.retrying().run(|| async { Ok(1) }).await;
    assert_eq!(result.unwrap(), 1);
    let recorded = tree.take();
    assert!(recorded.runtime_events().is_empty(), "{recorded:#?}");
    assert_eq!(recorded.spans.len(), 1, "{recorded:#?}");
    assert!(recorded.spans[0].closed);

    // Blocking, through `run_blocking`.
    let result: std::io::Result<()> = policy.retrying().run_blocking(|| Err(io()));
    assert!(result.is_err());
    let events = tree.take().runtime_events();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert_eq!(field(&events[2], "reason"), Some("\"exhausted\""));
}
