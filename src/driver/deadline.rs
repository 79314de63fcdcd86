//! The deadlines a `Sleep` pushes back without the lock, kept by its shard
//! in pages indexed by the entry's key.
//!
//! # Moving a deadline later without the lock
//!
//! An idle timeout is pushed back on every frame of its connection and
//! almost never fires. The first time a registered `Sleep` is reset to a
//! later tick, its shard *tracks* its entry ([`Deadlines::track`]): the new
//! deadline's tick goes into the entry's [`Slot`], which the `Sleep` reaches
//! through the page it keeps, and the entry stays where it is. From then on
//! a reset to a later tick is one store into the slot
//! ([`Slot::push_back`]), with no lock and no clock read. When the firing
//! pass reaches the entry (its slot cascades, or its tick fires), it asks
//! the shard ([`Deadlines::refile`]) and, if the deadline has moved past the
//! entry's tick, links the entry at the new tick instead of waking the task:
//! the entry moves once per wait, in the driver, under the lock the driver
//! holds anyway, rather than on resets.
//!
//! Never early: a pass that reads an old tick (the store is racing it) fires
//! the entry and wakes the task; its poll finds the deadline not passed by
//! the clock and links the entry again (`SleepEntry::rearm`). Nothing is
//! lost: the entry stays linked all along, at or before its deadline's tick.
//!
//! The slot also keeps `filed`, a tick the entry is linked at or after, for
//! the lock-free poll: written under the shard's lock only (as the entry is
//! tracked, by the pass that refiles the entry, and by the `Sleep` when it
//! moves the entry itself),
//! before the pass raises the shard's `fired_upto` past it. Only the
//! `Sleep`'s own writes ever lower it, so any value of it the `Sleep` read
//! or wrote stays a tick the entry is linked at or after: the `Sleep` keeps
//! the last one (`State::Tracked` in `entry.rs`; or an earlier tick, or
//! none if it lies 2^24 - 1 ticks or more below the deadline's, see `Filed`
//! there) and its poll reads the slot only once `fired_upto` reaches that
//! (or the driver is not planned at or before it, or none is kept), about
//! once per refile rather than on every frame. See
//! "Polling without the lock" in `entry.rs`; the loom models
//! `loom_lock_free_poll_racing_a_refiling_pass` and
//! `loom_lock_free_poll_racing_a_second_refiling_pass` check it, and
//! `loom_reset_later_racing_a_refiling_pass` the store racing the pass.
//!
//! # Why pages, not a cell per `Sleep`
//!
//! The slot of key `k` is slot `k % SLOTS` of page `k / SLOTS`, so the pass
//! finds it from the key, and the entry holds nothing but its waker (its
//! slab place stays 32 bytes). A page serves every key of its range, one
//! `Sleep` at a time: a key is the `Sleep`'s from its registration to the
//! removal of its entry, which only that `Sleep` does (shutdown's scan
//! wakes entries, it does not take them). Pages are made when a key of
//! their range is first tracked and kept while the slab can hold such a
//! key; a cell allocated on each first push back had cost a connection's
//! first frame a `malloc` from glibc's slow path (236 of 353 instructions,
//! callgrind, 10k connections).
//!
//! # Invariants (under the shard's lock)
//!
//! 1. An entry is tracked (its slot's `tick` not 0) only while its `Sleep`
//!    is in `State::Tracked`: the critical section that takes a tracked
//!    entry out, fires it, or finds it fired and re-arms it untracks it
//!    ([`Deadlines::untrack`]), and the `Sleep` leaves `State::Tracked`
//!    around that section, before anything else can run. A tracked entry's
//!    page is in `pages`, and it is the page its `Sleep` holds.
//! 2. The slot of an entry that is not tracked holds tick 0, which the pass
//!    reads as "not moved" ([`Deadlines::refile`] moves an entry only to a
//!    tick after the one it is due at). So a key given back never carries
//!    its last `Sleep`'s deadline to the next one, and an entry of a range
//!    with no page costs the pass one bounds check. A tracked deadline is
//!    never tick 0: it was pushed back past the old deadline's tick, or
//!    moved to a tick not yet fired, which is 1 or later.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::sync::AtomicU64;
use crate::wheel::Key;

/// Slots a page holds: 256 bytes. A page is made whole for the first key of
/// its range that is tracked, so while few are (the first frames of new
/// connections, spread over the keys), small pages waste less: a server's
/// heap just after 100k connections came up was 20 bytes a connection
/// higher than with a cell per `Sleep` with pages of 64 slots, 8 to 12 with 16
/// (`docs/benchmarks.md`, "Deadline pages, built"). Fewer under loom,
/// whose models pay for every atomic they make.
#[cfg(not(tokio_wheel_loom))]
const SLOTS: usize = 16;
#[cfg(tokio_wheel_loom)]
const SLOTS: usize = 4;

/// The pushed-back deadlines of one shard's sleeps. Under the shard's lock;
/// see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    /// Page `k / SLOTS`, made when a key of its range is first tracked.
    pages: Vec<Option<Arc<Page>>>,
}

/// [`SLOTS`] slots, shared by the shard and the tracked `Sleep`s of its
/// range.
#[derive(Debug)]
pub(crate) struct Page {
    slots: [Slot; SLOTS],
}

/// A tracked entry's deadline, shared by its `Sleep` and the firing pass.
/// 16 bytes: four to a cache line, none across two.
#[derive(Debug)]
#[repr(align(16))]
pub(crate) struct Slot {
    /// The tick of the `Sleep`'s deadline, 0 while not tracked (invariant
    /// 2). Written by the `Sleep`, without the lock when it moves later;
    /// read by the firing pass.
    tick: AtomicU64,
    /// A tick the entry is linked at or after (or fired at): written under
    /// the shard's lock only; read by the lock-free poll when the value its
    /// `Sleep` keeps no longer proves the entry pending (see
    /// `State::Tracked` in `entry.rs`).
    filed: AtomicU64,
}

impl Deadlines {
    /// Tracks `key`'s entry, linked at `filed`, for a deadline at `tick`
    /// (1 or later); returns the page the `Sleep` keeps. A page not made yet
    /// is made here, under the lock: once per [`SLOTS`] keys.
    pub(crate) fn track(&mut self, key: Key, tick: u64, filed: u64) -> Arc<Page> {
        let i = key as usize / SLOTS;
        if i >= self.pages.len() {
            self.pages.resize(i + 1, None);
        }
        let page = self.pages[i].get_or_insert_with(Page::new);
        let slot = page.slot(key);
        debug_assert_eq!(slot.tick.load(Relaxed), 0, "key {key} tracked twice");
        debug_assert_ne!(tick, 0, "tick 0 says not tracked");
        slot.tick.store(tick, Relaxed);
        slot.filed.store(filed, Relaxed);
        page.clone()
    }

    /// The entry of `key` is no longer tracked: its `Sleep` leaves
    /// `State::Tracked` (invariant 1).
    pub(crate) fn untrack(&self, key: Key) {
        self.slot(key)
            .expect("a tracked key has its page")
            .untrack();
    }

    /// Whether `key`'s entry is tracked, for the assertions of the entry's
    /// paths.
    pub(crate) fn is_tracked(&self, key: Key) -> bool {
        self.slot(key)
            .is_some_and(|slot| slot.tick.load(Relaxed) != 0)
    }

    /// Key `key`'s slot, if its page is made.
    #[inline]
    fn slot(&self, key: Key) -> Option<&Slot> {
        let page = self.pages.get(key as usize / SLOTS)?.as_ref()?;
        Some(page.slot(key))
    }

    /// The [`Refile`](crate::wheel::Refile) of the sleeps' wheel: the tick
    /// a tracked entry's deadline was pushed back to, if it is after `due`,
    /// which the entry is now filed at. An entry that is not tracked reads
    /// tick 0, if its range has a page at all (invariant 2), and stays.
    #[inline]
    pub(crate) fn refile(&self, key: Key, due: u64) -> Option<u64> {
        let slot = self.slot(key)?;
        let tick = slot.tick.load(Relaxed);
        (tick > due).then(|| {
            slot.filed.store(tick, Relaxed);
            tick
        })
    }

    /// Gives back the pages past a slab of `capacity` places, which holds no
    /// key of theirs: called after a removal from the sleeps' wheel, which
    /// may have shrunk its slab. Inline for its common case, nothing to
    /// give back.
    #[inline]
    pub(crate) fn fit(&mut self, capacity: usize) {
        let needed = capacity.div_ceil(SLOTS);
        if self.pages.len() > needed {
            self.shrink(needed);
        }
    }

    #[cold]
    #[inline(never)]
    fn shrink(&mut self, pages: usize) {
        debug_assert!(
            self.pages[pages..]
                .iter()
                .flatten()
                .all(|page| page.slots.iter().all(|slot| slot.tick.load(Relaxed) == 0)),
            "a page past the slab holds a tracked key"
        );
        self.pages.truncate(pages);
        self.pages.shrink_to_fit();
    }

    /// How many pages are made, for the tests.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> usize {
        self.pages.iter().flatten().count()
    }
}

impl Page {
    fn new() -> Arc<Self> {
        Arc::new(Page {
            slots: std::array::from_fn(|_| Slot {
                tick: AtomicU64::new(0),
                filed: AtomicU64::new(0),
            }),
        })
    }

    /// Key `key`'s slot.
    #[inline]
    pub(crate) fn slot(&self, key: Key) -> &Slot {
        &self.slots[key as usize % SLOTS]
    }
}

impl Slot {
    /// A tick the entry is linked at or after.
    #[inline]
    pub(crate) fn filed(&self) -> u64 {
        self.filed.load(Relaxed)
    }

    /// The entry is no longer tracked (invariant 1): under the shard's lock,
    /// by its `Sleep`, as it leaves `State::Tracked`.
    fn untrack(&self) {
        debug_assert_ne!(
            self.tick.load(Relaxed),
            0,
            "untracking an entry not tracked"
        );
        self.tick.store(0, Relaxed);
    }

    /// The deadline moved to a later tick: the entry stays where it is and
    /// the firing pass files it again when it gets there. No lock.
    #[inline]
    pub(crate) fn push_back(&self, tick: u64) {
        debug_assert!(
            tick > self.tick.load(Relaxed),
            "push_back to an earlier tick"
        );
        self.tick.store(tick, Relaxed);
    }

    /// The entry was linked at `tick`, the deadline's, by its `Sleep`. Under
    /// the shard's lock.
    pub(crate) fn moved_to(&self, tick: u64) {
        self.tick.store(tick, Relaxed);
        self.filed.store(tick, Relaxed);
    }
}

#[cfg(all(test, not(tokio_wheel_loom)))]
mod tests {
    use std::sync::Arc;
    use std::task::Waker;

    use super::{Deadlines, SLOTS};
    use crate::wheel::Key;

    /// A pending sleep takes 32 bytes in its shard's slab: its entry holds
    /// the waker alone (16 bytes), and the slab's own tag finds room in the
    /// entry's tick.
    #[test]
    fn a_pending_sleep_takes_32_bytes_in_the_slab() {
        assert_eq!(crate::wheel::slab_place_size::<Waker>(), 32);
        assert_eq!(std::mem::size_of::<super::Slot>(), 16);
    }

    #[test]
    fn only_a_tracked_entry_is_refiled() {
        let mut d = Deadlines::default();
        assert_eq!(d.refile(5, 10), None, "no page at all");
        let page = d.track(5, 30, 10);
        assert_eq!(d.refile(6, 10), None, "a key of the same page, not tracked");
        assert_eq!(d.refile(5, 30), None, "not after the tick it is due at");
        page.slot(5).push_back(40);
        assert_eq!(d.refile(5, 30), Some(40));
        assert_eq!(page.slot(5).filed(), 40, "told where it is filed");
        d.untrack(5);
        assert!(!d.is_tracked(5));
        assert_eq!(d.refile(5, 10), None, "a slot let go of is never refiled");
    }

    #[test]
    fn a_key_tracked_again_starts_from_what_its_new_sleep_wrote() {
        let mut d = Deadlines::default();
        let page = d.track(3, 100, 10);
        d.untrack(3);
        let again = d.track(3, 20, 10);
        assert!(Arc::ptr_eq(&page, &again), "one page for its range");
        assert_eq!(d.refile(3, 10), Some(20));
    }

    #[test]
    fn pages_are_made_for_the_ranges_tracked_and_given_back_past_the_slab() {
        let mut d = Deadlines::default();
        let far = (5 * SLOTS) as Key;
        d.track(1, 9, 1);
        d.track(far, 9, 1);
        d.untrack(far);
        assert_eq!(d.pages(), 2, "only the ranges tracked");
        d.fit(6 * SLOTS);
        assert_eq!(d.pages(), 2, "the slab still holds the far range");
        d.fit(SLOTS);
        assert_eq!(d.pages(), 1);
        assert!(d.is_tracked(1), "the first page kept its key");
        d.untrack(1);
        d.fit(0);
        assert_eq!(d.pages(), 0);
    }
}
