//! Waits of any length, on whichever timer the code runs under: the one
//! future every wait in the crate is (the retry loops, `timeout`, the tower
//! layer, the middleware).
//!
//! - Inside a tokio runtime: tokio's timer, so that a paused test clock runs
//!   a whole schedule instantly and exactly. It is set to the instant the
//!   wait ends (`sleep_until`, which tokio does not shorten, unlike `sleep`,
//!   which stops at about 30 years: a wait that ended early would count
//!   time that never passed against a deadline).
//! - Anywhere else (smol, async-std, `futures::executor`, any executor): the
//!   timer thread of [`crate::timer::thread`], which needs no runtime.
//! - On `wasm32-unknown-unknown`: the JS host's `setTimeout`
//!   ([`crate::timer::host`]).
//!
//! The end is read when the wait is made, on the clock waits follow there;
//! the timer is picked at the first poll, by whether the thread is then
//! inside a tokio runtime. A wait on tokio's timer that is polled outside
//! any tokio runtime (its future moved to another executor, or its runtime
//! shut down) goes on on the timer thread, to the same instant. So the one
//! test of the runtime a wait usually needs is at its first poll, and its
//! last poll, after tokio's timer fired, asks tokio nothing.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
use crate::timer::host::Wait;
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
use crate::timer::thread::Wait;

pin_project_lite::pin_project! {
    /// A wait made by the retry loops, `timeout` and the tower layer's
    /// policy, on the timer of wherever it is first polled.
    ///
    /// It ends no sooner than asked, and on tokio's timer up to about 1 ms
    /// later (its tick), or when its tokio runtime shuts down, which fires
    /// every timer it holds. Dropping it cancels the wait. It is `Send` and
    /// `Sync` on every target, so a retried function's future is `Send`
    /// whenever its body's is.
    ///
    /// # Runtimes
    ///
    /// With default features, a retried function runs wherever its body
    /// does. The timer is picked at a wait's first poll; a wait on tokio's
    /// timer that is then polled outside any tokio runtime (its future moved
    /// to another executor, or its runtime shut down) goes on on the timer
    /// thread, to the same instant; moved into another tokio runtime, it
    /// stays on the first one's timer, as tokio's own waits do. The clock
    /// behind `deadline`, `timeout` and the circuit breaker's open period is
    /// the one the waits follow; idempotency keys and jitter seeds come from the
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
    /// Never, with two exceptions this crate cannot see, where its first
    /// poll panics as `tokio::time::sleep` does:
    ///
    /// - inside a tokio runtime built without its timer
    ///   (`Builder::enable_time` not called). tokio 1.x offers no way to ask
    ///   whether a runtime has a timer without panicking
    ///   (tokio-rs/tokio#8361); `#[tokio::main]`, `#[tokio::test]` and
    ///   `Runtime::new` always enable it;
    /// - inside the context of a tokio runtime that has shut down (an
    ///   entered `Handle`, `Handle::block_on`, a `spawn_blocking` task that
    ///   outlives `shutdown_timeout`), which tokio cannot tell either. A
    ///   wait polled before the shutdown ends then, without a panic.
    #[must_use = "futures do nothing unless polled"]
    pub struct Sleep {
        #[pin]
        timer: Timer,
    }
}

pin_project_lite::pin_project! {
    #[project = TimerProj]
    enum Timer {
        // Made, not yet polled: the timer is picked at the first poll, by
        // whether the thread is then inside a tokio runtime.
        Unpicked { end: crate::timer::Instant },
        Tokio { #[pin] sleep: TokioSleep },
        Elsewhere { wait: Wait },
        // Made under a test's simulated clock (feature `testing`).
        Simulated { wait: Simulated },
    }
}

/// A wait on tokio's timer; nothing on a JS host, which has no tokio.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
type TokioSleep = tokio::time::Sleep;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
type TokioSleep = core::convert::Infallible;

/// A wait on a test's simulated clock; nothing without the feature
/// `testing`, which never makes one.
#[cfg(feature = "testing")]
type Simulated = crate::timer::simulated::Wait;
#[cfg(not(feature = "testing"))]
type Simulated = core::convert::Infallible;

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut timer = self.project().timer;
        // The end of a wait polled where its timer cannot go on.
        let end = match timer.as_mut().project() {
            // The first poll: tokio's timer inside a tokio runtime, the timer
            // thread (or the JS host's) elsewhere.
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            TimerProj::Unpicked { end } if crate::timer::in_tokio() => {
                let end = *end;
                timer.set(Timer::Tokio {
                    sleep: tokio::time::sleep_until(end),
                });
                let TimerProj::Tokio { sleep } = timer.project() else {
                    return Poll::Pending;
                };
                return sleep.poll(cx);
            }
            TimerProj::Unpicked { end } => *end,
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            TimerProj::Tokio { sleep } => {
                // Fired: ended. Ready without asking tokio again, which
                // panics once its runtime is gone. (A runtime that shuts
                // down fires its timers: a wait is then over early, as
                // tokio's own are.)
                if sleep.is_elapsed() {
                    return Poll::Ready(());
                }
                if crate::timer::in_tokio() {
                    return sleep.poll(cx);
                }
                // Made in a tokio runtime, now polled outside any (its
                // future moved to another executor), or its runtime shut
                // down: tokio's timer may never fire again (an idle
                // current-thread runtime) or panics when polled (one shut
                // down), so the wait goes on on the timer thread.
                sleep.deadline()
            }
            #[cfg(all(target_family = "wasm", target_os = "unknown"))]
            TimerProj::Tokio { sleep } => match *sleep {},
            TimerProj::Elsewhere { wait } => return wait.poll(cx),
            #[cfg(feature = "testing")]
            TimerProj::Simulated { wait } => return wait.poll(cx),
            #[cfg(not(feature = "testing"))]
            TimerProj::Simulated { wait } => match *wait {},
        };
        // On the timer thread (or the JS host's), to the same instant.
        timer.set(Timer::Elsewhere {
            wait: Wait::new(end),
        });
        let TimerProj::Elsewhere { wait } = timer.project() else {
            return Poll::Pending;
        };
        wait.poll(cx)
    }
}

impl core::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let timer = match self.timer {
            Timer::Unpicked { .. } => "unpicked",
            Timer::Tokio { .. } => "tokio",
            Timer::Elsewhere { .. } => "runtime-free",
            Timer::Simulated { .. } => "simulated",
        };
        f.debug_struct("Sleep")
            .field("timer", &timer)
            .finish_non_exhaustive()
    }
}

/// Sleeps for at least `wait`, however long it is, on the timer of wherever
/// it is first polled (see `Sleep`).
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
    #[cfg(feature = "testing")]
    if let Some(clock) = crate::timer::simulated::current() {
        return simulated(crate::timer::simulated::Wait::on(clock, wait));
    }
    // The end is read on the clock waits follow where the wait is made
    // (tokio's, paused in tests, inside a runtime), and the timer picked at
    // the first poll.
    Sleep {
        timer: Timer::Unpicked {
            end: crate::timer::end_of(crate::clock::Clock::Async.now(), wait),
        },
    }
}

/// A wait on a test's simulated clock.
#[cfg(feature = "testing")]
pub(crate) fn simulated(wait: crate::timer::simulated::Wait) -> Sleep {
    Sleep {
        timer: Timer::Simulated { wait },
    }
}

#[cfg(test)]
mod tests {
    use super::sleep;
    use core::future::Future;
    use core::time::Duration;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn waits_past_tokios_thirty_years_are_slept_in_full() {
        // tokio's own `sleep` stops at 30 years.
        let ten_years = Duration::from_secs(86_400 * 365 * 10);
        for wait in [
            ten_years,
            ten_years + Duration::from_nanos(1),
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

    /// The kind of timer a wait runs on once polled once.
    fn picked(wait: &mut core::pin::Pin<&mut super::Sleep>) -> String {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = wait.as_mut().poll(&mut cx);
        format!("{wait:?}")
    }

    #[test]
    fn outside_a_runtime_the_wait_needs_none() {
        let mut wait = core::pin::pin!(sleep(Duration::from_millis(5)));
        assert!(format!("{wait:?}").contains("unpicked"));
        let start = std::time::Instant::now();
        assert!(picked(&mut wait).contains("runtime-free"));
        crate::timer::thread::block_on(wait);
        assert!(start.elapsed() >= Duration::from_millis(5));
    }

    /// Polled on tokio's timer, then outside any runtime while that runtime
    /// is idle: the wait moves to the timer thread, to the same instant, and
    /// ends. Had its runtime been dropped, it ends at once, without a panic,
    /// as tokio fires every timer of a runtime that shuts down.
    #[test]
    fn a_tokio_wait_polled_outside_its_runtime_ends_there() {
        for keep_runtime in [true, false] {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            let start = std::time::Instant::now();
            let mut wait = Box::pin(sleep(
                Duration::from_secs(if keep_runtime { 0 } else { 3600 }) + Duration::from_millis(5),
            ));
            {
                let _inside = runtime.enter();
                assert!(picked(&mut wait.as_mut()).contains("tokio"));
            }
            if keep_runtime {
                assert!(picked(&mut wait.as_mut()).contains("runtime-free"));
                crate::timer::thread::block_on(wait);
                assert!(start.elapsed() >= Duration::from_millis(5));
                drop(runtime);
            } else {
                drop(runtime);
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(wait.as_mut().poll(&mut cx).is_ready());
            }
        }
    }

    #[tokio::test]
    async fn inside_a_runtime_the_wait_is_tokios() {
        let mut wait = core::pin::pin!(sleep(Duration::from_millis(1)));
        assert!(picked(&mut wait).contains("tokio"));
        wait.await;
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

    fn poll_once(wait: &mut core::pin::Pin<Box<super::Sleep>>) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        wait.as_mut().poll(&mut cx).is_ready()
    }

    fn runtime(paused: bool) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(paused)
            .build()
            .unwrap()
    }

    const EXTREMES: [Duration; 3] = [Duration::ZERO, Duration::from_nanos(1), Duration::MAX];

    /// Zero, 1 ns and `Duration::MAX`, in a paused and a running runtime:
    /// the short ones end no sooner than asked, the longest never ends and
    /// nothing overflows or panics.
    #[test]
    fn extreme_waits_in_a_paused_or_running_runtime() {
        for paused in [true, false] {
            let runtime = runtime(paused);
            runtime.block_on(async {
                for wait in EXTREMES {
                    let start = Instant::now();
                    let mut sleeping = Box::pin(sleep(wait));
                    if wait == Duration::MAX {
                        assert!(!poll_once(&mut sleeping));
                        let raced = tokio::time::timeout(Duration::from_millis(20), sleeping).await;
                        assert!(raced.is_err(), "a wait of Duration::MAX ended");
                    } else {
                        sleeping.await;
                        assert!(start.elapsed() >= wait);
                    }
                }
            });
        }
    }

    /// Made (and perhaps polled) in a runtime, paused or not, then polled
    /// on another executor, or after that runtime is dropped: no panic; a
    /// wait made in a running runtime ends no sooner than asked on the
    /// timer thread, and one of `Duration::MAX` never ends.
    #[test]
    fn extreme_waits_made_in_a_runtime_and_polled_elsewhere() {
        for paused in [true, false] {
            for polled_inside in [true, false] {
                for drop_runtime in [true, false] {
                    for wait in EXTREMES.into_iter().chain([Duration::from_millis(3)]) {
                        let runtime = runtime(paused);
                        let began = std::time::Instant::now();
                        let mut sleeping = {
                            let _inside = runtime.enter();
                            let mut sleeping = Box::pin(sleep(wait));
                            if polled_inside {
                                let _ = poll_once(&mut sleeping);
                            }
                            sleeping
                        };
                        if drop_runtime {
                            drop(runtime);
                            let _ = poll_once(&mut sleeping);
                        } else {
                            let _ = poll_once(&mut sleeping);
                            drop(runtime);
                        }
                        let case = format!(
                            "{wait:?} paused {paused} polled inside {polled_inside} dropped {drop_runtime}"
                        );
                        if wait == Duration::MAX {
                            // tokio fires the timers of a runtime that shuts
                            // down (documented); otherwise it never ends.
                            if !(polled_inside && drop_runtime) {
                                assert!(!poll_once(&mut sleeping), "{case}");
                            }
                            continue;
                        }
                        if polled_inside && drop_runtime {
                            continue;
                        }
                        crate::timer::thread::block_on(sleeping);
                        if !paused {
                            assert!(began.elapsed() >= wait, "{case}: {:?}", began.elapsed());
                        }
                    }
                }
            }
        }
    }
}
