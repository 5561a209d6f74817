//! A timer that needs no runtime: one thread for the process that wakes
//! each waiting task when its time comes.
//!
//! Why a thread of our own rather than `async-io`'s or `futures-timer`'s:
//! it must be there with default features, so every user would compile it,
//! tokio users included, who never run it. `async-io` brings its reactor
//! (polling, rustix, concurrent-queue, parking, ...), about ten crates;
//! `futures-timer` panics when its thread cannot be started and when
//! `Instant + Duration` overflows. This one is a queue behind a mutex and a
//! condition variable, with no dependency, no `unsafe` and no panic: the
//! thread starts on the first wait made outside a tokio runtime, and if the
//! operating system refuses it, waits still end on time by asking their
//! executor to poll them again until then (busy, but correct).
//!
//! Registering a wait inserts into a shared ordered map (which may allocate
//! a node); a wait dropped early (a cancelled call, an attempt that beat its
//! timeout) removes itself, so nothing piles up.

use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::{real_now, Instant};

/// The tasks waiting, by the instant each wait ends (and a ticket, to tell
/// apart waits that end at the same instant).
struct Queue {
    waiting: BTreeMap<(Instant, u64), Waker>,
    /// Whether the timer thread runs: not before the first wait, nor when
    /// the operating system would not start it (tried again by each new
    /// wait).
    running: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    waiting: BTreeMap::new(),
    running: false,
});

/// Signalled when a wait ends sooner than every other, so that the thread
/// sleeps until then rather than until the one it was sleeping for.
static SOONER: Condvar = Condvar::new();

/// The queue, also after a waker panicked while it was held: the map itself
/// is never left half-changed.
fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One wait on the timer thread, ending at `end` on the real clock.
#[derive(Debug)]
pub(crate) struct Wait {
    end: Instant,
    /// Set once registered with the thread.
    ticket: Option<u64>,
}

impl Wait {
    pub(crate) fn new(end: Instant) -> Self {
        Wait { end, ticket: None }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if real_now() >= self.end {
            self.cancel();
            return Poll::Ready(());
        }
        let mut queue = queue();
        // A new wait starts the thread if it does not run.
        if self.ticket.is_none() && !queue.running {
            let started = std::thread::Builder::new()
                .name("retry-runtime-timer".to_owned())
                .spawn(run);
            queue.running = started.is_ok();
        }
        let key = (self.end, *self.ticket.get_or_insert_with(super::ticket));
        // Inserted if new, or woken a moment before its end by the thread's
        // clock reading (it waits again). A waker this poll replaces is
        // dropped once the lock is released: a waker's drop is the
        // executor's code, and may drop a task whose future holds another
        // wait, whose own drop takes the lock.
        let replaced = queue.waiting.insert(key, cx.waker().clone());
        let soonest = queue.waiting.first_key_value().map(|(first, _)| *first) == Some(key);
        let running = queue.running;
        drop(queue);
        drop(replaced);
        if !running {
            // No thread to wake this task: have it polled again until its
            // time has come.
            cx.waker().wake_by_ref();
        } else if soonest {
            SOONER.notify_one();
        }
        Poll::Pending
    }

    /// Takes this wait off the queue, if it is on it.
    fn cancel(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let waker = queue().waiting.remove(&(self.end, ticket));
            // Dropped once the lock is released: a waker's drop is the
            // executor's code.
            drop(waker);
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// The timer thread: wakes the tasks whose time has come, then sleeps until
/// the next one's, or until a sooner wait is registered.
fn run() {
    let mut due = Vec::new();
    let mut queue = queue();
    loop {
        let now = real_now();
        while let Some(entry) = (queue.waiting.first_entry()).filter(|entry| entry.key().0 <= now) {
            due.push(entry.remove());
        }
        if !due.is_empty() {
            drop(queue);
            for waker in due.drain(..) {
                // A waker is the executor's code: one that panics must not
                // stop the thread that every other wait relies on.
                let _ = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| waker.wake()));
            }
            queue = self::queue();
            continue;
        }
        // Until the soonest wait ends, or for good with none (a timeout
        // past what the system counts waits without one).
        let left = (queue.waiting.first_key_value()).map_or(Duration::MAX, |(&(end, _), _)| {
            end.saturating_duration_since(now)
        });
        queue = SOONER
            .wait_timeout(queue, left)
            .map_or_else(|poisoned| poisoned.into_inner().0, |(queue, _)| queue);
    }
}

/// A minimal executor for the unit tests of waits that run off tokio:
/// parks the thread until woken.
#[cfg(test)]
pub(crate) fn block_on<F: core::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Wake};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = core::pin::pin!(future);
    loop {
        if let core::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::block_on;
    use super::{queue, Wait};
    use crate::timer::{end_of, real_now};
    use core::future::poll_fn;
    use core::time::Duration;

    #[test]
    fn waits_end_no_sooner_than_asked_and_leave_nothing_behind() {
        let waits = [30, 10, 20].map(|millis| {
            std::thread::spawn(move || {
                let begun = real_now();
                let mut wait = Wait::new(end_of(begun, Duration::from_millis(millis)));
                block_on(poll_fn(|cx| wait.poll(cx)));
                let key = (wait.end, wait.ticket);
                (millis, real_now().saturating_duration_since(begun), key)
            })
        });
        for wait in waits {
            let (millis, slept, (end, ticket)) = wait.join().unwrap();
            assert!(
                slept >= Duration::from_millis(millis),
                "{millis} ms: {slept:?}"
            );
            // Ended waits are off the queue.
            assert_eq!(ticket, None);
            assert!(!queue().waiting.keys().any(|key| key.0 == end));
        }
    }

    #[test]
    fn a_dropped_wait_leaves_the_queue() {
        let mut wait = Wait::new(end_of(real_now(), Duration::from_secs(3600)));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(wait.poll(&mut cx).is_pending());
        let key = (wait.end, wait.ticket.unwrap());
        assert!(queue().waiting.contains_key(&key));
        drop(wait);
        assert!(!queue().waiting.contains_key(&key));
    }

    /// A wait polled by a new task drops the waker of the task before, which
    /// may be all that keeps that task, and so its future, alive (as in an
    /// executor whose waker owns its task). A future that holds another
    /// wait then drops it, and that wait leaves the queue: the queue's lock
    /// must not be held then, or the thread deadlocks, and with it every
    /// wait of the process.
    #[test]
    fn a_replaced_waker_is_dropped_outside_the_queues_lock() {
        use std::sync::{mpsc, Arc, Mutex};
        use std::task::{Context, Wake, Waker};

        /// A task's waker that owns its task's future, here a wait, held
        /// for its drop.
        struct Task {
            _future: Mutex<Option<Wait>>,
        }
        impl Wake for Task {
            fn wake(self: Arc<Self>) {}
        }

        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            let far = end_of(real_now(), Duration::from_secs(3600));
            let noop = Waker::noop();
            let mut held = Wait::new(far);
            assert!(held.poll(&mut Context::from_waker(noop)).is_pending());
            let first: Waker = Arc::new(Task {
                _future: Mutex::new(Some(held)),
            })
            .into();
            let mut wait = Wait::new(far);
            assert!(wait.poll(&mut Context::from_waker(&first)).is_pending());
            // The queue's copy of `first` is the last.
            drop(first);
            // Polled by another task: `first` goes, and the wait it owned.
            assert!(wait.poll(&mut Context::from_waker(noop)).is_pending());
            let _ = done.send(());
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(20)).is_ok(),
            "the queue's lock was taken again while held"
        );
    }

    #[test]
    fn waits_past_what_the_clock_can_count_do_not_overflow() {
        let mut wait = Wait::new(end_of(real_now(), Duration::MAX));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(wait.poll(&mut cx).is_pending());
    }
}
