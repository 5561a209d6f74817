//! Signatures that compile without `#[retry]` compile with it, and each
//! attempt sees the arguments as the README says: a parameter configured out
//! is not named, a rule may capture a by-value argument, and a by-value
//! `mut` argument is restored from the caller's value when its type is
//! `Clone` and carried across attempts when it is not (issue 17, item 1).
#![deny(warnings, clippy::pedantic)]

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;

fn is_transient(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::TimedOut
}

fn timed_out() -> io::Error {
    io::ErrorKind::TimedOut.into()
}

fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

/// A parameter configured out does not exist: naming it would be E0425.
#[retry(max = 3, base = "1ms")]
async fn configured_out(
    #[cfg(any())] never: u32,
    #[cfg(test)] present: &AtomicU32,
) -> io::Result<u32> {
    if present.fetch_add(1, Ordering::Relaxed) < 2 {
        return Err(timed_out());
    }
    Ok(present.load(Ordering::Relaxed))
}

#[retry(max = 3, base = "1ms")]
fn configured_out_blocking(#[cfg(any())] mut never: Vec<u8>, calls: &AtomicU32) -> io::Result<u32> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_parameter_configured_out_is_not_named() {
    let calls = AtomicU32::new(0);
    assert_eq!(configured_out(&calls).await.unwrap(), 3);
    let calls = AtomicU32::new(0);
    assert!(configured_out_blocking(&calls).is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

/// A `#[cfg]` written through `#[cfg_attr]` configures the parameter out
/// too: by value, by value `mut` (restored or carried), and in a pattern.
#[retry(max = 3, base = "1ms")]
async fn configured_out_by_cfg_attr(
    #[cfg_attr(all(), cfg(any()))] never: u32,
    #[cfg_attr(all(), allow(unused_mut), cfg_attr(all(), cfg(any())))] mut kept: Vec<u8>,
    #[cfg_attr(any(), cfg(any()))] mut present: Vec<u8>,
    #[cfg_attr(all(), cfg(any()))] (left, right): (u8, u8),
    calls: &AtomicU32,
) -> io::Result<usize> {
    present.push(1);
    calls.fetch_add(1, Ordering::Relaxed);
    Err(io::Error::other(present.len().to_string()))
}

#[retry(max = 3, base = "1ms")]
fn configured_out_by_cfg_attr_blocking(
    #[cfg_attr(all(), cfg(any()))] mut never: Vec<u8>,
    calls: &AtomicU32,
) -> io::Result<u32> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_parameter_configured_out_by_cfg_attr_is_not_named() {
    let calls = AtomicU32::new(0);
    let error = configured_out_by_cfg_attr(Vec::new(), &calls)
        .await
        .unwrap_err();
    // `present` was restored before each retry.
    assert_eq!(error.to_string(), "1");
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    let calls = AtomicU32::new(0);
    assert!(configured_out_by_cfg_attr_blocking(&calls).is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

/// The rule captures `expected`, which every attempt borrows too.
#[retry(max = 4, base = "1ms", on = |e: &io::Error| e.kind() == expected)]
async fn expecting(expected: io::ErrorKind, calls: &AtomicU32) -> io::Result<()> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_rule_closure_may_capture_a_by_value_argument() {
    let calls = AtomicU32::new(0);
    assert!(expecting(io::ErrorKind::TimedOut, &calls).await.is_err());
    assert_eq!(
        calls.load(Ordering::Relaxed),
        4,
        "retried: the kind matches"
    );
    let calls = AtomicU32::new(0);
    assert!(expecting(io::ErrorKind::NotFound, &calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 1, "not retried");
}

/// A rule that names a by-value argument borrows it, with `hedge` as
/// without: the body still uses it.
#[retry(max = 3, base = "1ms", hedge = "10ms", on = when)]
async fn hedged_when<W>(when: W, calls: &AtomicU32) -> io::Result<()>
where
    W: Fn(&io::Error) -> bool + Sync,
{
    calls.fetch_add(1, Ordering::Relaxed);
    let error = timed_out();
    assert!(when(&error));
    Err(error)
}

#[tokio::test(start_paused = true)]
async fn a_hedged_rule_may_name_a_by_value_argument() {
    let calls = AtomicU32::new(0);
    assert!(assert_send(hedged_when(is_transient, &calls))
        .await
        .is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

/// The rule is a generic argument of the function, named as it is.
#[retry(max = 3, base = "1ms", on = when)]
async fn retried_when<W>(when: W, calls: &AtomicU32) -> io::Result<()>
where
    W: Fn(&io::Error) -> bool,
{
    calls.fetch_add(1, Ordering::Relaxed);
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_rule_may_be_a_generic_argument() {
    let calls = AtomicU32::new(0);
    assert!(retried_when(is_transient, &calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    let calls = AtomicU32::new(0);
    assert!(retried_when(|_: &io::Error| false, &calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

/// The rule reads a flag the caller passed.
#[retry(max = 3, base = "1ms", on = |e| idempotent && is_transient(e))]
async fn send(idempotent: bool, calls: &AtomicU32) -> io::Result<bool> {
    calls.fetch_add(1, Ordering::Relaxed);
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_rule_may_read_a_flag_the_body_reads() {
    let calls = AtomicU32::new(0);
    assert!(send(true, &calls).await.is_err());
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    let calls = AtomicU32::new(0);
    assert!(send(false, &calls).await.is_err());
    assert_eq!(
        calls.load(Ordering::Relaxed),
        1,
        "a request that may not be repeated"
    );
}

/// `F` is only `FnMut`: not `Clone`, so it is carried across attempts, and
/// its state (here, the calls it counts) with it.
#[retry(max = 4, base = "1ms", on = is_transient)]
async fn run<F, Fut>(mut operation: F) -> io::Result<u32>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = io::Result<u32>>,
{
    operation().await
}

#[tokio::test(start_paused = true)]
async fn a_mut_argument_that_is_not_clone_is_carried_across_attempts() {
    let mut calls = 0;
    let outcome = run(|| {
        calls += 1;
        let outcome = if calls < 3 {
            Err(timed_out())
        } else {
            Ok(calls)
        };
        async move { outcome }
    })
    .await;
    assert_eq!(outcome.unwrap(), 3);
    assert_eq!(calls, 3);
}

#[retry(max = 4, base = "1ms")]
fn run_blocking<F: FnMut() -> io::Result<u32>>(mut operation: F) -> io::Result<u32> {
    operation()
}

#[test]
fn a_plain_fn_carries_a_mut_argument_that_is_not_clone() {
    let mut calls = 0;
    let outcome = run_blocking(|| {
        calls += 1;
        if calls < 4 {
            Err(timed_out())
        } else {
            Ok(calls)
        }
    });
    assert_eq!(outcome.unwrap(), 4);
}

/// `u32` is `Clone`: each attempt starts from the caller's value.
#[retry(max = 3, base = "1ms")]
async fn count_from(mut start: u32, seen: &std::sync::Mutex<Vec<u32>>) -> io::Result<()> {
    start += 1;
    seen.lock().unwrap().push(start);
    Err(timed_out())
}

/// A generic `T` without a `Clone` bound is carried, even when the caller's
/// type is `Clone`: what is cloned is decided by the bounds in scope.
#[retry(max = 3, base = "1ms")]
async fn push_into<T: Default>(
    mut items: Vec<T>,
    lengths: &std::sync::Mutex<Vec<usize>>,
) -> io::Result<()> {
    items.push(T::default());
    lengths.lock().unwrap().push(items.len());
    Err(timed_out())
}

/// With a `Clone` bound, the same function starts each attempt afresh.
#[retry(max = 3, base = "1ms")]
async fn push_into_clone<T: Default + Clone>(
    mut items: Vec<T>,
    lengths: &std::sync::Mutex<Vec<usize>>,
) -> io::Result<()> {
    items.push(T::default());
    lengths.lock().unwrap().push(items.len());
    Err(timed_out())
}

#[tokio::test(start_paused = true)]
async fn a_clone_argument_starts_each_attempt_from_the_callers_value() {
    let seen = std::sync::Mutex::new(Vec::new());
    assert!(count_from(10, &seen).await.is_err());
    assert_eq!(*seen.lock().unwrap(), [11, 11, 11]);

    let lengths = std::sync::Mutex::new(Vec::new());
    assert!(push_into_clone(vec![0_u8], &lengths).await.is_err());
    assert_eq!(*lengths.lock().unwrap(), [2, 2, 2]);

    // `Vec<T>` is `Clone` only if `T: Clone`, which is not in scope.
    let lengths = std::sync::Mutex::new(Vec::new());
    assert!(push_into(vec![0_u8], &lengths).await.is_err());
    assert_eq!(*lengths.lock().unwrap(), [2, 3, 4]);
}

/// A receiver is `Send` but not `Sync` and not `Clone`: carried, and the
/// future stays `Send`.
#[retry(max = 3, base = "1ms")]
async fn drain(
    mut receiver: tokio::sync::mpsc::Receiver<u32>,
    calls: &AtomicU32,
) -> io::Result<u32> {
    let value = receiver.recv().await.ok_or_else(timed_out)?;
    if calls.fetch_add(1, Ordering::Relaxed) < 2 {
        return Err(timed_out());
    }
    Ok(value)
}

#[tokio::test(start_paused = true)]
async fn carried_and_captured_arguments_keep_the_future_send() {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    for value in [1, 2, 3] {
        sender.send(value).await.unwrap();
    }
    let calls = AtomicU32::new(0);
    let value = assert_send(drain(receiver, &calls)).await.unwrap();
    assert_eq!(value, 3, "each attempt took the next value");

    let calls = AtomicU32::new(0);
    assert!(assert_send(send(true, &calls)).await.is_err());
    assert!(assert_send(expecting(io::ErrorKind::TimedOut, &calls))
        .await
        .is_err());
    assert!(assert_send(retried_when(is_transient, &calls))
        .await
        .is_err());
    let outcome = assert_send(run(|| async { Ok::<_, io::Error>(7) })).await;
    assert_eq!(outcome.unwrap(), 7);
}
