//! Waits of any length, on whichever timer the code runs under: the one
//! future every wait in the crate is (the retry loops, `timeout`, the tower
//! layer, the middleware).
//!
//! - Inside a tokio runtime: `tokio::time::sleep`, so that a paused test
//!   clock runs a whole schedule instantly and exactly. A single tokio timer
//!   stops at about 30 years, and a wait that ended early would count time
//!   that never passed against a deadline, so a long wait is a timer set to
//!   the instant it ends (`sleep_until`, which tokio does not shorten).
//! - Anywhere else (smol, async-std, `futures::executor`, any executor): the
//!   timer thread of [`crate::timer::thread`], which needs no runtime.
//! - On `wasm32-unknown-unknown`: the JS host's `setTimeout`
//!   ([`crate::timer::host`]).
//!
//! The timer is picked when the wait is made, by whether the thread is then
//! inside a tokio runtime. A wait made on tokio's timer and polled outside
//! any tokio runtime (its future moved to another executor, or its runtime
//! shut down) goes on on the timer thread, to the same instant.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
use crate::timer::host::Wait;
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
use crate::timer::thread::Wait;

/// The longest wait left to `tokio::time::sleep`: well inside its limit of
/// 30 years (`86400 * 365 * 30` seconds).
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
const CHUNK: Duration = Duration::from_secs(86_400 * 365 * 10);

pin_project_lite::pin_project! {
    /// A wait made by the retry loops, `timeout` and the tower layer's
    /// policy, on the timer of wherever it is made.
    ///
    /// It ends no sooner than asked, and on tokio's timer up to about 1 ms
    /// later (its tick). Dropping it cancels the wait. It is `Send` and
    /// `Sync` on every target, so a retried function's future is `Send`
    /// whenever its body's is.
    ///
    /// # Runtimes
    ///
    /// With default features, a retried function runs wherever its body
    /// does. The timer is picked when a wait is made; a wait made on tokio's
    /// timer that is then polled outside any tokio runtime (its future moved
    /// to another executor, or its runtime shut down) goes on on the timer
    /// thread, to the same instant. The clock behind
    /// `deadline`, `timeout` and the circuit breaker's open period is the
    /// one the waits follow; idempotency keys and jitter seeds come from the
    /// operating system's (or the host's) cryptographic random source.
    ///
    /// | where | waits | clock | random source |
    /// |---|---|---|---|
    /// | tokio runtime (`#[tokio::main]`, `#[tokio::test]`, `Runtime::new`) | tokio's timer; a paused test clock runs a schedule instantly and exactly | tokio's (paused in tests) | the OS (`getrandom`) |
    /// | smol, async-io | a timer thread of this crate's, started on the first wait made outside tokio | real (`std::time::Instant`) | the OS |
    /// | async-std | the same timer thread | real | the OS |
    /// | `futures::executor::block_on`, any other executor | the same timer thread | real | the OS |
    /// | plain threads (a plain `fn` under `#[retry]`, `run_blocking`) | `std::thread::sleep` | real | the OS |
    /// | `wasm32-unknown-unknown` in a JS host: browsers, node 19+, Deno, workers | the host's `setTimeout` | the host's `performance.now()` (`Date.now()` without it) | the host's `crypto.getRandomValues` |
    /// | a plain `fn` on `wasm32-unknown-unknown` | spins on the host's clock (a JS host cannot block a thread) | the host's | the host's |
    ///
    /// The timer thread sleeps on a condition variable until the soonest
    /// wait ends, and wakes each waiting task then; a wait dropped early
    /// leaves its queue at once. If the operating system refuses to start
    /// the thread, waits still end on time: they ask their executor to poll
    /// them again until then.
    ///
    /// # Panics
    ///
    /// Never, with one exception this crate cannot see: inside a tokio
    /// runtime built without its timer (`Builder::enable_time` not called),
    /// making the wait panics as `tokio::time::sleep` does. tokio 1.x offers
    /// no way to ask whether a runtime has a timer without panicking
    /// (tokio-rs/tokio#8361); `#[tokio::main]`, `#[tokio::test]` and
    /// `Runtime::new` always enable it.
    #[must_use = "futures do nothing unless polled"]
    pub struct Sleep {
        #[pin]
        timer: Timer,
    }
}

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pin_project_lite::pin_project! {
    #[project = TimerProj]
    enum Timer {
        Tokio { #[pin] sleep: tokio::time::Sleep },
        Elsewhere { wait: Wait },
    }
}

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pin_project_lite::pin_project! {
    #[project = TimerProj]
    enum Timer {
        Elsewhere { wait: Wait },
    }
}

impl Future for Sleep {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut timer = self.project().timer;
        match timer.as_mut().project() {
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            TimerProj::Tokio { sleep } => {
                if crate::timer::in_tokio() {
                    return sleep.poll(cx);
                }
                // Made in a tokio runtime, polled outside any: the future
                // was moved to another executor, or its runtime shut down.
                // Tokio's timer may never fire again (an idle current-thread
                // runtime) or panics when polled (a runtime shut down), so
                // the wait goes on on the timer thread, to the same instant.
                let end = sleep.deadline();
                timer.set(Timer::Elsewhere {
                    wait: Wait::new(end),
                });
                match timer.project() {
                    TimerProj::Elsewhere { wait } => wait.poll(cx),
                    TimerProj::Tokio { .. } => Poll::Pending,
                }
            }
            TimerProj::Elsewhere { wait } => wait.poll(cx),
        }
    }
}

impl core::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let timer = match self.timer {
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            Timer::Tokio { .. } => "tokio",
            Timer::Elsewhere { .. } => "runtime-free",
        };
        f.debug_struct("Sleep")
            .field("timer", &timer)
            .finish_non_exhaustive()
    }
}

/// Sleeps for at least `wait`, however long it is, on the timer of wherever
/// it is made (see [`Sleep`]).
///
/// On tokio's timer it may last up to about 1 ms longer than asked; on a
/// paused clock a wait of 1 ns moves the clock by 1 ms. It never ends
/// sooner, short of waits of hundreds of millions of years, which the
/// clocks cannot count: those end at the farthest instant the clock can.
/// Cancelling it (dropping the future) cancels the wait.
// Inlined: its `Sleep` is returned by value, and a call copies it once more
// per wait (benches/instructions.sh).
#[inline]
pub fn sleep(wait: Duration) -> Sleep {
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    if crate::timer::in_tokio() {
        return Sleep {
            timer: Timer::Tokio {
                sleep: tokio_sleep(wait),
            },
        };
    }
    let end = crate::timer::end_of(crate::timer::real_now(), wait);
    Sleep {
        timer: Timer::Elsewhere {
            wait: Wait::new(end),
        },
    }
}

/// A tokio timer for `wait`, past its 30-year limit too.
// Out of line, with the long wait out of line again: the usual wait is then
// one test and a tail call (benches/instructions.sh: inlined, or with the
// long wait in the same body, the three-failure path cost 20 and 80
// instructions more).
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[inline(never)]
fn tokio_sleep(wait: Duration) -> tokio::time::Sleep {
    // Whole seconds compared: one test (a wait of exactly `CHUNK` takes the
    // long way, which ends at the same instant).
    if wait.as_secs() < CHUNK.as_secs() {
        // The common case, as `tokio::time::sleep` makes it.
        return tokio::time::sleep(wait);
    }
    tokio_sleep_long(wait)
}

/// A wait past tokio's 30-year limit: a timer set to the instant it ends.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[cold]
#[inline(never)]
fn tokio_sleep_long(wait: Duration) -> tokio::time::Sleep {
    tokio::time::sleep_until(crate::timer::end_of(tokio::time::Instant::now(), wait))
}

#[cfg(test)]
mod tests {
    use super::{sleep, CHUNK};
    use core::future::Future;
    use core::time::Duration;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn waits_past_tokios_thirty_years_are_slept_in_full() {
        for wait in [
            CHUNK,
            CHUNK + Duration::from_nanos(1),
            Duration::from_secs(86_400 * 365 * 31),
            Duration::from_secs(86_400 * 365 * 1000),
            Duration::from_nanos(u64::MAX),
        ] {
            let start = Instant::now();
            sleep(wait).await;
            let slept = start.elapsed();
            // At least the wait, and no more than tokio's 1 ms tick.
            assert!(slept >= wait, "{wait:?}: slept {slept:?}");
            assert!(
                slept <= wait + Duration::from_millis(1),
                "{wait:?}: slept {slept:?}"
            );
        }
    }

    #[test]
    fn outside_a_runtime_the_wait_needs_none() {
        let wait = sleep(Duration::from_millis(5));
        assert!(format!("{wait:?}").contains("runtime-free"));
        let start = std::time::Instant::now();
        crate::timer::thread::block_on(wait);
        assert!(start.elapsed() >= Duration::from_millis(5));
    }

    /// Made on tokio's timer, then polled outside any runtime (the runtime
    /// dropped): the wait moves to the timer thread and still ends.
    #[test]
    fn a_tokio_wait_polled_outside_its_runtime_moves_to_the_timer_thread() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let wait = {
            let _inside = runtime.enter();
            sleep(Duration::from_millis(5))
        };
        assert!(format!("{wait:?}").contains("tokio"));
        drop(runtime);
        let mut wait = core::pin::pin!(wait);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        assert!(format!("{wait:?}").contains("runtime-free"));
        crate::timer::thread::block_on(wait);
    }

    #[tokio::test]
    async fn inside_a_runtime_the_wait_is_tokios() {
        assert!(format!("{:?}", sleep(Duration::ZERO)).contains("tokio"));
    }

    /// The retry loop keeps its wait in the caller's future: choosing the
    /// timer at run time must not make that future larger than tokio's
    /// timer alone did.
    #[test]
    fn sleep_is_no_larger_than_tokios() {
        assert!(core::mem::size_of::<super::Sleep>() <= core::mem::size_of::<tokio::time::Sleep>());
    }

    #[test]
    fn sleep_is_send_and_sync() {
        fn check<T: Send + Sync>(_: &T) {}
        check(&sleep(Duration::ZERO));
    }
}
