//! Each attempt starts from the arguments as the caller passed them
//! (DESIGN 4.13): a by-value `mut` argument is cloned for each attempt, so
//! what a failed attempt changed is not seen by the next; nothing else is
//! cloned.

use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;

#[derive(Debug, PartialEq)]
struct Unavailable;

/// Counts its clones, to prove which arguments are copied.
#[derive(Debug)]
struct Batch {
    items: Vec<u32>,
    clones: &'static AtomicU32,
}

impl Clone for Batch {
    fn clone(&self) -> Self {
        self.clones.fetch_add(1, Ordering::Relaxed);
        Batch {
            items: self.items.clone(),
            clones: self.clones,
        }
    }
}

/// Drains the batch, then fails the first time: the retry must see the
/// whole batch again, or it "succeeds" having sent nothing.
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn send_all(mut batch: Batch, attempts: &AtomicU32) -> Result<Vec<u32>, Unavailable> {
    let sent = std::mem::take(&mut batch.items);
    if attempts.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(Unavailable);
    }
    Ok(sent)
}

#[tokio::test(start_paused = true)]
async fn a_batch_drained_by_a_failed_attempt_is_whole_on_the_retry() {
    static CLONES: AtomicU32 = AtomicU32::new(0);
    let attempts = AtomicU32::new(0);
    let batch = Batch {
        items: vec![1, 2, 3],
        clones: &CLONES,
    };
    assert_eq!(send_all(batch, &attempts).await, Ok(vec![1, 2, 3]));
    assert_eq!(attempts.load(Ordering::Relaxed), 2);
    assert_eq!(CLONES.load(Ordering::Relaxed), 2, "one copy per attempt");
}

#[retry(max = 3, base = "1ms", jitter = "none")]
fn send_all_blocking(mut batch: Vec<u32>, attempts: &AtomicU32) -> Result<Vec<u32>, Unavailable> {
    let sent = std::mem::take(&mut batch);
    if attempts.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(Unavailable);
    }
    Ok(sent)
}

#[test]
fn a_plain_fn_gets_a_fresh_copy_too() {
    let attempts = AtomicU32::new(0);
    assert_eq!(send_all_blocking(vec![4, 5], &attempts), Ok(vec![4, 5]));
    assert_eq!(attempts.load(Ordering::Relaxed), 2);
}

/// Without `mut`, the argument is only borrowed: never cloned.
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn count_items(batch: Batch, attempts: &AtomicU32) -> Result<usize, Unavailable> {
    if attempts.fetch_add(1, Ordering::Relaxed) < 2 {
        return Err(Unavailable);
    }
    Ok(batch.items.len())
}

#[tokio::test(start_paused = true)]
async fn an_argument_without_mut_is_never_cloned() {
    static CLONES: AtomicU32 = AtomicU32::new(0);
    let attempts = AtomicU32::new(0);
    let batch = Batch {
        items: vec![1, 2],
        clones: &CLONES,
    };
    assert_eq!(count_items(batch, &attempts).await, Ok(2));
    assert_eq!(CLONES.load(Ordering::Relaxed), 0);
}

/// A `mut` reference argument is reborrowed for each attempt, not cloned:
/// what it points to is the caller's, and changes to it are meant to stay.
#[retry(max = 2, base = "1ms", jitter = "none")]
async fn push(mut log: &mut Vec<u32>) -> Result<usize, Unavailable> {
    log.push(1);
    let _ = &mut log;
    if log.len() < 2 {
        return Err(Unavailable);
    }
    Ok(log.len())
}

#[tokio::test(start_paused = true)]
async fn a_mut_reference_argument_keeps_pointing_at_the_callers_value() {
    let mut log = Vec::new();
    assert_eq!(push(&mut log).await, Ok(2));
    assert_eq!(log, [1, 1]);
}

pub struct Wrapper(Vec<u32>);

/// A `mut` binding inside a pattern is copied for each attempt too.
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn send_wrapped(
    Wrapper(mut items): Wrapper,
    attempts: &AtomicU32,
) -> Result<Vec<u32>, Unavailable> {
    let sent = std::mem::take(&mut items);
    if attempts.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(Unavailable);
    }
    Ok(sent)
}

#[tokio::test(start_paused = true)]
async fn a_mut_binding_in_a_pattern_is_whole_on_the_retry() {
    let attempts = AtomicU32::new(0);
    assert_eq!(
        send_wrapped(Wrapper(vec![7, 8]), &attempts).await,
        Ok(vec![7, 8])
    );
}
