//! `--only tail`: the tail at scale ("The Tail at Scale", Dean and Barroso,
//! 2013), through `#[retry(hedge = "p95")]`.
//!
//! Each request fans out to 100 leaves and completes when all have
//! answered. A leaf answers in a uniform 5 to 15 ms, except that 1% of leaf
//! requests take 1,000 ms, so 1 - 0.99^100 = 63.4% of requests wait for a
//! slow leaf. Hedged, a leaf call sends another copy when one has been
//! outstanding past the 95th percentile of recent leaf latencies (up to
//! `max = 3` copies), and the first answer wins. 10,000 requests, 100 at a
//! time, on a paused tokio clock: every figure is the real runtime's.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::rc::Rc;
use std::time::Duration;

use retry_runtime::retry;
use tokio::time::{sleep, Instant};

use crate::scenarios::Network;

/// Leaves per request.
pub const FANOUT: usize = 100;
/// Requests per run.
pub const REQUESTS: usize = 10_000;
/// Requests in flight at once.
const BATCH: usize = 100;
/// The share of leaf requests that are slow, and how slow.
const SLOW_SHARE: f64 = 0.01;
const SLOW: Duration = Duration::from_millis(1000);

/// What one run measured.
pub struct Tail {
    /// `"none"` or `"p95"`.
    pub hedge: &'static str,
    /// Each request's latency in ms, sorted.
    pub latencies: Vec<f64>,
    /// The share of requests that waited for a slow leaf: one of whose
    /// leaves answered with a slow copy.
    pub slow_fraction: f64,
    /// Leaf requests sent over leaf requests needed (one per leaf), minus 1.
    pub extra_load: f64,
}

impl Tail {
    /// The `p`-th percentile of request latency (nearest rank), in ms.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let n = self.latencies.len();
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
        self.latencies[rank - 1]
    }

    /// The `--json` line.
    pub fn json(&self) -> String {
        format!(
            r#"{{"scenario":"tail","hedge":"{}","fanout":{FANOUT},"slow_fraction":{:.4},"p50_ms":{},"p99_ms":{},"p999_ms":{},"extra_load":{:.4}}}"#,
            self.hedge,
            self.slow_fraction,
            self.percentile(50.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.extra_load,
        )
    }

    /// The line of the text table.
    pub fn text(&self) -> String {
        format!(
            "tail       hedge {:<4} fanout {FANOUT}: {:>5.1}% of requests wait for a slow leaf, p50 {:>4} ms, p99 {:>4} ms, p99.9 {:>4} ms, {:>4.1}% more leaf requests",
            self.hedge,
            self.slow_fraction * 100.0,
            self.percentile(50.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.extra_load * 100.0,
        )
    }
}

/// The leaves, on the simulation's one thread: their latencies, drawn in
/// the order copies are sent, and the count of copies sent.
struct Leaves {
    network: RefCell<Network>,
    sent: Cell<u64>,
}

impl Leaves {
    /// One copy of a leaf request: whether its answer was a slow one.
    async fn answer(&self) -> Result<bool, Infallible> {
        self.sent.set(self.sent.get() + 1);
        let (draw, within) = {
            let mut network = self.network.borrow_mut();
            (network.unit(), network.unit())
        };
        let took = if draw < SLOW_SHARE {
            SLOW
        } else {
            Duration::from_secs_f64(0.005 + 0.010 * within)
        };
        sleep(took).await;
        Ok(took == SLOW)
    }
}

/// A leaf call without hedging (nothing fails, so one attempt).
#[retry(max = 3, base = "15ms")]
async fn leaf(leaves: &Leaves) -> Result<bool, Infallible> {
    leaves.answer().await
}

/// A leaf call hedged at the 95th percentile of recent leaf latencies, and
/// at `base` until 100 leaf calls have answered.
#[retry(max = 3, base = "15ms", hedge = "p95")]
async fn hedged_leaf(leaves: &Leaves) -> Result<bool, Infallible> {
    leaves.answer().await
}

/// One request: its leaves side by side, each a task of the simulation's
/// (the runtime spawns nothing). Its latency, and whether it waited for a
/// slow answer.
async fn request(leaves: Rc<Leaves>, hedged: bool) -> (Duration, bool) {
    let started = Instant::now();
    let calls: Vec<_> = (0..FANOUT)
        .map(|_| {
            let leaves = leaves.clone();
            tokio::task::spawn_local(async move {
                let answer = if hedged {
                    hedged_leaf(&leaves).await
                } else {
                    leaf(&leaves).await
                };
                answer.unwrap_or(false)
            })
        })
        .collect();
    let mut slow = false;
    for call in calls {
        slow |= call.await.unwrap_or(false);
    }
    (started.elapsed(), slow)
}

/// [`REQUESTS`] requests, [`BATCH`] at a time, on a paused clock.
pub fn tail(hedged: bool, seed: u64) -> Tail {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let leaves = Rc::new(Leaves {
        network: RefCell::new(Network::seed(seed)),
        sent: Cell::new(0),
    });
    let mut latencies = Vec::with_capacity(REQUESTS);
    let mut slow = 0usize;
    tokio::task::LocalSet::new().block_on(&runtime, async {
        for _ in 0..REQUESTS / BATCH {
            let batch: Vec<_> = (0..BATCH)
                .map(|_| tokio::task::spawn_local(request(leaves.clone(), hedged)))
                .collect();
            for request in batch {
                let (took, waited) = request.await.unwrap_or_default();
                latencies.push(took.as_secs_f64() * 1000.0);
                slow += usize::from(waited);
            }
        }
    });
    latencies.sort_by(f64::total_cmp);
    #[allow(clippy::cast_precision_loss)]
    let (needed, sent, requests) = (
        (REQUESTS * FANOUT) as f64,
        leaves.sent.get() as f64,
        REQUESTS as f64,
    );
    #[allow(clippy::cast_precision_loss)]
    Tail {
        hedge: if hedged { "p95" } else { "none" },
        latencies,
        slow_fraction: slow as f64 / requests,
        extra_load: sent / needed - 1.0,
    }
}
