//! `mut self` by value is a by-value `mut` argument like any other: when
//! `Self: Clone` each attempt starts from the caller's value (DESIGN.md
//! section 4, points 1 and 13), and when it is not `Clone` it is carried
//! from one attempt to the next.
#![cfg(feature = "macros")]

use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;

#[derive(Debug, PartialEq)]
struct Busy;

#[derive(Clone, Debug, PartialEq)]
struct Batch {
    items: Vec<u32>,
}

static PLAIN_CALLS: AtomicU32 = AtomicU32::new(0);
static ASYNC_CALLS: AtomicU32 = AtomicU32::new(0);

impl Batch {
    /// Drains its items, then fails on the first two attempts.
    #[retry(max = 3, base = "1ms")]
    fn drain_plain(mut self) -> Result<usize, Busy> {
        let mut sent = 0;
        while self.items.pop().is_some() {
            sent += 1;
        }
        if PLAIN_CALLS.fetch_add(1, Ordering::Relaxed) < 2 {
            return Err(Busy);
        }
        Ok(sent)
    }

    #[retry(max = 3, base = "1ms")]
    async fn drain_async(mut self) -> Result<usize, Busy> {
        let mut sent = 0;
        while self.items.pop().is_some() {
            sent += 1;
            tokio::task::yield_now().await;
        }
        if ASYNC_CALLS.fetch_add(1, Ordering::Relaxed) < 2 {
            return Err(Busy);
        }
        Ok(sent)
    }
}

#[test]
fn plain_mut_self_starts_each_attempt_from_the_callers_value() {
    let batch = Batch {
        items: vec![1, 2, 3],
    };
    assert_eq!(batch.drain_plain(), Ok(3));
    assert_eq!(PLAIN_CALLS.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn async_mut_self_starts_each_attempt_from_the_callers_value() {
    let batch = Batch {
        items: vec![1, 2, 3],
    };
    assert_eq!(batch.drain_async().await, Ok(3));
    assert_eq!(ASYNC_CALLS.load(Ordering::Relaxed), 3);
}

/// Not `Clone`: carried across attempts, as a `&mut self` would be.
struct Counter(u32);

impl Counter {
    #[retry(max = 3, base = "1ms")]
    fn bump_plain(mut self) -> Result<u32, Busy> {
        self.0 += 1;
        if self.0 < 3 {
            return Err(Busy);
        }
        Ok(self.0)
    }

    #[retry(max = 3, base = "1ms")]
    async fn bump_async(mut self) -> Result<u32, Busy> {
        self.0 += 1;
        if self.0 < 3 {
            return Err(Busy);
        }
        Ok(self.0)
    }
}

#[tokio::test(start_paused = true)]
async fn mut_self_not_clone_is_carried() {
    assert_eq!(Counter(0).bump_plain(), Ok(3));
    assert_eq!(Counter(0).bump_async().await, Ok(3));
}

/// A trait's default method: `Self` is `Clone` only where the trait says so.
trait Drain: Clone + Sized {
    fn take_one(&mut self) -> Option<u32>;

    #[retry(max = 2, base = "1ms")]
    fn drain_all(mut self) -> Result<u32, Busy> {
        let mut sum = 0;
        while let Some(item) = self.take_one() {
            sum += item;
        }
        if retry_runtime::current_attempt().is_some_and(|attempt| attempt.attempt() == 1) {
            return Err(Busy);
        }
        Ok(sum)
    }
}

impl Drain for Batch {
    fn take_one(&mut self) -> Option<u32> {
        self.items.pop()
    }
}

#[test]
fn trait_default_mut_self_starts_from_the_callers_value() {
    let batch = Batch {
        items: vec![1, 2, 3],
    };
    assert_eq!(batch.drain_all(), Ok(6));
}
