//! What the body of a retried function can know about the attempt it is
//! running, and how retried functions called inside it find the attempt
//! they are part of.
//!
//! While an attempt runs (each time its future is polled, or while a plain
//! function's body runs), a thread-local holds the attempt's context. A
//! `#[retry]` function reached from inside it, directly or through ordinary
//! functions, retries under its own policy but never past the enclosing
//! attempt's deadline, and when it gives up after retrying it marks the
//! enclosing attempt, so that the layer around does not retry the same
//! failure again ([`Nested`](crate::Nested)). Work spawned onto another task
//! is polled by the runtime outside that window, and so are unrelated tasks
//! sharing the thread: neither is part of the attempt.
//!
//! The rule follows the thread: work another executor runs synchronously
//! inside an attempt's poll (a `LocalSet` driven from the body, a nested
//! `block_on`, rayon tasks stolen while the attempt waits) counts as part of
//! the attempt.

pub(crate) mod below;
mod enter;

use core::time::Duration;
use std::cell::Cell;

use crate::clock::Instant;

use crate::clock::{Clock, Deadline};
use crate::decision::Stop;
use crate::idempotency::IdempotencyKey;

pub(crate) use below::{judging, take_below, Below};
pub(crate) use enter::{scoped_call, Scoped};

/// The attempt a retried function is running.
///
/// ```
/// use retry_runtime::{current_attempt, retry};
///
/// #[retry(max = 3, deadline = "5s")]
/// async fn call() -> Result<u32, std::io::Error> {
///     let attempt = current_attempt().expect("inside a retried function");
///     // Stamp the attempt on the request, as gRPC does, and give the inner
///     // call no more time than is left.
///     let _header = ("x-attempt", attempt.attempt());
///     let _inner_timeout = attempt.time_left();
///     Ok(attempt.attempt())
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() { assert_eq!(call().await.unwrap(), 1); }
/// ```
///
/// Inside a retried function that another one calls, it describes the
/// innermost attempt, whose deadline is the nearest of its own and the
/// enclosing attempts'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptContext {
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) deadline: Option<Instant>,
    pub(crate) blocking: bool,
    pub(crate) key: IdempotencyKey,
}

impl AttemptContext {
    /// The attempt running, from 1.
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts this call may make: its `max`. Fewer may run when
    /// the budget or a deadline runs out first.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether no retry can follow this attempt.
    #[must_use]
    pub const fn is_last(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// When the nearest deadline passes, this call's or that of a retried
    /// call it runs inside, if there is one.
    #[must_use]
    pub const fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The call's idempotency key: the same for every attempt of this call,
    /// new for every call. Send it with a request that changes state (an
    /// `Idempotency-Key` header) so the server can tell a retry from a new
    /// request; see [`IdempotencyKey`](crate::idempotency::IdempotencyKey).
    #[must_use]
    pub const fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }

    /// The time left before [`deadline`](Self::deadline) (zero once it has
    /// passed), if there is one: a bound for a timeout inside the attempt.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        Some(Clock::of(self.blocking).until(self.deadline?))
    }
}

/// What the thread shows of the attempt it is running: 8 bytes, copied in
/// when an attempt is polled and the enclosing attempt's copied back after.
/// The rest of the context is kept apart from it, where only the attempts
/// that need it pay to set it: the nearest deadline, which a call without a
/// deadline of its own leaves as its enclosing attempt's; the idempotency
/// key, drawn on first request; whether the call blocks its thread; and the
/// [`Marks`] retried calls inside leave.
///
/// One `u64`, so that it is copied, and made from constants, in one move:
/// the attempt running or just judged in the low 32 bits (from 1; 0 for no
/// attempt), the call's most attempts in the high 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame(u64);

impl Frame {
    /// Outside any attempt.
    const NONE: Frame = Frame(0);

    const fn new(attempt: u32, max_attempts: u32) -> Frame {
        Frame((max_attempts as u64) << 32 | attempt as u64)
    }

    /// The attempt running or just judged, from 1; 0 for no attempt.
    #[allow(clippy::cast_possible_truncation)] // The low 32 bits, by design.
    pub(crate) const fn attempt(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn set_attempt(&mut self, attempt: u32) {
        *self = Frame::new(attempt, self.max_attempts());
    }

    #[allow(clippy::cast_possible_truncation)] // The high 32 bits, by design.
    pub(crate) const fn max_attempts(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// What a call's attempts need beyond the frame, in [`Scope::flags`]: any of
/// them sends its attempts the slow way in (or, for a deadline alone, the
/// deadline's way).
///
/// A plain function's call, on the real clock.
const BLOCKING: u16 = 1;
/// The call's idempotency key is drawn; while its attempt runs, the thread's
/// key is that key.
const KEYED: u16 = 1 << 1;
/// The call has a deadline of its own.
const DEADLINE: u16 = 1 << 2;

/// What retried calls made inside an attempt leave for it while it is
/// polled: whether one gave up after retrying ([`GAVE_UP`]), whether the
/// body drew the call's key ([`KEY_DRAWN`]), in the low 32 bits, and how
/// many more (or fewer) are in flight than before the poll, in the high 32
/// bits as an `i32`. Zero, the usual case, is one comparison when the
/// attempt is left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Marks(u64);

/// A retried function called by the attempt gave up after retrying.
const GAVE_UP: u64 = 1;
/// The body drew the call's key: it is the thread's `drawn` key.
const KEY_DRAWN: u64 = 1 << 1;
/// Not left by inner calls but set on the slow way in, for what the body
/// may ask (`current_attempt`): the attempt's call blocks its thread...
const SHOWS_BLOCKING: u64 = 1 << 2;
/// ... and its key is the thread's `key`.
const SHOWS_KEYED: u64 = 1 << 3;
/// Set on the slow way in, which set the enclosing attempt's context aside:
/// the way out, which tests the marks, then sets it back.
const SET_ASIDE: u64 = 1 << 4;

impl Marks {
    const NONE: Marks = Marks(0);

    const fn has(self, flag: u64) -> bool {
        self.0 & flag != 0
    }

    /// The change in the retried calls in flight.
    fn in_flight(self) -> i32 {
        let [a, b, c, d, ..] = (self.0 >> 32).to_le_bytes();
        i32::from_le_bytes([a, b, c, d])
    }

    fn with(self, flag: u64) -> Marks {
        Marks(self.0 | flag)
    }

    fn counting(self, change: i32) -> Marks {
        let high = u64::from(self.in_flight().saturating_add(change).cast_unsigned());
        Marks((self.0 & u64::from(u32::MAX)) | (high << 32))
    }
}

/// What a call keeps beside its frame once it has a key or a retry behind
/// it.
#[derive(Clone, Copy, Debug)]
struct Extra {
    /// The call's idempotency key, if [`KEYED`].
    key: IdempotencyKey,
    /// What the last retry leaves the next (`decision::Failure::carry`).
    carry: u64,
}

impl Extra {
    const NONE: Extra = Extra {
        key: IdempotencyKey::NIL,
        carry: 0,
    };
}

/// The context of one call's attempts, kept by the call between polls.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scope {
    pub(crate) frame: Frame,
    /// [`BLOCKING`], [`KEYED`], [`DEADLINE`].
    flags: u16,
    /// The call's own deadline.
    deadline: Deadline,
    /// The call's key and carry, once it has either: the usual call, which
    /// has neither, writes one tag when it starts.
    extra: Option<Extra>,
    /// Retried functions called by the running attempt that have started
    /// and not yet returned.
    pub(crate) in_flight: u32,
    /// A retried function called by the running attempt gave up after
    /// retrying, and the attempt has not moved on since (see [`Scoped`]'s
    /// `poll`).
    pub(crate) inner_gave_up: bool,
    /// This call is counted in flight in the attempt it runs inside, until
    /// it returns.
    counted: bool,
}

impl Scope {
    /// The context of a call's first attempt.
    // Inlined: on every call's success path (benches/instructions.sh).
    #[inline]
    pub(crate) fn first(max_attempts: u32, deadline: Deadline, clock: Clock) -> Scope {
        let mut flags = 0;
        if matches!(clock, Clock::Blocking) {
            flags |= BLOCKING;
        }
        if deadline != Deadline::NONE {
            flags |= DEADLINE;
        }
        Scope {
            frame: Frame::new(1, max_attempts),
            flags,
            deadline,
            extra: None,
            in_flight: 0,
            inner_gave_up: false,
            counted: false,
        }
    }

    /// The call's future returns `Pending`: it is counted in flight in the
    /// attempt it runs inside, if any, until it returns. A call answered in
    /// the poll it starts in is never counted, and costs nothing here.
    // Not inlined: inlined before each wait, it made the three-failure path
    // 140 instructions longer (benches/instructions.sh).
    pub(crate) fn pending(&mut self) {
        if !self.counted {
            self.counted = count_in_flight(1);
        }
    }

    const fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// The clock the call reads and waits on.
    pub(crate) const fn clock(&self) -> Clock {
        Clock::of(self.has(BLOCKING))
    }

    /// The call's own deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The call's idempotency key, if [`KEYED`]; the nil key before.
    fn key(&self) -> IdempotencyKey {
        self.extra.map_or(IdempotencyKey::NIL, |extra| extra.key)
    }

    /// What the last retry left the next; 0 before the first.
    pub(crate) fn carry(&self) -> u64 {
        self.extra.map_or(0, |extra| extra.carry)
    }

    pub(crate) fn set_carry(&mut self, carry: u64) {
        self.extra.get_or_insert(Extra::NONE).carry = carry;
    }

    /// The call returns: the attempt it runs inside no longer counts it in
    /// flight. Called in the same attempt's context as [`Scope::pending`],
    /// since a future is polled by the attempt that owns it. One dropped
    /// before it returns stays counted: the attempt then never takes a
    /// give-up in it for handled, which errs toward not retrying.
    // Inlined: on every call's success path, where it is one test; the
    // call counted (one that waited, inside an attempt) is out of line: it
    // was 50 bytes of every retried function, 1,621 against 1,571
    // (benches/build-cost.sh 60 1).
    #[inline]
    pub(crate) fn finished(&mut self) {
        if self.counted {
            self.uncount();
        }
    }

    #[inline(never)]
    fn uncount(&mut self) {
        self.counted = false;
        count_in_flight(-1);
    }
}

/// The context of the attempts running on this thread: the innermost
/// attempt's [`Frame`] and [`Marks`], and the nearest deadline and the
/// innermost attempt's key, which are set only by the attempts that have
/// them.
struct Thread {
    frame: Cell<Frame>,
    marks: Cell<Marks>,
    /// The nearest deadline of the attempts running; `NONE` outside any.
    deadline: Cell<Deadline>,
    /// The innermost attempt's key, when its frame is [`KEYED`].
    key: Cell<IdempotencyKey>,
    /// The key the innermost attempt's body drew in this poll, when its
    /// marks say [`KEY_DRAWN`].
    drawn: Cell<IdempotencyKey>,
    /// How the last call to end on this thread ended, as
    /// [`crate::stopped`] writes it: here, beside the frame, so that a
    /// call's end is one store to a thread-local the call has just used.
    last: Cell<u64>,
    /// What the ready-made classifiers found on the answer being judged.
    below: Cell<Below>,
}

thread_local! {
    static THREAD: Thread = const {
        Thread {
            frame: Cell::new(Frame::NONE),
            marks: Cell::new(Marks::NONE),
            deadline: Cell::new(Deadline::NONE),
            key: Cell::new(IdempotencyKey::NIL),
            drawn: Cell::new(IdempotencyKey::NIL),
            last: Cell::new(0),
            below: Cell::new(Below::Nothing),
        }
    };
}

/// Keeps `word` as how the last call on this thread ended
/// ([`crate::stopped`]'s encoding).
#[inline]
pub(crate) fn set_last_call(word: u64) {
    THREAD.with(|thread| thread.last.set(word));
}

/// What [`set_last_call`] kept last; 0 before any.
pub(crate) fn last_call() -> u64 {
    THREAD.with(|thread| thread.last.get())
}

/// The attempt the calling code runs inside, if it runs inside a retried
/// function's attempt (on the same task, or the same thread for a plain
/// function). `None` elsewhere, including in work spawned from an attempt.
#[must_use]
pub fn current_attempt() -> Option<AttemptContext> {
    THREAD.with(|thread| {
        let frame = thread.frame.get();
        if frame.attempt() == 0 {
            return None;
        }
        // Drawn on first request, so a call that never asks pays nothing;
        // the attempt hands it back to the call for its later attempts.
        let marks = thread.marks.get();
        let key = if marks.has(SHOWS_KEYED) {
            thread.key.get()
        } else if marks.has(KEY_DRAWN) {
            thread.drawn.get()
        } else {
            let key = IdempotencyKey::random();
            thread.drawn.set(key);
            thread.marks.set(marks.with(KEY_DRAWN));
            key
        };
        Some(AttemptContext {
            attempt: frame.attempt(),
            max_attempts: frame.max_attempts(),
            deadline: thread.deadline.get().get(),
            blocking: marks.has(SHOWS_BLOCKING),
            key,
        })
    })
}

/// The nearest deadline of the attempts the calling code runs inside.
pub(crate) fn enclosing_deadline() -> Deadline {
    THREAD.with(|thread| thread.deadline.get())
}

/// A call stopped for `stop` under a policy of `max_attempts`: marks the
/// attempt the calling code runs inside, if any, when the call gave up
/// after retrying, or passes on the mark of a layer below it
/// (`inner_gave_up`), so that the layer around does not retry the same
/// failure again. A call that never retries (`max = 1`, a breaker-only
/// guard) is no retry layer: its own stop marks nothing.
pub(crate) fn report_stop(max_attempts: u32, stop: Stop, inner_gave_up: bool) {
    if (max_attempts > 1 && stop.gave_up_retrying()) || inner_gave_up {
        THREAD.with(|thread| {
            if thread.frame.get().attempt() != 0 {
                thread.marks.update(|marks| marks.with(GAVE_UP));
            }
        });
    }
}

/// Counts a retried function starting (`1`) or returning (`-1`) in the
/// attempt the calling code runs inside, if any; `true` when counted.
// Inlined: on every call's success path, where outside any attempt it is
// one thread-local load and a test (benches/instructions.sh).
#[inline]
fn count_in_flight(change: i32) -> bool {
    THREAD.with(|thread| {
        if thread.frame.get().attempt() == 0 {
            return false;
        }
        thread.marks.update(|marks| marks.counting(change));
        true
    })
}
