//! Counting the calls that reach a dependency, for the tests of the nesting
//! rule: the shapes are told apart by how many calls each makes.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

/// Counts one call; the count so far, this one included.
pub fn count(calls: &AtomicU32) -> u32 {
    calls.fetch_add(1, Ordering::SeqCst) + 1
}

/// The calls counted.
pub fn calls(counter: &AtomicU32) -> u32 {
    counter.load(Ordering::SeqCst)
}

/// A handler's own call to a dependency it does not retry itself: it waits
/// (a real request would), then fails with the default error.
pub async fn own_call<E: Default>(calls: &AtomicU32) -> Result<(), E> {
    tokio::task::yield_now().await;
    count(calls);
    Err(E::default())
}
