//! The simulated service, its clients, and the paused runtime every
//! scenario runs on.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use retry_runtime::{
    retry, seed_thread_rng, CircuitBreaker, CircuitOpen, Jitter, Policy, RetryBudget, TimedOut,
};
use tokio::time::Instant;

pub const STRATEGIES: [Jitter; 4] = [
    Jitter::None,
    Jitter::Full,
    Jitter::Equal,
    Jitter::Decorrelated,
];

/// What the simulated service answers when it fails.
#[derive(Debug)]
pub struct Unavailable;

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
pub struct Service {
    pub start: Instant,
    pub down_until: Duration,
    pub arrivals: RefCell<Vec<Duration>>,
}

impl Service {
    pub fn new(down_until: Duration) -> Self {
        Service {
            start: Instant::now(),
            down_until,
            arrivals: RefCell::default(),
        }
    }

    pub fn call(&self) -> Result<(), Unavailable> {
        let now = self.start.elapsed();
        self.arrivals.borrow_mut().push(now);
        if now <= self.down_until {
            Err(Unavailable)
        } else {
            Ok(())
        }
    }

    /// Arrival times of retries: every call after t = 0.
    pub fn retries(&self) -> Vec<Duration> {
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
pub async fn client(policy: &Policy, service: &Service) -> Result<(), Unavailable> {
    service.call()
}

/// The same client drawing retries from a shared budget.
#[retry(policy = policy, budget = budget)]
pub async fn budgeted_client(
    policy: &Policy,
    budget: &RetryBudget,
    service: &Service,
) -> Result<(), Unavailable> {
    service.call()
}

/// The same client behind a shared circuit breaker.
#[retry(policy = policy, breaker = breaker)]
pub async fn guarded_client(
    policy: &Policy,
    breaker: &CircuitBreaker,
    service: &Service,
) -> Result<(), Unavailable> {
    service.call()
}

/// What stands between the clients and a failing service.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    None,
    /// `RetryBudget::new(100, 0.1)`.
    Budget,
    /// `CircuitBreaker::new()`.
    Breaker,
    /// The budget a fleet should use (`metastable::recommended`):
    /// `RetryBudget::ratio(0.1, 10 s)`.
    Recommended,
}

impl Guard {
    pub const ALL: [Guard; 4] = [
        Guard::None,
        Guard::Budget,
        Guard::Breaker,
        Guard::Recommended,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Guard::None => "none",
            Guard::Budget => "budget",
            Guard::Breaker => "breaker",
            Guard::Recommended => "recommended",
        }
    }

    /// The guard's budget, if it has one.
    pub fn budget(self) -> Option<RetryBudget> {
        match self {
            Guard::Budget => Some(RetryBudget::new(100, 0.1)),
            Guard::Recommended => Some(crate::metastable::recommended::budget()),
            Guard::None | Guard::Breaker => None,
        }
    }
}

/// Runs `scenario` on a fresh single-threaded runtime with a paused clock,
/// so thousands of tasks run in simulated time, deterministically.
pub fn simulate<F: Future>(seed: u64, scenario: F) -> F::Output {
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
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
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
pub fn busiest(mut arrivals: Vec<Duration>, window: Duration) -> usize {
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

pub fn policy(jitter: Jitter, max: u32, base: Duration, cap: Duration) -> Policy {
    Policy::new()
        .with_max_attempts(max)
        .with_base(base)
        .with_cap(cap)
        .with_jitter(jitter)
}
