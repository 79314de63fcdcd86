//! What a sleep's entry holds: the task to wake, and, for a `Sleep` whose
//! deadline was pushed back while it was registered, the deadline itself,
//! shared with the `Sleep` so that pushing it back again takes no lock.
//!
//! # Moving a deadline later without the lock
//!
//! An idle timeout is pushed back on every frame of its connection and
//! almost never fires. The first time a registered `Sleep` is reset to a
//! later tick, its entry's waker is moved into a [`DeadlineCell`] that the
//! `Sleep` and the entry share, and the entry stays where it is. From then on
//! a reset to a later tick is one store into the cell ([`DeadlineCell::push_back`]),
//! with no lock and no clock read. When the firing pass reaches the entry
//! (its slot cascades, or its tick fires), it reads the cell and, if the
//! deadline has moved past the entry's tick, links the entry at the new tick
//! instead of waking the task ([`Payload::refile`]): the entry moves once per
//! wait, in the driver, under the lock the driver holds anyway, rather than
//! on resets.
//!
//! Never early: a pass that reads an old tick (the store is racing it) fires
//! the entry and wakes the task; its poll finds the deadline not passed by
//! the clock and links the entry again (`SleepEntry::rearm`). Nothing is
//! lost: the entry stays linked all along, at or before its deadline's tick.
//!
//! The cell also keeps `filed`, a tick the entry is linked at or after, for
//! the lock-free poll: written under the shard's lock only (by the pass that
//! refiles the entry, and by the `Sleep` when it moves the entry itself),
//! before the pass raises the shard's `fired_upto` past it. See "Polling
//! without the lock" in `entry.rs`; the loom model
//! `loom_lock_free_poll_racing_a_refiling_pass` checks it, and
//! `loom_reset_later_racing_a_refiling_pass` the store racing the pass.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Waker;

use crate::sync::AtomicU64;
use crate::wheel::Payload;

/// What a sleep's entry holds.
#[derive(Debug, Clone)]
pub(crate) enum Waiter {
    /// The waker of the task to wake; the entry is linked at its deadline's
    /// tick.
    Task(Waker),
    /// The deadline is kept in the cell, which also holds the waker; the
    /// entry may be linked before the deadline's tick (see the module docs).
    Tracked(Arc<DeadlineCell>),
}

impl Waiter {
    /// The waker of the task to wake.
    pub(crate) fn waker(&self) -> &Waker {
        match self {
            Waiter::Task(waker) => waker,
            Waiter::Tracked(cell) => &cell.waker,
        }
    }

    /// Wakes the task. The caller catches a panic (see `wake.rs`).
    pub(crate) fn wake(self) {
        match self {
            Waiter::Task(waker) => waker.wake(),
            Waiter::Tracked(cell) => cell.waker.wake_by_ref(),
        }
    }
}

impl Payload for Waiter {
    fn placeholder() -> Self {
        // Cloning the no-op waker touches no reference count.
        Waiter::Task(Waker::noop().clone())
    }

    fn refile(&self, due: u64) -> Option<u64> {
        match self {
            Waiter::Task(_) => None,
            Waiter::Tracked(cell) => {
                // Under the shard's lock, as every write of `filed` is.
                let tick = cell.tick.load(Relaxed);
                (tick > due).then(|| {
                    cell.filed.store(tick, Relaxed);
                    tick
                })
            }
        }
    }
}

/// A registered `Sleep`'s deadline, shared with its entry (see the module
/// docs). Made on the first reset of the `Sleep` to a later tick while it is
/// registered, so a timer that is never pushed back (a request timeout)
/// never has one.
#[derive(Debug)]
pub(crate) struct DeadlineCell {
    /// The tick of the `Sleep`'s deadline. Written by the `Sleep`, without
    /// the lock when it moves later; read by the firing pass.
    tick: AtomicU64,
    /// A tick the entry is linked at or after (or fired at): written under
    /// the shard's lock only; read by the lock-free poll.
    filed: AtomicU64,
    /// The waker of the task to wake: a poll with another one gives the
    /// entry a new cell.
    waker: Waker,
}

impl DeadlineCell {
    /// A cell for an entry linked at `filed`, for a deadline at `tick`.
    pub(crate) fn new(tick: u64, filed: u64, waker: Waker) -> Arc<Self> {
        Arc::new(DeadlineCell {
            tick: AtomicU64::new(tick),
            filed: AtomicU64::new(filed),
            waker,
        })
    }

    /// Fills a cell made with a placeholder waker before its entry's lock
    /// was taken: the entry is linked at `filed` and wakes `waker`. Under
    /// the shard's lock, before the cell is shared.
    ///
    /// # Panics
    /// If the cell is already shared.
    pub(crate) fn fill(cell: &mut Arc<Self>, filed: u64, waker: Waker) {
        let cell = Arc::get_mut(cell).expect("a cell is filled before it is shared");
        cell.filed.store(filed, Relaxed);
        cell.waker = waker;
    }

    /// The deadline's tick.
    pub(crate) fn tick(&self) -> u64 {
        self.tick.load(Relaxed)
    }

    /// A tick the entry is linked at or after.
    pub(crate) fn filed(&self) -> u64 {
        self.filed.load(Relaxed)
    }

    pub(crate) fn waker(&self) -> &Waker {
        &self.waker
    }

    /// The deadline moved to a later tick: the entry stays where it is and
    /// the firing pass files it again when it gets there. No lock.
    pub(crate) fn push_back(&self, tick: u64) {
        debug_assert!(tick > self.tick(), "push_back to an earlier tick");
        self.tick.store(tick, Relaxed);
    }

    /// Takes `other`'s ticks: a new cell for a new waker, for the same
    /// entry. Under the shard's lock.
    pub(crate) fn copy_ticks(&self, other: &DeadlineCell) {
        self.tick.store(other.tick(), Relaxed);
        self.filed.store(other.filed(), Relaxed);
    }

    /// The entry was linked at `tick`, the deadline's, by its `Sleep`. Under
    /// the shard's lock.
    pub(crate) fn moved_to(&self, tick: u64) {
        self.tick.store(tick, Relaxed);
        self.filed.store(tick, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::Waiter;

    /// A pending sleep takes 32 bytes in its shard's slab: a `Waiter` is a
    /// waker or the cell's pointer in the waker's 16 bytes, and the slab's
    /// own tag finds room in the entry's tick (the `Waiter` had used up the
    /// waker's niche, and every place had grown to 40 bytes).
    #[test]
    fn a_pending_sleep_takes_32_bytes_in_the_slab() {
        assert_eq!(std::mem::size_of::<Waiter>(), 16);
        assert_eq!(crate::wheel::slab_place_size::<Waiter>(), 32);
    }
}
