//! A model of `RetryBudget` under loom: every interleaving of a few threads'
//! failures and successes, each checked against the rule run in some
//! sequential order (linearizability: no update lost, no retry allowed that
//! no order allows), with the count within `[0, max_tokens]` throughout.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p retry-runtime --test loom_budget`
//! (about 30 s from a cold build, the model itself 3 s; `--release` builds
//! for 90 s and runs it in 1 s).
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use retry_runtime::RetryBudget;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Failure,
    Success,
}

/// What each thread's ops returned (whether a retry is allowed; `None` for
/// a success), and the count at the end, in thousandths.
type Outcome = (Vec<Vec<Option<bool>>>, u64);

/// The rule, applied in `order` (thread, index into its ops).
fn sequential(max: u64, ratio: u64, threads: &[Vec<Op>], order: &[(usize, usize)]) -> Outcome {
    let mut count = max;
    let mut returns: Vec<Vec<Option<bool>>> =
        threads.iter().map(|ops| vec![None; ops.len()]).collect();
    for &(t, i) in order {
        match threads[t][i] {
            Op::Failure => {
                count = count.saturating_sub(1000);
                returns[t][i] = Some(count > max / 2);
            }
            Op::Success => count = (count + ratio).min(max),
        }
    }
    (returns, count)
}

/// Every merge of the threads' op sequences that keeps each thread's order.
fn merges(threads: &[Vec<Op>]) -> Vec<Vec<(usize, usize)>> {
    fn go(
        threads: &[Vec<Op>],
        next: &mut Vec<usize>,
        path: &mut Vec<(usize, usize)>,
        out: &mut Vec<Vec<(usize, usize)>>,
    ) {
        let mut done = true;
        for t in 0..threads.len() {
            if next[t] < threads[t].len() {
                done = false;
                path.push((t, next[t]));
                next[t] += 1;
                go(threads, next, path, out);
                next[t] -= 1;
                path.pop();
            }
        }
        if done {
            out.push(path.clone());
        }
    }
    let mut out = Vec::new();
    go(
        threads,
        &mut vec![0; threads.len()],
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// Checks every interleaving of `threads` with at most `preemptions`
/// preemptions (`None`: all of them).
fn check(max_tokens: u32, ratio: f32, preemptions: Option<usize>, threads: Vec<Vec<Op>>) {
    let max = u64::from(max_tokens) * 1000;
    let ratio_milli = (f64::from(ratio) * 1000.0).round() as u64;
    let allowed: Vec<Outcome> = merges(&threads)
        .iter()
        .map(|order| sequential(max, ratio_milli, &threads, order))
        .collect();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = preemptions;
    model.check(move || {
        let budget = Arc::new(RetryBudget::new(max_tokens, ratio));
        let handles: Vec<_> = threads
            .clone()
            .into_iter()
            .map(|ops| {
                let budget = Arc::clone(&budget);
                thread::spawn(move || {
                    ops.iter()
                        .map(|op| {
                            let returned = match op {
                                Op::Failure => Some(budget.record_failure()),
                                Op::Success => {
                                    budget.record_success();
                                    None
                                }
                            };
                            let tokens = budget.tokens();
                            assert!((0.0..=budget.max_tokens()).contains(&tokens), "{tokens}");
                            returned
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let returns: Vec<Vec<Option<bool>>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let count = (budget.tokens() * 1000.0).round() as u64;
        assert!(
            allowed.iter().any(|(r, c)| *r == returns && *c == count),
            "no sequential order gives {returns:?} and {count}"
        );
    });
}

#[test]
fn concurrent_failures_at_the_threshold_allow_exactly_the_retries_a_sequence_would() {
    // 4 tokens: the first failure leaves 3 (retry), the second 2 (no retry).
    check(
        4,
        0.5,
        None,
        vec![vec![Op::Failure], vec![Op::Failure, Op::Failure]],
    );
}

#[test]
fn successes_racing_failures_lose_no_update_and_stay_below_the_maximum() {
    check(
        3,
        0.6,
        None,
        vec![
            vec![Op::Failure, Op::Success],
            vec![Op::Success, Op::Failure],
        ],
    );
}

#[test]
fn an_empty_budget_never_goes_below_zero() {
    check(
        1,
        1.0,
        None,
        vec![
            vec![Op::Failure, Op::Failure],
            vec![Op::Failure, Op::Success],
        ],
    );
}

#[test]
fn three_threads_at_the_threshold_with_up_to_two_preemptions() {
    // Three threads explode the exhaustive search; two preemptions cover
    // the races of one CAS loop against two others.
    check(
        3,
        1.0,
        Some(2),
        vec![
            vec![Op::Failure],
            vec![Op::Failure],
            vec![Op::Success, Op::Failure],
        ],
    );
}
