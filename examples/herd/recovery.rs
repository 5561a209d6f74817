//! The `recovery` scenario: an outage as the service sees it, with requests
//! arriving steadily before, during and after it.

use std::cell::RefCell;
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, Jitter, Policy, RetryBudget};
use tokio::time::{sleep, Instant};

use crate::simulation::{join_all, policy, simulate, Guard, Unavailable};

/// The `recovery` scenario's service: down from `DOWN_FROM` to `DOWN_UNTIL`,
/// when a call fails after `SLOW_FAILURE`; a healthy call takes
/// `HEALTHY_CALL`.
pub const DOWN_FROM: Duration = Duration::from_secs(10);
pub const DOWN_UNTIL: Duration = Duration::from_secs(30);
pub const SLOW_FAILURE: Duration = Duration::from_secs(1);
pub const HEALTHY_CALL: Duration = Duration::from_millis(20);
pub const REQUESTS_PER_SECOND: u32 = 50;
pub const SECONDS: u32 = 60;

/// A service that is slow to fail: records when each call starts.
pub struct SlowService {
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
pub async fn slow_client(policy: &Policy, service: &SlowService) -> Result<(), Unavailable> {
    service.call().await
}

#[retry(policy = policy, budget = budget)]
pub async fn slow_budgeted_client(
    policy: &Policy,
    budget: &RetryBudget,
    service: &SlowService,
) -> Result<(), Unavailable> {
    service.call().await
}

#[retry(policy = policy, breaker = breaker)]
pub async fn slow_guarded_client(
    policy: &Policy,
    breaker: &CircuitBreaker,
    service: &SlowService,
) -> Result<(), Unavailable> {
    service.call().await
}

/// One request: when it started, how long its caller waited, and whether it
/// succeeded.
pub struct Request {
    start: Duration,
    waited: Duration,
    ok: bool,
}

/// What the `recovery` scenario measures under one guard.
pub struct Recovery {
    /// Calls that reached the service during the outage, per request made
    /// during it.
    pub calls_per_request: f64,
    /// The mean wait of the callers of requests made during the outage.
    pub mean_wait: Duration,
    /// The share of those callers answered at once.
    pub at_once: f64,
    /// From the service's recovery until every later request succeeds.
    pub recovered_after: Duration,
    /// Calls reaching the service in each second.
    pub calls_per_second: Vec<u32>,
}

pub fn recovery(guard: Guard) -> Recovery {
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
        let budget = guard.budget().unwrap_or(RetryBudget::new(100, 0.1));
        let breaker = CircuitBreaker::new();
        let (service, policy, budget, breaker) = (&service, &policy, &budget, &breaker);
        let requests = join_all(
            (0..REQUESTS_PER_SECOND * SECONDS)
                .map(|n| async move {
                    let start = Duration::from_secs(1) * n / REQUESTS_PER_SECOND;
                    sleep(start).await;
                    let outcome = match guard {
                        Guard::None => slow_client(policy, service).await,
                        Guard::Budget | Guard::Recommended => {
                            slow_budgeted_client(policy, budget, service).await
                        }
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
