//! `CircuitBreaker::adaptive()`: the SRE book's client-side throttle
//! (DESIGN §4.18). A property test of its probability and window against a
//! model of the rule; the draws following that probability; and the
//! throttle refusing, as an open breaker does, through every entry point
//! that takes a breaker (the key, the closure API, the tower layer, a
//! registry's per-host breaker).

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use proptest::prelude::*;
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::tower::{BreakerError, RetryLayer};
use retry_runtime::{
    last_call, retry, seed_thread_rng, CircuitBreaker, CircuitOpen, CircuitState, Policy, Stop,
};
use tower::{ServiceBuilder, ServiceExt};

/// What a caller does with the permit it asks for.
#[derive(Clone, Copy, Debug)]
enum Op {
    Succeed,
    Fail,
    /// Drops the permit unrecorded (a cancelled call).
    Cancel,
    /// Time passes.
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Succeed),
        3 => Just(Op::Fail),
        1 => Just(Op::Cancel),
        2 => (0u64..1500).prop_map(Op::Advance),
    ]
}

/// The rule, from what the callers saw: each call asked for is a request
/// at the time it was refused or settled, each success an accept; those of
/// the last ten buckets (a tenth of the window each) count.
struct Model {
    bucket_ms: u64,
    k: f64,
    /// (bucket, accepted) of every request.
    requests: Vec<(u64, bool)>,
}

impl Model {
    fn probability(&self, now_ms: u64) -> f64 {
        let latest = now_ms / self.bucket_ms;
        let (mut requests, mut accepts) = (0.0, 0.0);
        for &(bucket, accepted) in &self.requests {
            if bucket + 10 > latest {
                requests += 1.0;
                if accepted {
                    accepts += 1.0;
                }
            }
        }
        f64::max(0.0, (requests - self.k * accepts) / (requests + 1.0))
    }
}

fn paused<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(future)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// After any sequence of successes, failures, cancelled calls and
    /// time passing, the chance of refusal is the rule's over exactly the
    /// requests and accepts of the window.
    #[test]
    fn the_refusal_probability_is_the_rule_over_the_window(
        ops in proptest::collection::vec(op(), 1..120),
        k in prop_oneof![Just(1.0f32), Just(1.5), Just(2.0), Just(3.25)],
        window_s in 1u64..20,
        seed in any::<u64>(),
    ) {
        paused(async {
            seed_thread_rng(seed);
            let window = Duration::from_secs(window_s);
            let breaker = CircuitBreaker::adaptive()
                .with_requests_per_accept(k)
                .with_window(window);
            let mut model = Model {
                bucket_ms: window_s * 100,
                k: f64::from(k),
                requests: Vec::new(),
            };
            // The breaker's time zero.
            prop_assert_eq!(breaker.refusal_probability(), 0.0);
            let start = tokio::time::Instant::now();
            for op in ops {
                let now = u64::try_from(start.elapsed().as_millis()).unwrap();
                // Every op asks once: a request, settled (or refused) now.
                let accepted = match (op, breaker.acquire()) {
                    (Op::Succeed, Ok(permit)) => {
                        permit.record(true);
                        true
                    }
                    (Op::Fail, Ok(permit)) => {
                        permit.record(false);
                        false
                    }
                    // Cancelled, or refused.
                    (_, permit) => {
                        drop(permit);
                        false
                    }
                };
                model.requests.push((now / model.bucket_ms, accepted));
                if let Op::Advance(ms) = op {
                    tokio::time::advance(Duration::from_millis(ms)).await;
                }
                let now = u64::try_from(start.elapsed().as_millis()).unwrap();
                let expected = model.probability(now);
                let seen = breaker.refusal_probability();
                prop_assert!(
                    (seen - expected).abs() < 1e-9,
                    "after {:?} at {} ms: {} against the rule's {}", op, now, seen, expected
                );
                prop_assert_eq!(breaker.state(), CircuitState::Closed);
            }
            Ok(())
        })?;
    }
}

/// Calls are refused as often as the probability says: at 600 requests
/// and 100 accepts with K = 2, p = 400 / 601, and each refusal asked for
/// adds a request.
#[tokio::test(start_paused = true)]
async fn calls_are_refused_as_often_as_the_rule_says() {
    seed_thread_rng(34);
    let breaker = CircuitBreaker::adaptive();
    for success in (0..600).map(|n| n % 6 == 0) {
        // Drawn while the window fills; a refused one counts as asked.
        if let Ok(permit) = breaker.acquire() {
            permit.record(success);
        }
    }
    let before = breaker.refusal_probability();
    let mut refused = 0;
    let mut expected = 0.0;
    for _ in 0..2000 {
        expected += breaker.refusal_probability();
        if breaker.acquire().is_err() {
            refused += 1;
        }
    }
    assert!(before > 0.5, "{before}");
    let share = f64::from(refused) / 2000.0;
    let expected = expected / 2000.0;
    assert!(
        (share - expected).abs() < 0.03,
        "refused {share}, the rule's mean {expected}"
    );
}

/// While the dependency answers, nothing is refused: requests never exceed
/// K times the accepts.
#[tokio::test(start_paused = true)]
async fn a_healthy_dependency_is_never_throttled() {
    let breaker = CircuitBreaker::adaptive();
    for n in 0..5000u32 {
        let permit = breaker.acquire().expect("never refused");
        // One call in three fails, never the first: requests stay below
        // K = 2 per accept from the start.
        permit.record(n % 3 != 2);
        tokio::time::advance(Duration::from_millis(7)).await;
    }
    assert_eq!(breaker.refusal_probability(), 0.0);
}

/// A throttle that has seen a thousand failures, and so refuses nearly
/// every call (p = 1000 / 1001).
fn throttled(breaker: &CircuitBreaker) -> &CircuitBreaker {
    for _ in 0..1000 {
        if let Ok(permit) = breaker.acquire() {
            permit.record(false);
        }
    }
    assert!(breaker.refusal_probability() > 0.99);
    breaker
}

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    Open,
}

impl From<retry_runtime::TimedOut> for Error {
    fn from(_: retry_runtime::TimedOut) -> Self {
        Error::Down
    }
}

impl From<CircuitOpen> for Error {
    fn from(_: CircuitOpen) -> Self {
        Error::Open
    }
}

#[retry(max = 3, breaker = breaker)]
async fn attribute(breaker: &CircuitBreaker) -> Result<(), Error> {
    Err(Error::Down)
}

#[tokio::test(start_paused = true)]
async fn the_key_and_the_closure_api_are_refused_as_by_an_open_breaker() {
    seed_thread_rng(7);
    let breaker = CircuitBreaker::adaptive();
    throttled(&breaker);
    assert_eq!(attribute(&breaker).await, Err(Error::Open));
    let stopped = last_call().unwrap();
    assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Open, 1));

    let policy = Policy::new();
    let refused = policy
        .on(|_: &Error| true)
        .breaker(&breaker)
        .run(|| async { Err::<(), Error>(Error::Down) })
        .await;
    assert_eq!(refused, Err(Error::Open));
    assert_eq!(last_call().unwrap().reason(), Stop::Open);
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_and_a_registrys_breakers_are_refused_too() {
    seed_thread_rng(7);
    static POLICY: Policy = Policy::new();
    let service = tower::service_fn(|_: Request<String>| async {
        Ok::<_, std::io::Error>(Response::new(()))
    });
    let breaker = Arc::new(CircuitBreaker::adaptive());
    throttled(&breaker);
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).with_breaker(Arc::clone(&breaker)))
        .service(service);
    let refused = client.oneshot(Request::new(String::new())).await;
    assert!(matches!(refused, Err(BreakerError::Open(_))));

    let registry = Arc::new(Registry::new(16, |_: &str| {
        Upstream::new().with_breaker(CircuitBreaker::adaptive())
    }));
    throttled(registry.get("down.example:80").breaker().unwrap());
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).per_authority(Arc::clone(&registry)))
        .service(service);
    let get = |url: &str| Request::get(url).body(String::new()).unwrap();
    let refused = client.clone().oneshot(get("http://down.example/")).await;
    assert!(matches!(refused, Err(BreakerError::Open(_))));
    let other = client.oneshot(get("http://up.example/")).await;
    assert_eq!(
        other.unwrap().status(),
        200,
        "its own throttle lets it through"
    );
}

/// An operator's controls work on it as on any breaker, and `reset` gives
/// back a throttle, not a plain breaker.
#[tokio::test(start_paused = true)]
async fn force_open_and_reset_keep_it_a_throttle() {
    let breaker = CircuitBreaker::adaptive();
    breaker.force_open();
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(breaker.refusal_probability(), 1.0);
    assert!(breaker.acquire().is_err());
    breaker.reset();
    assert_eq!(breaker.state(), CircuitState::Closed);
    // A plain breaker would open after ten failures in a row.
    for _ in 0..50 {
        if let Ok(permit) = breaker.acquire() {
            permit.record(false);
        }
    }
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert!(breaker.refusal_probability() > 0.9);
}
