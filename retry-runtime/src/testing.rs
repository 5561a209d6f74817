//! Tests of code that retries, without real waits (feature `testing`).
//!
//! Enable the feature for your tests only:
//!
//! ```toml
//! [dev-dependencies]
//! # The `retry-runtime` of your [dependencies], with the feature for tests.
//! retry-runtime = { path = "../retry/retry-runtime", features = ["testing"] }
//! ```
//!
//! It changes nothing until a test installs a [`VirtualClock`], so the
//! feature may reach your production build through Cargo's feature
//! unification without changing it. Installed, the clock holds for the
//! thread that installed it, until it is dropped: every wait of a retried
//! call on that thread moves it on at once, whatever the executor (tokio,
//! smol, `futures::executor::block_on`) or none (a plain `fn` under
//! `#[retry]`, `run_blocking`), and `deadline`, `timeout`, a hedge's delay
//! and a breaker's open period are judged on it as on a real clock. Each
//! decision the calls make is recorded, for a test to assert the exact
//! sequence. Tests run in parallel on threads of their own do not see each
//! other's clocks.
//!
//! ```
//! use std::time::Duration;
//! use retry_runtime::testing::VirtualClock;
//! use retry_runtime::retry;
//!
//! #[retry(max = 3, base = "1s", jitter = "none")]
//! fn fetch(calls: &mut u32) -> Result<u32, std::io::Error> {
//!     *calls += 1;
//!     if *calls < 3 { Err(std::io::ErrorKind::ConnectionReset.into()) } else { Ok(*calls) }
//! }
//!
//! let clock = VirtualClock::install();
//! assert_eq!(fetch(&mut 0).unwrap(), 3);
//! assert_eq!(clock.elapsed(), Duration::from_secs(3)); // at once, in real time
//! assert_eq!(
//!     clock.take_decisions(),
//!     [
//!         "at 0ns: attempt 1 transient, retry after 1s",
//!         "at 1s: attempt 2 transient, retry after 2s",
//!         "at 3s: attempt 3 done, stop done",
//!     ]
//! );
//! ```
//!
//! An async wait ends once no sooner wait of the clock is left to poll, so
//! that concurrent waits (a hedge's delay beside an attempt that waits, an
//! attempt's `timeout`) end in the order of their ends. Only the crate's
//! own waits and clock readings are simulated: a test's
//! `tokio::time::sleep` or `std::thread::sleep` waits as it always does,
//! and a task that another thread runs (a multi-thread runtime's workers,
//! `spawn_blocking`) sees the real clock.

use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::time::Duration;
use std::cell::RefCell;
use std::sync::Arc;

use crate::timer::simulated;
use crate::{CircuitState, Classification, Stop};

thread_local! {
    /// The decisions recorded on this thread, while a clock is installed.
    static DECISIONS: RefCell<Option<Vec<Decision>>> = const { RefCell::new(None) };
}

/// A simulated clock for the calls of this thread, and the record of their
/// decisions, until dropped: see [the module](self).
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{testing::VirtualClock, Policy, Stop};
///
/// let policy = Policy::new().with_max_attempts(4).with_deadline(Duration::from_secs(5));
/// let clock = VirtualClock::install();
/// let result: Result<(), std::io::Error> = policy
///     .retrying()
///     .run_blocking(|| Err(std::io::ErrorKind::TimedOut.into()));
/// assert!(result.is_err());
/// let last = clock.take_decisions().pop().unwrap();
/// assert_eq!(last.stop, Some(Stop::Exhausted));
/// assert!(clock.elapsed() < Duration::from_secs(5));
/// ```
#[must_use = "the clock is uninstalled when dropped"]
pub struct VirtualClock {
    clock: Arc<simulated::Clock>,
    /// What this thread had before, put back on drop.
    before: (Option<Arc<simulated::Clock>>, Option<Vec<Decision>>),
    /// Installed on one thread, and uninstalled there.
    _thread: PhantomData<*const ()>,
}

impl VirtualClock {
    /// Installs a clock on this thread, standing where the thread's clock
    /// stands now (tokio's, paused or not, inside a tokio runtime; the
    /// real one elsewhere), with an empty record. One installed before on
    /// the thread comes back when this one is dropped.
    pub fn install() -> Self {
        let clock = simulated::Clock::new(crate::clock::Clock::Async.now());
        let before_clock = simulated::install(Some(Arc::clone(&clock)));
        let before_decisions = DECISIONS
            .try_with(|decisions| decisions.replace(Some(Vec::new())))
            .ok()
            .flatten();
        VirtualClock {
            clock,
            before: (before_clock, before_decisions),
            _thread: PhantomData,
        }
    }

    /// The time the clock moved since it was installed.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Moves the clock on by `by`, at once, as a slow attempt would: the
    /// waits it passes end.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// A wait of `wait` on this clock, wherever it is polled: a stand-in
    /// for a slow dependency in a test, which ends in turn with the waits
    /// of the calls.
    pub fn sleep(&self, wait: Duration) -> impl Future<Output = ()> + Send + Sync + 'static {
        crate::sleep::simulated(simulated::Wait::on(Arc::clone(&self.clock), wait))
    }

    /// The decisions recorded on this thread since the clock was installed
    /// or since the last call, in the order they were made.
    #[must_use]
    pub fn take_decisions(&self) -> Vec<Decision> {
        DECISIONS
            .try_with(|decisions| decisions.borrow_mut().as_mut().map(core::mem::take))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

impl Drop for VirtualClock {
    fn drop(&mut self) {
        simulated::install(self.before.0.take());
        let _ = DECISIONS.try_with(|record| record.replace(self.before.1.take()));
    }
}

impl fmt::Debug for VirtualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualClock")
            .field("elapsed", &self.elapsed())
            .finish_non_exhaustive()
    }
}

/// One decision of a retried call, as a [`VirtualClock`] records it: after
/// an attempt ended, retry after a wait or stop; or, while an attempt
/// runs, hedge.
///
/// It reads (and compares equal to a `&str` reading) as
/// `at 300ms: attempt 3 transient, stop exhausted (budget 8, breaker open)`:
/// the time on the clock, the attempt, what the rules made of its outcome
/// (`done`, `transient`, `transient (hint 2s)`, `permanent`,
/// `unrepeatable`, `unsent`, `unprocessed`; `refused` by the breaker,
/// `running` for a hedge), then
/// `retry after` or `hedge after` a wait, or `stop` and the reason, then
/// the call's budget and breaker after the decision, if it has them.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{testing::VirtualClock, Classification, Policy, Stop};
///
/// let clock = VirtualClock::install();
/// let policy = Policy::new().with_max_attempts(2).with_base(Duration::from_millis(10));
/// let _: Result<(), std::io::Error> = policy
///     .on(|_: &std::io::Error| false)
///     .run_blocking(|| Err(std::io::ErrorKind::NotFound.into()));
/// let [decision] = clock.take_decisions().try_into().unwrap();
/// assert_eq!(decision, "at 0ns: attempt 1 permanent, stop not_retryable");
/// assert_eq!((decision.attempt, decision.outcome), (1, Some(Classification::Permanent)));
/// assert_eq!((decision.wait, decision.stop), (None, Some(Stop::NotRetryable)));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct Decision {
    /// The time on the clock, since it was installed.
    pub at: Duration,
    /// The call's name, as events and metrics give it (a retried function's
    /// path, the name given with `named`, or `closure`).
    pub function: &'static str,
    /// The attempt that ended (or, for a hedge, the one still running),
    /// from 1.
    pub attempt: u32,
    /// What the rules made of its outcome; `None` for an attempt the
    /// breaker refused, and for a hedge, whose attempt has not ended.
    pub outcome: Option<Classification>,
    /// The wait before the next attempt (a retry's, or a hedge's delay).
    pub wait: Option<Duration>,
    /// Why the call stopped, [`Stop::Done`] for a success; `None` while it
    /// goes on.
    pub stop: Option<Stop>,
    /// The tokens left in the call's budget, if it has one.
    pub budget: Option<f64>,
    /// The state of the call's breaker, if it has one.
    pub breaker: Option<CircuitState>,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {:?}: attempt {} ", self.at, self.attempt)?;
        match self.outcome {
            Some(Classification::Done) => f.write_str("done")?,
            Some(Classification::Permanent) => f.write_str("permanent")?,
            Some(Classification::Unrepeatable) => f.write_str("unrepeatable")?,
            Some(Classification::Unsent) => f.write_str("unsent")?,
            Some(Classification::Unprocessed) => f.write_str("unprocessed")?,
            Some(Classification::Transient(None)) => f.write_str("transient")?,
            Some(Classification::Transient(Some(hint))) => write!(f, "transient (hint {hint:?})")?,
            None if self.stop.is_some() => f.write_str("refused")?,
            None => f.write_str("running")?,
        }
        match (self.stop, self.wait) {
            (Some(stop), _) => write!(f, ", stop {stop}")?,
            (None, Some(wait)) if self.outcome.is_none() => write!(f, ", hedge after {wait:?}")?,
            (None, Some(wait)) => write!(f, ", retry after {wait:?}")?,
            (None, None) => {}
        }
        match (self.budget, self.breaker.map(CircuitState::as_str)) {
            (None, None) => Ok(()),
            (Some(tokens), None) => write!(f, " (budget {tokens})"),
            (None, Some(state)) => write!(f, " (breaker {state})"),
            (Some(tokens), Some(state)) => write!(f, " (budget {tokens}, breaker {state})"),
        }
    }
}

/// As it reads: an assertion that fails shows the decisions as text.
impl fmt::Debug for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// Equal to the text it reads as, so that a test compares a sequence of
/// decisions with a list of lines.
impl PartialEq<&str> for Decision {
    fn eq(&self, line: &&str) -> bool {
        let text = self.to_string();
        text == *line
    }
}

/// Records a decision on this thread, if a clock is installed: `decision`
/// makes it, given the time on the clock.
pub(crate) fn record(decision: impl FnOnce(Duration) -> Decision) {
    let Some(at) = simulated::current().map(|clock| clock.elapsed()) else {
        return;
    };
    let _ = DECISIONS.try_with(|decisions| {
        if let Some(decisions) = decisions.borrow_mut().as_mut() {
            decisions.push(decision(at));
        }
    });
}
