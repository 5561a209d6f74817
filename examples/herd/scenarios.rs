//! The scenarios with a fixed crowd of clients: `burst`, `waves`,
//! `contention` and `outage`.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use retry_runtime::{retry, CircuitBreaker, Jitter, Policy, RetryBudget, TimedOut};
use tokio::time::{sleep, Instant};

use crate::simulation::{
    budgeted_client, client, guarded_client, join_all, policy, simulate, Guard, Service,
};

/// 1000 clients fail at t = 0 and retry once with a 2 s ceiling.
///
/// For decorrelated jitter the first retry's ceiling is `3 * base`, so base
/// is a third of 2 s; for the others base is the ceiling itself.
pub fn burst(jitter: Jitter) -> Vec<Duration> {
    let base = match jitter {
        Jitter::Decorrelated => Duration::from_secs(2) / 3,
        _ => Duration::from_secs(2),
    };
    let policy = policy(jitter, 2, base, Duration::from_secs(2));
    simulate(1, async {
        let service = Service::new(Duration::ZERO);
        join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
        service.retries()
    })
}

/// 1000 clients fail at t = 0 and make 3 retries each, every attempt failing.
pub fn waves(jitter: Jitter) -> Vec<Duration> {
    let policy = policy(
        jitter,
        4,
        Duration::from_millis(100),
        Duration::from_secs(2),
    );
    simulate(2, async {
        let service = Service::new(Duration::from_secs(3600));
        join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
        service.retries()
    })
}

/// The network's randomness: xoshiro256++ seeded by SplitMix64, the
/// generator and seeding of `rand`'s `SmallRng` on 64-bit targets, so the
/// figures are those `rand` gave, without the dependency.
pub struct Network([u64; 4]);

impl Network {
    pub fn seed(mut state: u64) -> Network {
        let mut words = [0u64; 4];
        for word in &mut words {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *word = z ^ (z >> 31);
        }
        Network(words)
    }

    fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1): the top 53 bits, scaled.
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let top = (self.next() >> 11) as f64;
        top / (1u64 << 53) as f64
    }
}

/// The row every contending client wants to write once.
pub struct Row {
    version: Cell<u64>,
    writes: Cell<u64>,
    network: RefCell<Network>,
}

impl Row {
    /// One message's network delay: |Normal(10 ms, 2 ms)| (Box-Muller).
    async fn message(&self) {
        let (u, v): (f64, f64) = {
            let mut rng = self.network.borrow_mut();
            (rng.unit(), rng.unit())
        };
        let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        sleep(Duration::from_secs_f64(
            (10.0 + 2.0 * normal).abs() / 1000.0,
        ))
        .await;
    }
}

#[derive(Debug)]
pub struct Conflict;

impl From<TimedOut> for Conflict {
    fn from(_: TimedOut) -> Self {
        Conflict
    }
}

/// Reads the row's version, then writes it if nobody wrote in between.
#[retry(policy = policy)]
pub async fn write_once(policy: &Policy, row: &Row) -> Result<(), Conflict> {
    row.message().await; // read request
    let seen = row.version.get();
    row.message().await; // read response
    row.message().await; // conditional write request
    row.writes.set(row.writes.get() + 1);
    let written = row.version.get() == seen;
    if written {
        row.version.set(seen + 1);
    }
    row.message().await; // write response
    if written {
        Ok(())
    } else {
        Err(Conflict)
    }
}

/// Mean writes and mean time until the last client succeeds, over `runs`.
pub fn contention(jitter: Jitter, clients: u32, runs: u32) -> (f64, f64) {
    let policy = policy(
        jitter,
        u32::MAX,
        Duration::from_millis(10),
        Duration::from_secs(2),
    );
    let mut writes = 0.0;
    let mut time = 0.0;
    for run in 0..runs {
        let seed = u64::from(run) << 32 | u64::from(clients);
        let (run_writes, run_time) = simulate(seed, async {
            let start = Instant::now();
            let row = Row {
                version: Cell::new(0),
                writes: Cell::new(0),
                network: RefCell::new(Network::seed(seed)),
            };
            let results = join_all((0..clients).map(|_| write_once(&policy, &row)).collect()).await;
            assert!(
                results.iter().all(Result::is_ok),
                "every client writes eventually"
            );
            (row.writes.get(), start.elapsed())
        });
        #[allow(clippy::cast_precision_loss)]
        {
            writes += run_writes as f64;
        }
        time += run_time.as_secs_f64() * 1000.0;
    }
    (writes / f64::from(runs), time / f64::from(runs))
}

/// 1000 clients, `max = 4`, against a service down for 20 s: total calls.
pub fn outage(jitter: Jitter, guard: Guard) -> usize {
    let policy = policy(
        jitter,
        4,
        Duration::from_millis(100),
        Duration::from_secs(2),
    );
    simulate(3, async {
        let service = Service::new(Duration::from_secs(20));
        let budget = guard.budget().unwrap_or(RetryBudget::new(100, 0.1));
        let breaker = CircuitBreaker::new();
        match guard {
            Guard::None => {
                join_all((0..1000).map(|_| client(&policy, &service)).collect()).await;
            }
            Guard::Budget | Guard::Recommended => {
                join_all(
                    (0..1000)
                        .map(|_| budgeted_client(&policy, &budget, &service))
                        .collect(),
                )
                .await;
            }
            Guard::Breaker => {
                join_all(
                    (0..1000)
                        .map(|_| guarded_client(&policy, &breaker, &service))
                        .collect(),
                )
                .await;
            }
        }
        let calls = service.arrivals.borrow().len();
        calls
    })
}
