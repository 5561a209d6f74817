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
    waiting: BTreeMap<Key, Waker>,
    /// The soonest wait, once polled as the soonest: polled so again, it
    /// ends.
    armed: Option<Key>,
}

/// A wait's end, as time since the clock's origin, and its ticket.
type Key = (Duration, u64);

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
        wake(inner, None);
    }
}

/// Takes `key`, if given, off the queue, and wakes the waits that are over
/// and the soonest one left, so that it moves time on when nothing else
/// does: woken once the lock is let go, as a waker is the executor's code.
fn wake(mut inner: MutexGuard<'_, Inner>, key: Option<Key>) {
    let removed = key.and_then(|key| inner.waiting.remove(&key));
    let (mut woken, elapsed) = (Vec::new(), inner.elapsed);
    while let Some(entry) = (inner.waiting.first_entry()).filter(|entry| entry.key().0 <= elapsed) {
        woken.push(entry.remove());
    }
    woken.extend(inner.waiting.values().next().cloned());
    drop(inner);
    drop(removed);
    woken.into_iter().for_each(Waker::wake);
}

/// The clock installed on this thread, if any.
pub(crate) fn current() -> Option<Arc<Clock>> {
    CURRENT
        .try_with(|current| current.borrow().clone())
        .ok()
        .flatten()
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

/// One async wait on a simulated clock.
#[derive(Debug)]
pub(crate) struct Wait {
    clock: Arc<Clock>,
    key: Key,
}

impl Wait {
    /// A wait of `wait` from now on `clock`.
    pub(crate) fn on(clock: Arc<Clock>, wait: Duration) -> Self {
        let end = clock.elapsed().saturating_add(wait);
        let key = (end, super::ticket());
        Wait { clock, key }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let key = self.key;
        let mut inner = self.clock.lock();
        if inner.elapsed < key.0 {
            let soonest = (inner.waiting.first_key_value()).is_none_or(|(first, _)| key <= *first);
            if !soonest || inner.armed != Some(key) {
                if soonest {
                    inner.armed = Some(key);
                }
                let replaced = inner.waiting.insert(key, cx.waker().clone());
                drop(inner);
                drop(replaced);
                if soonest {
                    cx.waker().wake_by_ref();
                }
                return Poll::Pending;
            }
            // Polled twice in a row as the soonest: nothing sooner came.
            inner.armed = None;
            inner.elapsed = key.0;
        }
        wake(inner, Some(key));
        Poll::Ready(())
    }
}

/// Takes the wait off the queue, waking the soonest one left, which may
/// have been waiting for this one.
impl Drop for Wait {
    fn drop(&mut self) {
        wake(self.clock.lock(), Some(self.key));
    }
}
