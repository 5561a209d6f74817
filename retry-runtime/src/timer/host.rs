//! The JS host's clock and timer, on `wasm32-unknown-unknown` (browsers,
//! node, Deno, edge workers), where `std::time::Instant::now` traps and no
//! thread can be started.
//!
//! The clock is `performance.now()`, or `Date.now()` (kept from going back)
//! on a host without it. A wait is a `setTimeout` that wakes its task; the
//! wait checks the clock when polled and sets another when the host's timer
//! fired early or the wait is longer than `setTimeout` can count (2^31 - 1
//! ms, about 24.8 days). The host's functions are looked up on `globalThis`
//! and called through js-sys, so a host that lacks one makes no panic: time
//! stands still without a clock, and without a timer a wait asks its
//! executor to poll it again until its time has come.
//!
//! A wait keeps only its end and a ticket, so that it is `Send` like a
//! native one and a retried function's future stays `Send` where its body's
//! is; the host's timer handle and callback are kept per thread, by ticket.

use core::cell::{Cell, RefCell};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::collections::BTreeMap;

use js_sys::{Function, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// A point on the host's monotonic clock, as time since its origin (the
/// page's or process's start). What
/// [`AttemptContext::deadline`](crate::AttemptContext::deadline) returns on
/// `wasm32-unknown-unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// Now, on the host's clock.
    #[must_use]
    pub fn now() -> Self {
        let millis = HOST
            .try_with(|host| match &host.performance {
                Some((now, performance)) => now.call0(performance).ok()?.as_f64(),
                None => Some(js_sys::Date::now()),
            })
            .ok()
            .flatten();
        let reading = millis
            .and_then(|millis| Duration::try_from_secs_f64(millis / 1000.0).ok())
            .unwrap_or(Duration::ZERO);
        let latest = LATEST.try_with(|latest| {
            latest.update(|latest| latest.max(reading));
            latest.get()
        });
        Instant(latest.unwrap_or(reading))
    }

    /// `self + duration`, or `None` past what the clock can count.
    #[must_use]
    pub fn checked_add(self, duration: Duration) -> Option<Self> {
        self.0.checked_add(duration).map(Instant)
    }

    /// `self - duration`, or `None` before the clock's origin.
    #[must_use]
    pub fn checked_sub(self, duration: Duration) -> Option<Self> {
        self.0.checked_sub(duration).map(Instant)
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// The time since `self`, zero if it is in the future.
    #[must_use]
    pub fn elapsed(self) -> Duration {
        Self::now().saturating_duration_since(self)
    }
}

/// The host's functions, looked up once per thread.
struct Host {
    global: JsValue,
    /// `performance.now` and `performance`, if the host has them.
    performance: Option<(Function, JsValue)>,
    set_timeout: Option<Function>,
    clear_timeout: Option<Function>,
}

fn function(target: &JsValue, name: &str) -> Option<Function> {
    Reflect::get(target, &JsValue::from_str(name))
        .ok()?
        .dyn_into::<Function>()
        .ok()
}

impl Host {
    fn new() -> Self {
        let global = JsValue::from(js_sys::global());
        let performance = Reflect::get(&global, &JsValue::from_str("performance"))
            .ok()
            .filter(|performance| performance.is_object())
            .and_then(|performance| Some((function(&performance, "now")?, performance)));
        Host {
            set_timeout: function(&global, "setTimeout"),
            clear_timeout: function(&global, "clearTimeout"),
            performance,
            global,
        }
    }
}

thread_local! {
    static HOST: Host = Host::new();
    /// The latest reading, so that the clock never goes back.
    static LATEST: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// The host timers set for waits on this thread, by ticket.
    static TIMERS: RefCell<BTreeMap<u64, Timer>> = const { RefCell::new(BTreeMap::new()) };
}

/// Runs `change` on this thread's host timers, unless the thread is ending
/// or they are borrowed already (by a waker dropped or woken inside a
/// change).
fn timers<R>(change: impl FnOnce(&mut BTreeMap<u64, Timer>) -> Option<R>) -> Option<R> {
    TIMERS
        .try_with(|timers| change(&mut *timers.try_borrow_mut().ok()?))
        .ok()
        .flatten()
}

/// A host timer set for a wait.
struct Timer {
    handle: JsValue,
    /// Called by the host; kept alive until the wait ends or is dropped.
    _callback: Closure<dyn FnMut()>,
    /// The task to wake; taken when the timer fires.
    waker: Option<Waker>,
}

/// One wait on the host's timer, ending at `end` on the host's clock.
#[derive(Debug)]
pub(crate) struct Wait {
    end: Instant,
    /// The host timer set for it, on this thread; 0 for none.
    ticket: u64,
}

impl Wait {
    pub(crate) fn new(end: Instant) -> Self {
        Wait { end, ticket: 0 }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        if now >= self.end {
            self.cancel();
            return Poll::Ready(());
        }
        // A waker replaced by this poll's is dropped after the map is let
        // go: dropping it may drop a task holding another wait, whose
        // `cancel` borrows the map (as the thread timer's waits relock its
        // queue).
        let replaced = timers(|timers| {
            // Set when armed, taken only when fired.
            let waker = timers.get_mut(&self.ticket)?.waker.as_mut()?;
            let stale = !waker.will_wake(cx.waker());
            Some(stale.then(|| core::mem::replace(waker, cx.waker().clone())))
        });
        if replaced.is_some() {
            return Poll::Pending;
        }
        // Fired before the end (early, or a wait longer than one host timer
        // can count), or never set: set one for the time left.
        self.cancel();
        match arm(self.end.saturating_duration_since(now), cx.waker()) {
            Some(ticket) => self.ticket = ticket,
            None => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }

    /// Clears this wait's host timer, if it has one.
    fn cancel(&mut self) {
        // No timer has ticket 0 (none): tickets count from 1.
        let ticket = core::mem::replace(&mut self.ticket, 0);
        let timer = timers(|timers| timers.remove(&ticket));
        // Not fired yet.
        if let Some(timer) = timer.filter(|timer| timer.waker.is_some()) {
            clear(&timer.handle);
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// The longest delay `setTimeout` takes: past it, hosts fire at once.
const MAX_DELAY_MS: u128 = (1 << 31) - 1;

/// Sets a host timer that wakes `waker` after `left` (rounded up to whole
/// milliseconds, at most [`MAX_DELAY_MS`]): its ticket, or `None` when the
/// host has no timer.
fn arm(left: Duration, waker: &Waker) -> Option<u64> {
    let ticket = super::ticket();
    let millis = left.as_nanos().div_ceil(1_000_000).min(MAX_DELAY_MS);
    // Below 2^31, so exact as an `f64`.
    #[allow(clippy::cast_precision_loss)]
    let delay = JsValue::from_f64(millis as f64);
    // The host's callback: wakes the wait's task.
    let callback = Closure::<dyn FnMut()>::new(move || {
        if let Some(waker) = timers(|timers| timers.get_mut(&ticket)?.waker.take()) {
            waker.wake();
        }
    });
    let handle = HOST
        .try_with(|host| {
            let set = host.set_timeout.as_ref()?;
            set.call2(&host.global, callback.as_ref(), &delay).ok()
        })
        .ok()
        .flatten()?;
    let timer = Timer {
        handle: handle.clone(),
        _callback: callback,
        waker: Some(waker.clone()),
    };
    let kept = timers(|timers| {
        timers.insert(ticket, timer);
        Some(ticket)
    });
    // Not kept (the thread is ending): cleared, so that the host never
    // calls the callback dropped with it.
    kept.or_else(|| {
        clear(&handle);
        None
    })
}

/// Clears a host timer that has not fired.
fn clear(handle: &JsValue) {
    let _ = HOST.try_with(|host| {
        let clear = host.clear_timeout.as_ref()?;
        clear.call1(&host.global, handle).ok()
    });
}
