//! The closed circuit's successes without the clock (see `window.rs`): how
//! often the breaker reads the clock, and that the window still forgets on
//! time. On tokio's paused clock. Readings are counted per thread, and a
//! current-thread test runtime runs everything on the test's thread.

use core::cell::Cell;
use core::time::Duration;

use tokio::time::advance;

use super::word::{Word, COUNT_MAX, PAYLOAD_MASK};
use super::CircuitBreaker;
use crate::circuit::CircuitState;
use crate::ring::READ_EVERY;

thread_local! {
    static READINGS: Cell<u64> = const { Cell::new(0) };
}

/// Called by `now_ms` at every reading of the clock.
pub(super) fn count_reading() {
    READINGS.with(|readings| readings.set(readings.get().saturating_add(1)));
}

fn readings() -> u64 {
    READINGS.with(Cell::get)
}

/// `count` calls in a row, each with the same outcome.
fn record_many(breaker: &CircuitBreaker, count: u64, success: bool) {
    for _ in 0..count {
        record(breaker, success);
    }
}

fn record(breaker: &CircuitBreaker, success: bool) {
    breaker
        .acquire()
        .expect("the breaker lets the call through")
        .record(success);
}

/// Opens when half of at least four calls in a 10 s window failed, never on
/// a run of failures alone; open for exactly 1 s; one probe closes it.
const fn ratio_only() -> CircuitBreaker {
    CircuitBreaker::new()
        .with_window(Duration::from_secs(10))
        .with_min_calls(4)
        .with_failure_ratio(0.5)
        .with_consecutive_failures(0)
        .with_open_for(Duration::from_secs(1))
        .with_jitter(0.0)
        .with_close_after(1)
}

#[tokio::test(start_paused = true)]
async fn a_closed_circuits_successes_read_the_clock_only_to_roll_the_window() {
    let breaker = CircuitBreaker::new();
    let start = readings();
    let permit = breaker.acquire().unwrap();
    assert_eq!(readings(), start, "asking reads no clock while closed");
    permit.record(true);
    assert_eq!(readings(), start + 1, "the first call of a bucket reads it");
    for _ in 1..READ_EVERY {
        record(&breaker, true);
    }
    assert_eq!(readings(), start + 1, "the successes after it read nothing");
    record(&breaker, true);
    assert_eq!(
        readings(),
        start + 2,
        "until the bucket's READ_EVERYth call"
    );
    for _ in 1..READ_EVERY {
        record(&breaker, true);
    }
    assert_eq!(readings(), start + 2);
    record(&breaker, false);
    assert_eq!(readings(), start + 3, "a failure always reads it");
    record(&breaker, true);
    assert_eq!(readings(), start + 3, "the successes after it, nothing");
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn successes_alone_for_a_long_time_still_let_old_failures_go() {
    let breaker = ratio_only();
    // Three failed calls: one more failure would open the circuit.
    record_many(&breaker, 3, false);
    // Forty seconds of successes only, four a second, so no failure rolls
    // the window on; they read the clock once per READ_EVERY.
    let start = readings();
    for _ in 0..160 {
        advance(Duration::from_millis(250)).await;
        record(&breaker, true);
    }
    assert!(
        readings() - start <= 160 / READ_EVERY + 1,
        "{}",
        readings() - start
    );
    assert_eq!(breaker.state(), CircuitState::Closed);
    // A window later, neither the old failures nor the successes count:
    // three new failures are three calls, below the minimum (had the old
    // failures stayed, six of six calls would have failed).
    advance(Duration::from_secs(10)).await;
    record_many(&breaker, 3, false);
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn successes_right_before_failures_still_dilute_them() {
    let breaker = ratio_only();
    record_many(&breaker, 3, false);
    // Successes only, four a second, from 0.25 s to 40 s: those from 31 s
    // on (37 of them) finished in the window that ends at 40 s.
    for _ in 0..160 {
        advance(Duration::from_millis(250)).await;
        record(&breaker, true);
    }
    let mut failures = 0;
    while breaker.state() == CircuitState::Closed && failures < 100 {
        record(&breaker, false);
        failures += 1;
    }
    // Read exactly, 37 failures would open it (37 of 74 calls). A success
    // counts in the bucket of the latest reading, never a later one than
    // its own, and at most READ_EVERY - 1 of them since that reading: so
    // at most that many of the 37 may have left the window early. The old
    // failures count in no case: the first new failure would open it.
    assert!(
        (37 - (READ_EVERY - 1)..=37).contains(&failures),
        "{failures} failures opened it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_success_never_stays_in_the_window_past_its_time() {
    let breaker = ratio_only();
    record_many(&breaker, 40, true);
    // Exactly a window later the forty successes, counted without the
    // clock, have left it: four failures of four calls open the circuit.
    advance(Duration::from_secs(10)).await;
    record_many(&breaker, 3, false);
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_bucket_left_behind_takes_fewer_than_read_every_successes() {
    let breaker = ratio_only();
    record(&breaker, true);
    advance(Duration::from_secs(20)).await;
    let start = readings();
    // Nothing has read the clock for 20 s: these count in the bucket of
    // 0 s, unread, and will leave the window early...
    for _ in 1..READ_EVERY {
        record(&breaker, true);
    }
    assert_eq!(readings(), start);
    // ...until the bucket's READ_EVERYth call reads the clock and rolls
    // the window on; the successes after it count in the bucket of 20 s.
    record(&breaker, true);
    assert_eq!(readings(), start + 1);
    record_many(&breaker, 5, true);
    assert_eq!(readings(), start + 1);
    // Those six are in the window: it takes six failures to open it (6 of
    // 12 calls; 5 of 11 is less than half).
    record_many(&breaker, 5, false);
    assert_eq!(breaker.state(), CircuitState::Closed);
    record(&breaker, false);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(start_paused = true)]
async fn an_emptied_window_sends_the_next_success_to_the_clock() {
    let breaker = ratio_only();
    record_many(&breaker, 5, true);
    breaker.reset();
    let start = readings();
    record(&breaker, true);
    assert_eq!(readings(), start + 1, "after a reset");

    // Held closed, outcomes count for nothing, and read nothing.
    breaker.force_closed();
    let start = readings();
    for _ in 0..5 {
        record(&breaker, true);
        record(&breaker, false);
    }
    assert_eq!(readings(), start);
    assert_eq!(breaker.state(), CircuitState::Closed);

    // Closed again by a probe: the window is empty, and its first success
    // reads the clock.
    breaker.reset();
    record_many(&breaker, 4, false);
    assert_eq!(breaker.state(), CircuitState::Open);
    advance(Duration::from_secs(1)).await;
    record(&breaker, true);
    assert_eq!(breaker.state(), CircuitState::Closed);
    let start = readings();
    record(&breaker, true);
    assert_eq!(readings(), start + 1, "after closing");
}

#[test]
fn a_name_is_static_or_made_at_run_time_and_the_last_given_wins() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<CircuitBreaker>();
    static FIXED: CircuitBreaker = CircuitBreaker::new().with_name("inventory");
    assert_eq!(FIXED.name(), "inventory");
    assert_eq!(CircuitBreaker::new().name(), "circuit");

    let host = String::from("users.internal:443");
    let owned = CircuitBreaker::new().with_owned_name(host.as_str());
    assert_eq!(owned.name(), host);
    let shared_name: std::sync::Arc<str> = host.into();
    let arc = CircuitBreaker::new().with_owned_name(std::sync::Arc::clone(&shared_name));
    assert_eq!(arc.name(), &*shared_name);
    assert_eq!(
        std::sync::Arc::strong_count(&shared_name),
        2,
        "shared, not copied"
    );

    let renamed = CircuitBreaker::new().with_owned_name("a").with_name("b");
    assert_eq!(renamed.name(), "b");
    let renamed = renamed.with_owned_name(String::from("c"));
    assert_eq!(renamed.name(), "c");
    assert_eq!(
        format!("{renamed:?}"),
        "CircuitBreaker { name: \"c\", state: Closed, .. }"
    );
}

#[test]
fn every_field_reads_back_what_was_packed_and_saturates() {
    let open = Word::open(70, 255, u64::MAX);
    assert_eq!(open.state(), CircuitState::Open);
    assert_eq!((open.trips(), open.round()), (63, 255));
    assert_eq!(open.open_until(), PAYLOAD_MASK);
    assert!(!open.is_forced() && open.forced().is_forced());
    assert_eq!(open.forced().state(), CircuitState::Open);

    let half = Word::half_open(3, 7, 2, u64::MAX);
    assert_eq!(half.state(), CircuitState::HalfOpen);
    assert_eq!((half.trips(), half.round()), (3, 7));
    assert_eq!((half.probes_out(), half.probe_successes()), (2, COUNT_MAX));

    let closed = Word::closed(9, false);
    assert_eq!(closed.state(), CircuitState::Closed);
    assert_eq!((closed.trips(), closed.round()), (0, 9));
    assert!(Word::closed(9, true).is_adaptive() && !Word::closed(9, true).is_closed());
}
