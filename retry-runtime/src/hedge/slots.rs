//! Where the attempts of one hedged call live while they run: a small set
//! of pinned slots, polled in place by the call's own future (nothing is
//! spawned).
//!
//! Two kinds. [`Slot`]s nested in a type, one per attempt that may run at
//! once, for a `max` known while compiling (the attribute): the attempts
//! live inside the caller's future and nothing is allocated. And
//! [`Boxed`], for a `max` known only at run time (the closure API, the
//! tower layer): one `Vec` per call and one box per slot first used, each
//! box reused by the attempts that follow in it.

use core::pin::Pin;

/// A fixed set of slots, each empty or holding a running attempt.
pub trait Slots<T> {
    /// How many attempts may run at once.
    fn capacity(&self) -> usize;

    /// Slot `index`, if there is one. [`Boxed`] allocates a slot the first
    /// time it is asked for.
    fn slot(self: Pin<&mut Self>, index: usize) -> Option<Pin<&mut Option<T>>>;
}

pin_project_lite::pin_project! {
    /// One slot, followed by the rest of the set.
    #[derive(Debug)]
    pub struct Slot<T, Rest> {
        #[pin]
        item: Option<T>,
        #[pin]
        rest: Rest,
    }
}

/// The end of a set of [`Slot`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct End;

impl<T, Rest> Slot<T, Rest> {
    /// An empty slot in front of `rest`.
    #[must_use]
    pub const fn new(rest: Rest) -> Self {
        Slot { item: None, rest }
    }
}

impl<T> Slots<T> for End {
    fn capacity(&self) -> usize {
        0
    }

    fn slot(self: Pin<&mut Self>, _: usize) -> Option<Pin<&mut Option<T>>> {
        None
    }
}

impl<T, Rest: Slots<T>> Slots<T> for Slot<T, Rest> {
    fn capacity(&self) -> usize {
        self.rest.capacity().saturating_add(1)
    }

    fn slot(self: Pin<&mut Self>, index: usize) -> Option<Pin<&mut Option<T>>> {
        let this = self.project();
        match index.checked_sub(1) {
            None => Some(this.item),
            Some(index) => this.rest.slot(index),
        }
    }
}

/// The most slots a hedged call keeps: no more attempts than this run at
/// once, whatever `max` is (gRPC caps hedged attempts at 5).
pub const MAX_SLOTS: usize = 16;

/// Slots on the heap, for a number of attempts known only at run time.
#[derive(Debug)]
pub struct Boxed<T> {
    slots: Vec<Pin<Box<Option<T>>>>,
    capacity: usize,
}

impl<T> Boxed<T> {
    /// Room for `attempts` running at once, up to [`MAX_SLOTS`]; nothing is
    /// allocated until an attempt starts.
    #[must_use]
    pub fn new(attempts: u32) -> Self {
        let capacity = usize::try_from(attempts).map_or(MAX_SLOTS, |n| n.clamp(1, MAX_SLOTS));
        Boxed {
            slots: Vec::new(),
            capacity,
        }
    }
}

impl<T> Slots<T> for Boxed<T> {
    fn capacity(&self) -> usize {
        self.capacity
    }

    fn slot(self: Pin<&mut Self>, index: usize) -> Option<Pin<&mut Option<T>>> {
        let this = self.get_mut();
        if index >= this.capacity {
            return None;
        }
        if this.slots.len() <= index {
            // All of them at once, exactly.
            this.slots.reserve_exact(this.capacity - this.slots.len());
            this.slots.resize_with(index + 1, || Box::pin(None));
        }
        this.slots.get_mut(index).map(Pin::as_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_slots_hold_one_item_each() {
        let mut set: Slot<u32, Slot<u32, Slot<u32, End>>> = Slot::new(Slot::new(Slot::new(End)));
        assert_eq!(set.capacity(), 3);
        let mut set = Pin::new(&mut set);
        for index in 0..3 {
            let mut slot = set.as_mut().slot(index).unwrap();
            slot.set(Some(u32::try_from(index).unwrap()));
        }
        assert!(set.as_mut().slot(3).is_none());
        assert_eq!(*set.as_mut().slot(2).unwrap(), Some(2));
    }

    #[test]
    fn boxed_slots_allocate_on_first_use_and_stop_at_the_cap() {
        let mut set = Boxed::<u8>::new(u32::MAX);
        assert_eq!(set.capacity(), MAX_SLOTS);
        assert!(set.slots.is_empty());
        let mut set = Pin::new(&mut set);
        set.as_mut().slot(1).unwrap().set(Some(7));
        assert_eq!(set.slots.len(), 2);
        assert!(set.as_mut().slot(MAX_SLOTS).is_none());
        assert_eq!(Boxed::<u8>::new(0).capacity(), 1);
    }
}
