//! A clock that only waits move (feature `testing`): what
//! [`crate::testing::VirtualClock`] installs on a thread.
//!
//! Time stands still until something waits. A blocking wait moves it on at
//! once. An async wait joins a queue, and the soonest wait in the queue ends
//! once it has been polled twice in a row as the soonest, moving time to its
//! end: the one poll between lets every task the executor has woken register
//! its own waits first, so that a hedge's delay and an attempt's timeout end
//! before a longer wait polled earlier, as they would on a real clock. No
//! executor needs to know: the queue wakes the soonest wait's task itself.
//! A hedged call that starts an attempt says so ([`disarm`]), since it
//! polls the attempts before it again before the new one.
//!
//! Each wait keeps the clock it was made on, so that a wait made under it
//! ends on it wherever it is polled.

use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{end_of, Instant};

/// One simulated clock, shared by the thread it is installed on and the
/// waits made under it.
#[derive(Debug)]
pub(crate) struct Clock {
    /// Where time stood when the clock was installed.
    origin: Instant,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The time since `origin`.
    elapsed: Duration,
    /// The async waits polled and not over, by their end (and a ticket).
    waiting: BTreeMap<(Duration, u64), Waker>,
    next_ticket: u64,
    /// The soonest wait, once polled as the soonest: polled so again, it
    /// ends.
    armed: Option<(Duration, u64)>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Clock>>> = const { RefCell::new(None) };
}

impl Clock {
    /// A clock whose time starts at `origin`.
    pub(crate) fn new(origin: Instant) -> Arc<Self> {
        Arc::new(Clock {
            origin,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time since the clock was installed.
    pub(crate) fn elapsed(&self) -> Duration {
        self.lock().elapsed
    }

    pub(crate) fn now(&self) -> Instant {
        end_of(self.origin, self.elapsed())
    }

    /// Moves time on by `by` at once, ending the waits it passes.
    pub(crate) fn advance(&self, by: Duration) {
        let mut inner = self.lock();
        inner.elapsed = inner.elapsed.saturating_add(by);
        let woken = inner.due();
        drop(inner);
        woken.into_iter().for_each(Waker::wake);
    }
}

impl Inner {
    /// The wakers of the waits that are over, taken off the queue, and of
    /// the soonest one left, so that it moves time on when nothing else
    /// does. Woken once the lock is let go: a waker is the executor's code.
    fn due(&mut self) -> Vec<Waker> {
        let mut woken = Vec::new();
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > self.elapsed {
                woken.push(entry.get().clone());
                break;
            }
            woken.push(entry.remove());
        }
        woken
    }
}

/// The clock installed on this thread, if any.
pub(crate) fn current() -> Option<Arc<Clock>> {
    CURRENT
        .try_with(|current| current.borrow().clone())
        .ok()
        .flatten()
}

/// Now on the clock installed on this thread, if any.
pub(crate) fn now() -> Option<Instant> {
    current().map(|clock| clock.now())
}

/// Installs `clock` on this thread (or none): the one before it.
pub(crate) fn install(clock: Option<Arc<Clock>>) -> Option<Arc<Clock>> {
    CURRENT
        .try_with(|current| current.replace(clock))
        .ok()
        .flatten()
}

/// Work has started that has not been polled yet (a hedged call's new
/// attempt): the soonest wait, if polled again before it, does not end.
pub(crate) fn disarm() {
    if let Some(clock) = current() {
        clock.lock().armed = None;
    }
}

/// A blocking wait of `wait` on the clock installed on this thread: time
/// moves on at once. `false` when none is installed.
pub(crate) fn block_for(wait: Duration) -> bool {
    let clock = current();
    if let Some(clock) = &clock {
        clock.advance(wait);
    }
    clock.is_some()
}

/// One async wait on a simulated clock.
#[derive(Debug)]
pub(crate) struct Wait {
    clock: Arc<Clock>,
    /// Its end, as time since the clock's origin.
    end: Duration,
    /// Set once queued.
    ticket: Option<u64>,
}

impl Wait {
    /// A wait of `wait` from now on the clock installed on this thread, if
    /// any.
    pub(crate) fn after(wait: Duration) -> Option<Self> {
        current().map(|clock| Wait::on(clock, wait))
    }

    /// A wait of `wait` from now on `clock`.
    pub(crate) fn on(clock: Arc<Clock>, wait: Duration) -> Self {
        let end = clock.elapsed().saturating_add(wait);
        Wait {
            clock,
            end,
            ticket: None,
        }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = self.clock.lock();
        if inner.elapsed >= self.end {
            drop(inner);
            self.cancel();
            return Poll::Ready(());
        }
        let ticket = *self.ticket.get_or_insert_with(|| {
            let ticket = inner.next_ticket;
            inner.next_ticket = ticket.wrapping_add(1);
            ticket
        });
        let key = (self.end, ticket);
        let replaced = inner.waiting.insert(key, cx.waker().clone());
        let soonest = inner.waiting.first_key_value().map(|(first, _)| *first) == Some(key);
        let mut woken = Vec::new();
        let ready = if !soonest {
            false
        } else if inner.armed == Some(key) {
            // Polled twice in a row as the soonest: nothing sooner came.
            inner.armed = None;
            inner.elapsed = self.end;
            woken = inner.due();
            true
        } else {
            inner.armed = Some(key);
            false
        };
        drop(inner);
        drop(replaced);
        if ready {
            self.ticket = None;
            woken.into_iter().for_each(Waker::wake);
            return Poll::Ready(());
        }
        if soonest {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }

    /// Takes this wait off the queue, waking the soonest one left, which
    /// may have been waiting for this one.
    fn cancel(&mut self) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let mut inner = self.clock.lock();
        let removed = inner.waiting.remove(&(self.end, ticket));
        let next = inner
            .waiting
            .first_key_value()
            .map(|(_, waker)| waker.clone());
        drop(inner);
        drop(removed);
        if let Some(next) = next {
            next.wake();
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        self.cancel();
    }
}
