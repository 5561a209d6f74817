//! Plain (non-async) functions: blocking sleeps, deadlines on the real
//! clock, budgets, every function shape.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use retry_runtime::testing::VirtualClock;
use retry_runtime::{retry, RetryBudget};

#[derive(Debug, PartialEq)]
struct Failure(u32);

/// Fails its first `failures` calls; records when each call started.
struct Dependency {
    failures: u32,
    starts: RefCell<Vec<Instant>>,
}

impl Dependency {
    fn new(failures: u32) -> Self {
        Dependency {
            failures,
            starts: RefCell::default(),
        }
    }

    fn call(&self) -> Result<u32, Failure> {
        let mut starts = self.starts.borrow_mut();
        starts.push(Instant::now());
        let call = u32::try_from(starts.len()).unwrap();
        if call <= self.failures {
            Err(Failure(call))
        } else {
            Ok(call)
        }
    }

    fn calls(&self) -> usize {
        self.starts.borrow().len()
    }

    fn gaps(&self) -> Vec<Duration> {
        self.starts
            .borrow()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

#[retry(max = 3, base = "20ms", jitter = "none")]
fn fetch(dependency: &Dependency) -> Result<u32, Failure> {
    dependency.call()
}

/// The schedule, read from a virtual clock's record of decisions (feature
/// `testing`): no real wait, and the exact time of each decision.
#[test]
fn waits_follow_the_schedule() {
    let clock = VirtualClock::install();
    let dependency = Dependency::new(2);
    assert_eq!(fetch(&dependency), Ok(3));
    assert_eq!(
        clock.take_decisions(),
        [
            "at 0ns: attempt 1 transient, retry after 20ms",
            "at 20ms: attempt 2 transient, retry after 40ms",
            "at 60ms: attempt 3 done, stop done",
        ]
    );
    assert_eq!(clock.elapsed(), Duration::from_millis(60));
}

#[test]
fn waits_block_the_thread() {
    let dependency = Dependency::new(2);
    assert_eq!(fetch(&dependency), Ok(3));
    // `std::thread::sleep` never returns early, however loaded the machine.
    let gaps = dependency.gaps();
    assert!(gaps[0] >= Duration::from_millis(20), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(40), "{gaps:?}");
}

#[test]
fn the_last_error_comes_back() {
    let dependency = Dependency::new(10);
    assert_eq!(fetch(&dependency), Err(Failure(3)));
}

// The first wait (1ms) fits the deadline unless the machine stalls for a
// minute; the second (1000s) cannot fit whatever the clock does, so the
// outcome does not depend on how fast the machine runs.
#[retry(
    max = 10,
    base = "1ms",
    cap = "1h",
    multiplier = 1000000,
    jitter = "none",
    deadline = "60s"
)]
fn bounded(dependency: &Dependency) -> Result<u32, Failure> {
    dependency.call()
}

#[test]
fn the_deadline_runs_on_the_real_clock() {
    let dependency = Dependency::new(10);
    assert_eq!(bounded(&dependency), Err(Failure(2)));
    assert_eq!(dependency.calls(), 2);
    assert!(dependency.gaps()[0] >= Duration::from_millis(1));
}

static BUDGET: RetryBudget = RetryBudget::new(4, 1.0);

#[retry(max = 5, base = "1ms", budget = &BUDGET)]
fn budgeted(dependency: &Dependency) -> Result<u32, Failure> {
    dependency.call()
}

#[test]
fn budgets_apply() {
    let dependency = Dependency::new(10);
    // 4 -> 3 (retry), 2 (not above half: stop).
    assert_eq!(budgeted(&dependency), Err(Failure(2)));
}

struct Account {
    balance: u32,
    attempts: u32,
}

impl Account {
    #[retry(max = 3, base = "1ms", on = |e| *e == Failure(0))]
    fn withdraw(&mut self, amount: u32) -> Result<u32, Failure> {
        self.attempts += 1;
        if self.attempts < 2 {
            return Err(Failure(0));
        }
        self.balance = self.balance.checked_sub(amount).ok_or(Failure(1))?;
        Ok(self.balance)
    }

    #[retry(max = 2, base = "1ms")]
    fn balance(&self) -> std::io::Result<u32> {
        Ok(self.balance)
    }
}

#[test]
fn methods_early_returns_and_question_marks() {
    let mut account = Account {
        balance: 10,
        attempts: 0,
    };
    assert_eq!(account.withdraw(4), Ok(6));
    assert_eq!(account.attempts, 2);
    assert_eq!(account.withdraw(100), Err(Failure(1)));
    assert_eq!(account.balance().unwrap(), 6);
}

#[retry(max = 3, base = "1ms")]
fn generic<T: std::str::FromStr>(text: &str) -> Result<T, T::Err> {
    text.parse()
}

#[test]
fn generics() {
    assert_eq!(generic::<u8>("7"), Ok(7));
    assert!(generic::<u8>("x").is_err());
}

#[derive(Debug, PartialEq)]
enum Slow {
    TimedOut,
}

impl From<retry_runtime::TimedOut> for Slow {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Slow::TimedOut
    }
}

// A sleep of 20ms always overruns 10ms; a call that returns at once
// never overruns an hour.
#[retry(max = 2, base = "1ms", timeout = "10ms")]
fn overruns(calls: &std::cell::Cell<u32>) -> Result<u32, Slow> {
    calls.set(calls.get() + 1);
    std::thread::sleep(Duration::from_millis(20));
    Ok(calls.get())
}

#[retry(max = 2, base = "1ms", timeout = "1h")]
fn within_time(calls: &std::cell::Cell<u32>) -> Result<u32, Slow> {
    calls.set(calls.get() + 1);
    Ok(calls.get())
}

#[test]
fn an_attempt_that_returns_after_its_timeout_counts_as_timed_out() {
    // A blocking call cannot be cut off; one that overruns is retried like
    // an async attempt that was cut off, and its late result dropped.
    let calls = std::cell::Cell::new(0);
    assert_eq!(overruns(&calls), Err(Slow::TimedOut));
    assert_eq!(calls.get(), 2);
    let calls = std::cell::Cell::new(0);
    assert_eq!(within_time(&calls), Ok(1));
}
