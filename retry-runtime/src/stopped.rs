//! Why a call stopped, how many attempts it made and how long it took:
//! what the `on_give_up` hook is told, and what [`last_call`] reads back
//! after a call returns. Below the driver, which records each call's end
//! here through [`crate::observe`].

use core::fmt;
use core::time::Duration;

use crate::{context, Stop};

/// How a call ended: why it stopped, the attempts it made, and, where it
/// was measured, the time it took.
///
/// The `on_give_up` hook gets one for each call that returns an error or a
/// retried `Ok` value; [`last_call`] gives one for the last call that
/// returned on this thread, successes included.
///
/// ```
/// use retry_runtime::{retry, Stop};
///
/// #[retry(max = 3, base = "10ms")]
/// fn flaky() -> Result<(), std::io::Error> {
///     Err(std::io::ErrorKind::ConnectionReset.into())
/// }
///
/// let error = flaky().unwrap_err();
/// let stopped = retry_runtime::last_call().unwrap();
/// assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Exhausted, 3));
/// println!("failed after {} attempts: {error}", stopped.attempts());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stopped {
    reason: Stop,
    attempts: u32,
    elapsed: Option<Duration>,
}

impl Stopped {
    pub(crate) const fn new(reason: Stop, attempts: u32, elapsed: Option<Duration>) -> Self {
        Stopped {
            reason,
            attempts,
            elapsed,
        }
    }

    /// Why the call stopped: [`Stop::Done`] for a success.
    #[must_use]
    pub const fn reason(&self) -> Stop {
        self.reason
    }

    /// The attempts the call made, the first included. A call the circuit
    /// breaker refused counts the attempt it refused; a hedged call counts
    /// every attempt it started, whichever of them answered.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The time from the start of the first attempt to the stop. Always
    /// there for the `on_give_up` hook; `None` from [`last_call`], which
    /// reads no clock, so that a call that succeeds at once pays nothing
    /// for it.
    #[must_use]
    pub const fn elapsed(&self) -> Option<Duration> {
        self.elapsed
    }
}

/// `exhausted after 3 attempts in 300ms`, `not_retryable after 1 attempt`.
impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.attempts == 1 { "" } else { "s" };
        write!(f, "{} after {} attempt{plural}", self.reason, self.attempts)?;
        self.elapsed
            .map_or(Ok(()), |elapsed| write!(f, " in {elapsed:?}"))
    }
}

/// Each `Stop` at its place in the enum (`reason as u32`), as
/// [`record`] stores it (`every_reason_reads_back_as_recorded` holds the
/// two together).
const REASONS: [Stop; 8] = [
    Stop::Done,
    Stop::NotRetryable,
    Stop::Exhausted,
    Stop::Budget,
    Stop::HintTooLong,
    Stop::Deadline,
    Stop::Nested,
    Stop::Open,
];

/// How the last retried call that returned on this thread ended: why it
/// stopped and the attempts it made (its [`elapsed`](Stopped::elapsed) is
/// `None`). `None` before any call has ended here.
///
/// Read it right after the call returns: after `.await`, before the next
/// `.await`, the task is still on the thread the call ended on. A call
/// that is dropped before it ends leaves it as it was. Every retried
/// function, closure loop, tower layer and middleware call records it; in
/// a retried function that calls another, the outer call's end comes last.
///
/// ```
/// use retry_runtime::{retry, Stop};
///
/// #[retry(max = 4, base = "1ms", jitter = "none")]
/// async fn third_time_lucky(calls: &mut u32) -> Result<u32, std::io::Error> {
///     *calls += 1;
///     if *calls < 3 { Err(std::io::ErrorKind::ConnectionReset.into()) } else { Ok(*calls) }
/// }
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut calls = 0;
/// third_time_lucky(&mut calls).await.unwrap();
/// let last = retry_runtime::last_call().unwrap();
/// assert_eq!((last.reason(), last.attempts()), (Stop::Done, 3));
/// # }
/// ```
#[must_use]
pub fn last_call() -> Option<Stopped> {
    let word = context::last_call();
    let attempts = u32::try_from(word & u64::from(u32::MAX)).ok()?;
    let reason = REASONS.get(usize::try_from(word >> 32).ok()?)?;
    (attempts != 0).then(|| Stopped::new(*reason, attempts, None))
}

/// Records the end of a call on this thread, in one word kept beside the
/// attempt context's frame (`context::set_last_call`): the attempts in the
/// low 32 bits, why it stopped in the high 32 (its place in [`REASONS`]), 0
/// for none (every call makes at least one attempt), which `record(0,
/// Stop::Done)` makes to forget the last call. A success on its first
/// attempt is the word 1.
#[inline]
pub(crate) fn record(attempts: u32, reason: Stop) {
    context::set_last_call(u64::from(attempts) | (reason as u64) << 32);
}

#[cfg(test)]
mod tests {
    use super::{last_call, record, REASONS};
    use crate::Stop;

    #[test]
    fn every_reason_reads_back_as_recorded() {
        for (number, reason) in REASONS.into_iter().enumerate() {
            assert_eq!(usize::try_from(reason as u32).ok(), Some(number));
            for attempts in [1, 2, u32::MAX] {
                record(attempts, reason);
                let last = last_call().expect("recorded");
                assert_eq!((last.reason(), last.attempts()), (reason, attempts));
                assert_eq!(last.elapsed(), None);
            }
        }
        record(0, Stop::Done);
        assert_eq!(last_call(), None);
    }
}
