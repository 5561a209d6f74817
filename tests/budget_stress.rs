//! A budget shared by many threads: the count never leaves
//! `[0, max_tokens]` and no update is lost, however the threads interleave.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;

use retry_runtime::RetryBudget;

const THREADS: usize = 8;
const OPS: usize = 20_000;

/// Runs `work` on `THREADS` threads started together while another thread
/// reads the count without pause, checking it stays within bounds.
fn hammer(budget: &RetryBudget, work: impl Fn(usize) + Sync) {
    let start = Barrier::new(THREADS + 1);
    let done = AtomicBool::new(false);
    thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            start.wait();
            loop {
                // Read once more after the workers finish, so the last
                // state is checked too.
                let finished = done.load(Ordering::Acquire);
                let tokens = budget.tokens();
                assert!(
                    (0.0..=budget.max_tokens()).contains(&tokens),
                    "count left its bounds: {tokens}"
                );
                if finished {
                    break;
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (start, work) = (&start, &work);
                scope.spawn(move || {
                    start.wait();
                    work(t);
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        done.store(true, Ordering::Release);
        watcher.join().unwrap();
    });
}

#[test]
fn concurrent_failures_and_successes_lose_no_update() {
    // Large enough that neither bound is reached: every update must show.
    let max = u32::try_from(THREADS * OPS * 4).unwrap();
    let budget = RetryBudget::new(max, 1.0);
    // Everyone fails OPS times: exactly THREADS * OPS tokens are taken.
    hammer(&budget, |_| {
        for _ in 0..OPS {
            budget.record_failure();
        }
    });
    let taken = THREADS * OPS;
    assert_eq!(budget.tokens(), f64::from(max) - taken as f64);
    // Failures and successes interleaved within each thread cancel out.
    hammer(&budget, |t| {
        for i in 0..OPS {
            if (i + t) % 2 == 0 {
                budget.record_failure();
            } else {
                budget.record_success();
            }
        }
    });
    assert_eq!(budget.tokens(), f64::from(max) - taken as f64);
    // Successes give every token back, and not one more.
    hammer(&budget, |_| {
        for _ in 0..OPS * 2 {
            budget.record_success();
        }
    });
    assert_eq!(budget.tokens(), f64::from(max));
}

#[test]
fn a_hammered_budget_stays_within_zero_and_the_maximum() {
    let budget = RetryBudget::new(50, 0.7);
    // Far more failures than tokens, racing successes at both bounds.
    hammer(&budget, |t| {
        for i in 0..OPS {
            if t % 2 == 0 || i % 3 == 0 {
                budget.record_failure();
            } else {
                budget.record_success();
            }
        }
    });
    let tokens = budget.tokens();
    assert!((0.0..=50.0).contains(&tokens), "{tokens}");
    hammer(&budget, |_| {
        for _ in 0..OPS {
            budget.record_failure();
        }
    });
    assert_eq!(budget.tokens(), 0.0);
    assert!(!budget.record_failure());
    hammer(&budget, |_| {
        for _ in 0..OPS {
            budget.record_success();
        }
    });
    assert_eq!(budget.tokens(), 50.0);
}

#[test]
fn racing_failures_allow_exactly_the_retries_the_count_allows() {
    // From 1000 tokens, retries are allowed while the count after the
    // failure stays above 500: exactly 499 of the failures, whoever makes them.
    let budget = RetryBudget::new(1000, 0.0);
    let allowed = std::sync::atomic::AtomicUsize::new(0);
    hammer(&budget, |_| {
        for _ in 0..100 {
            if budget.record_failure() {
                allowed.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert_eq!(allowed.into_inner(), 499);
    assert_eq!(budget.tokens(), 1000.0 - (THREADS * 100) as f64);
}
