//! The expansion declares an attempt's outcome as the return type and
//! judges it through `Ret: Outcome`, whatever the return type is called: a
//! function returning `Result<T, E>` and one returning an alias of it must
//! behave alike with every key that judges or keeps an outcome: `on` and
//! `on_ok`, the hooks, a breaker (which keeps a retried outcome through the
//! wait) and a plain `fn`. Each case runs the same script of answers
//! through a function of each shape, compares what the callers see, and
//! checks it against what the keys say.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use retry_runtime::{last_call, retry, CircuitBreaker, CircuitOpen, Stop};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    Transient(u32),
    Permanent(u32),
    Open,
}

impl From<CircuitOpen> for Failure {
    fn from(_: CircuitOpen) -> Self {
        Failure::Open
    }
}

fn is_transient(error: &Failure) -> bool {
    matches!(error, Failure::Transient(_))
}

/// `Ok(0)` means "not ready yet": retried, after the wait it names.
fn not_ready(value: &u32) -> bool {
    *value == 0
}

type Answer = Result<u32, Failure>;

/// The answers a dependency gives, in order; then `Ok(100)`.
struct Script {
    answers: Mutex<Vec<Answer>>,
}

impl Script {
    fn new(answers: &[Answer]) -> Self {
        let mut answers = answers.to_vec();
        answers.reverse();
        Script {
            answers: Mutex::new(answers),
        }
    }

    fn next(&self) -> Answer {
        self.answers.lock().unwrap().pop().unwrap_or(Ok(100))
    }
}

thread_local! {
    static HOOKS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn heard(what: String) {
    HOOKS.with(|hooks| hooks.borrow_mut().push(what));
}

fn hooks_heard() -> Vec<String> {
    HOOKS.with(|hooks| core::mem::take(&mut *hooks.borrow_mut()))
}

/// The same retried function for each return type: written through a
/// `macro_rules!`, as a service's own macros would, whose `$ret:ty` reaches
/// the attribute as an invisible group.
// Not formatted: rustfmt indents an attribute's arguments inside a macro's
// body by twice their depth.
#[rustfmt::skip]
macro_rules! judged_by_every_key {
    ($name:ident -> $ret:ty) => {
        #[retry(
            max = 4,
            base = "10ms",
            jitter = "none",
            on = is_transient,
            on_ok = not_ready,
            on_retry = |e: &Failure, n, wait| heard(format!("retry {n} {e:?} {wait:?}")),
            on_retry_ok = |v: &u32, n, wait| heard(format!("retry {n} Ok({v}) {wait:?}")),
            on_give_up = |outcome: &Result<u32, Failure>, stopped| {
                heard(format!("gave up {outcome:?} {:?}", stopped.reason()))
            },
        )]
        async fn $name(script: &Script) -> $ret {
            tokio::task::yield_now().await;
            script.next()
        }
    };
}

judged_by_every_key!(named_result -> Result<u32, Failure>);
judged_by_every_key!(aliased -> Answer);

/// What a caller sees of one call: the outcome, how it stopped, the
/// attempts, the time it took and what the hooks heard.
type Seen = (Answer, Stop, u32, Duration, Vec<String>);

async fn seen<F: std::future::Future<Output = Answer>>(call: F) -> Seen {
    let started = Instant::now();
    let outcome = call.await;
    let last = last_call().expect("the call recorded how it ended");
    (
        outcome,
        last.reason(),
        last.attempts(),
        started.elapsed(),
        hooks_heard(),
    )
}

const SCRIPTS: &[&[Answer]] = &[
    &[Ok(7)],
    &[Err(Failure::Transient(1)), Ok(8)],
    &[Ok(0), Ok(0), Ok(9)],
    &[Ok(0), Ok(0), Ok(0), Ok(0)],
    &[
        Err(Failure::Transient(1)),
        Ok(0),
        Err(Failure::Permanent(2)),
    ],
    &[
        Err(Failure::Transient(1)),
        Err(Failure::Transient(2)),
        Err(Failure::Transient(3)),
        Err(Failure::Transient(4)),
    ],
    &[Err(Failure::Permanent(5))],
];

#[tokio::test(start_paused = true)]
async fn a_result_and_an_alias_of_one_are_judged_alike() {
    for script in SCRIPTS {
        let by_name = seen(named_result(&Script::new(script))).await;
        let by_alias = seen(aliased(&Script::new(script))).await;
        assert_eq!(by_name, by_alias, "script {script:?}");
    }
    // And what they both saw is what the keys say, for two of the scripts.
    let retried_ok = seen(named_result(&Script::new(SCRIPTS[2]))).await;
    assert_eq!(
        retried_ok,
        (
            Ok(9),
            Stop::Done,
            3,
            Duration::from_millis(10 + 20),
            vec![
                "retry 1 Ok(0) 10ms".to_owned(),
                "retry 2 Ok(0) 20ms".to_owned()
            ],
        )
    );
    let exhausted = seen(aliased(&Script::new(SCRIPTS[5]))).await;
    assert_eq!(exhausted.0, Err(Failure::Transient(4)));
    assert_eq!((exhausted.1, exhausted.2), (Stop::Exhausted, 4));
    assert_eq!(exhausted.3, Duration::from_millis(10 + 20 + 40));
    assert_eq!(
        exhausted.4.last().map(String::as_str),
        Some("gave up Err(Transient(4)) Exhausted")
    );
}

/// Opens after two failures in a row; stays open for a minute.
static BREAKER_NAMED: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(60));
static BREAKER_ALIASED: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(60));

#[retry(max = 4, base = "10ms", jitter = "none", on = is_transient, on_ok = not_ready, breaker = &BREAKER_NAMED)]
async fn named_with_breaker(script: &Script) -> Result<u32, Failure> {
    script.next()
}

#[retry(max = 4, base = "10ms", jitter = "none", on = is_transient, on_ok = not_ready, breaker = &BREAKER_ALIASED)]
async fn aliased_with_breaker(script: &Script) -> Answer {
    script.next()
}

#[tokio::test(start_paused = true)]
async fn with_a_breaker_both_return_the_last_real_outcome_when_it_opens() {
    // The second failure opens the circuit: the retry it would make is
    // refused, and the caller gets that failure back, not `Open`; the next
    // call is refused before it starts.
    let script = [Err(Failure::Transient(1)), Err(Failure::Transient(2))];
    let by_name = seen(named_with_breaker(&Script::new(&script))).await;
    let by_alias = seen(aliased_with_breaker(&Script::new(&script))).await;
    assert_eq!(by_name, by_alias);
    assert_eq!(by_name.0, Err(Failure::Transient(2)));
    assert_eq!(by_name.1, Stop::Open);
    let refused_named = seen(named_with_breaker(&Script::new(&[Ok(1)]))).await;
    let refused_aliased = seen(aliased_with_breaker(&Script::new(&[Ok(1)]))).await;
    assert_eq!(refused_named, refused_aliased);
    assert_eq!(refused_named.0, Err(Failure::Open));
}

static PLAIN_CALLS: AtomicU32 = AtomicU32::new(0);

#[retry(max = 3, base = "1ms", jitter = "none", on = is_reset)]
fn plain_named(fail: u32) -> std::io::Result<u32> {
    let call = PLAIN_CALLS.fetch_add(1, Ordering::Relaxed);
    if call < fail {
        Err(std::io::ErrorKind::ConnectionReset.into())
    } else {
        Ok(call)
    }
}

fn is_reset(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::ConnectionReset
}

type IoAnswer = std::io::Result<u32>;

#[retry(max = 3, base = "1ms", jitter = "none", on = is_reset)]
fn plain_aliased(fail: u32) -> IoAnswer {
    let call = PLAIN_CALLS.fetch_add(1, Ordering::Relaxed);
    if call < fail {
        Err(std::io::ErrorKind::ConnectionReset.into())
    } else {
        Ok(call)
    }
}

#[test]
fn plain_functions_of_both_shapes_retry_alike() {
    for (fail, expected) in [(0, Ok(0)), (2, Ok(2)), (5, Err(3))] {
        PLAIN_CALLS.store(0, Ordering::Relaxed);
        let named = plain_named(fail).map_err(|_| PLAIN_CALLS.load(Ordering::Relaxed));
        let named_attempts = last_call().unwrap().attempts();
        PLAIN_CALLS.store(0, Ordering::Relaxed);
        let aliased = plain_aliased(fail).map_err(|_| PLAIN_CALLS.load(Ordering::Relaxed));
        let aliased_attempts = last_call().unwrap().attempts();
        assert_eq!(named, expected, "fail {fail}");
        assert_eq!(aliased, expected, "fail {fail}");
        assert_eq!(named_attempts, aliased_attempts);
    }
}
