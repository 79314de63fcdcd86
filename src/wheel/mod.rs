//! The timing wheel as a plain data structure: no clock, no Tokio, no locks,
//! no wakers. It is tested, benchmarked and model-checked on its own.
//!
//! A [`TimerWheel<T>`] keeps values of `T` (a sleep's waker in the crate) until an
//! absolute tick number. Ticks are whole multiples of the wheel's resolution
//! counted from an origin; the wheel itself never looks at a clock. The owner
//! tells it how far time has got ([`TimerWheel::advance`]) and asks it to fire
//! the entries of a tick ([`TimerWheel::fire_within`]).
//!
//! # Levels
//!
//! The wheel is hierarchical (Varghese and Lauck's scheme 7, as in Kafka,
//! Linux before 2016 and `tokio::time`): a level 0 of one-tick slots, a
//! level 1 of 512 slots of one *revolution* (`slots` ticks) each, and
//! above it levels of 64 slots, each slot 64 times as wide as one of the
//! level below (512 times at level 2; `level.rs` has the geometry, and why
//! level 1 is the wide one). Level 0 is a ring of two revolutions: the one
//! the wheel's position `pos` is in, and the next.
//!
//! ```text
//!  level 2  [        ][ 512 * slots ticks each ][        ] ...
//!  level 1  [    ][ slots ticks ][    ][    ][    ] ...
//!  level 0  [1][1][1][1][1][1][1][1] ... 2 * `slots` slots of one tick
//!              ▲ pos: the last tick fired
//! ```
//!
//! An entry sits at level 0 if its tick is in `pos`'s revolution or the
//! next, else at the level of the highest bit in which its tick differs
//! from `pos`. When `pos` reaches the slot of a level above 0 that an entry
//! is in, or the revolution before the one it lies in, its list *cascades*:
//! its entries are linked again, one level lower or more. So an entry moves
//! at most `levels - 1` times per tick it is filed at (once in its life,
//! unless its owner refiles it later: see [`TimerWheel::fire_within`]), and the cost of
//! firing a tick is that of the entries due and cascaded there: it never
//! grows with the number of entries pending further out (the one-level
//! wheel this replaced visited every pending entry once per revolution).
//!
//! # A revolution ahead
//!
//! A revolution's entries move into level 0 during the revolution before
//! it, not as the wheel enters it: entering a revolution takes the list
//! that holds the next one out of its upper slot (all of it lies in one
//! list: see [`TimerWheel::take_out_next`]) and *defers* it, to be linked
//! into level 0's ring in steps between ticks, before the revolution ends
//! (invariant 7). So the first tick of a revolution waits for nothing
//! (but a tick fired past `next_due`, by an owner whose view of it is old,
//! can enter a revolution whose list was not taken out, and links it
//! first). A
//! level-1 slot holds a revolution's worth of deadlines, and a million idle
//! timeouts registered within two seconds came up in three slots of some
//! 300 000 each: linked as the wheel entered each slot, they held up its
//! ticks for about 45 ms. For the wheel to move entries a revolution
//! early, its owner must visit that revolution: [`TimerWheel::next_due`]
//! answers, for an entry on an upper level, the first tick of the
//! revolution before the entry's.
//!
//! Every entry stores its *absolute* tick, so slots of upper levels keep a
//! bound on the earliest tick they hold, and the owner can never fire an
//! entry a revolution early. [`TimerWheel::next_due`] answers with that
//! bound (the revolution before it: see "A revolution ahead"), which is
//! exact unless a cancel took out the entry it named: then it is a tick in
//! the slot's range before all of the slot's entries, and visiting the
//! revolution before it takes out what is left of that revolution, which
//! makes the bounds exact again. So the owner visits at most one tick with
//! nothing to do per slot whose earliest entry was cancelled or moved (and
//! one per list deferred, unless it links those in between: see "Near and
//! far lists"), and no cancel or `next_due` ever walks a slot's list.
//!
//! Entries live in a [`slab::Slab`]; a slot only holds the key of its first
//! entry, and entries are doubly linked, so insert, cancel and reschedule are
//! O(1).
//!
//! # Near and far lists
//!
//! A slot of level 2 or above spans many level-0 revolutions, and holds
//! every entry filed in that range while the wheel was before it: with
//! idle timeouts of 30 s at 10 ms ticks, when level 1 had 64 slots, the
//! 40.96 s slot of level 2 that the wheel entered at a multiple of 40.96 s
//! held nearly all of a million connections' entries, and linking them
//! again held up the ticks after it for 80 to 110 ms. Only the entries in
//! the slot's first revolution can come due before the wheel leaves that
//! revolution, so each such slot keeps them in a list of their own, its
//! *near* list, and the rest in its *far* list. The near
//! list is the one taken out a revolution ahead; entering the slot *defers*
//! the far list: it is linked in steps between ticks
//! ([`TimerWheel::cascade_ahead`], by the driver task; the expiry queue's
//! consumers call [`TimerWheel::cascade_keys_ahead`]), and at the latest
//! before the first tick past that revolution ([`TimerWheel::fire_within`]
//! of it finishes it first), as the next revolution's list is. A firing
//! that follows `next_due` thus waits for no slot's entries at all.
//!
//! # Invariants
//!
//! 1. An entry is *pending* until it fires, then *fired* (`prev == FIRED`),
//!    holding a placeholder value if `fire` handed its value out, or still
//!    its value if it fired by `fire_keys_within`, `mark_fired` or `insert_fired`
//!    (for an owner that takes values later, as the expiry queue does). Fired
//!    entries are linked nowhere; they stay in the slab (so their keys stay
//!    valid) until their owner removes, re-arms or relinks them.
//! 2. `pos <= horizon`. `horizon` ([`elapsed`](TimerWheel::elapsed)) is how
//!    far the owner has advanced the wheel: registrations at or before it are
//!    refused as already due. `pos` is the last tick fired, or the one whose
//!    firing is unfinished (invariant 6): the levels are laid out relative
//!    to it. Every pending entry has `tick > pos` (or `tick == pos` while
//!    the firing of `pos` is unfinished); those at or before `horizon` are
//!    due and wait for [`TimerWheel::fire_within`].
//! 3. Every pending entry not in transit (invariants 6 and 7) is linked in
//!    slot `geometry.slot(geometry.level_of(tick, pos), tick)`: in its near
//!    list if `geometry.in_first_revolution(level, tick)`, else in its far
//!    list (levels 2 and up only). (`fire_within` keeps this as `pos` moves
//!    by cascading the slots that `pos` enters and the list of the next
//!    revolution; `link` computes the list from the current `pos`, and
//!    writes it into the `prev` of the list's first entry, `HEAD + list`,
//!    where `unlink` reads it.) It follows that level 0 holds only ticks
//!    of `pos`'s revolution and the next, in ring order after `pos`'s slot,
//!    and a level above holds entries in slots after the one `pos` is in,
//!    two revolutions or more after `pos`'s.
//! 4. A slot's bit in `occupied` is set exactly when its near or far list is
//!    non-empty.
//! 5. For an occupied slot `s` of level 2 or above, `min_ticks[s]` is at most
//!    the tick of every entry in `s` (both lists), and is itself a tick of
//!    `s`'s range (the tick of an entry linked in `s` since it was last
//!    empty, or the raised bound below): it is exact unless the entry it
//!    named was unlinked, which leaves it as it is (cancel stays O(1), and
//!    nothing walks the slot to make it exact), or its near list was taken
//!    out.
//!    [`TimerWheel::next_due`] answers with the first tick of the
//!    revolution before it (two revolutions or more after `pos`'s, so a
//!    later tick than `pos`); firing that tick takes out the list of the
//!    bound's revolution (or enters `s`, deferring its far list), to be
//!    relinked with exact bounds, and fires nothing if the named entry is
//!    gone. So a stale bound costs its owner at most one visit of a tick with
//!    nothing to do, once per time the slot's earliest entry is unlinked,
//!    and never a walk (the lists deferred may cost one more: invariant 7);
//!    each entry still moves down at most once per level for each tick it
//!    is filed at. Taking out a slot's near list raises its bound to the
//!    second revolution of its range if its far list is left. An empty slot
//!    has `min_ticks[s] == MAX`. Levels 0 and 1 need no bound (nor far
//!    lists): a slot of level 0 holds one tick, and one of level 1 one
//!    revolution, which its place in the level tells.
//! 6. An entry is *in transit* while its slot is being cascaded by a firing
//!    that ran out of budget ([`TimerWheel::fire_within`]): the near lists
//!    of the slots being cascaded sit in `transit`, one per level (their far
//!    lists beside them: invariant 7), `pos` is already
//!    at the tick being fired, and the first entry of each list has
//!    `prev == TRANSIT` (a slot's first entry has its list's `HEAD` mark). Only then
//!    is a near list in `transit[1..MAX_LEVELS]` (the next revolution's list
//!    is deferred apart: invariant 7), and `next_due` answers `pos` while the
//!    firing has something left to do (an entry in transit that must be
//!    linked before `pos` fires, or one in `pos`'s level-0 slot). Removing
//!    or moving an entry in transit takes it out of its list in O(1), as
//!    from a slot. A firing whose budget also counts the entries it fires
//!    ([`TimerWheel::fire_keys_within`]) may run out in `pos`'s level-0
//!    slot: the entries it has not reached stay linked there, and the
//!    firing is unfinished likewise.
//! 7. The far lists a cascade took out, and the list of the revolution after
//!    `pos`'s (at `transit[NEXT]`, taken out as `pos` entered its
//!    revolution), are *deferred* (also in transit, first entry `prev ==
//!    TRANSIT`) until `deferred_due`: the end of the revolution `pos`
//!    entered, when every entry in them is due at or after it (the next
//!    revolution's always are; a far list's are when `pos` entered its slot
//!    in its first revolution, or before its bound's revolution); otherwise
//!    `deferred_due` is that `pos`, and they are linked with the near lists
//!    before it fires. While any is left, `pos < deferred_due` or the firing
//!    of `pos` is unfinished, every entry in a far list lies in `pos`'s
//!    slot at its level, every entry of `transit[NEXT]` in the revolution
//!    after `pos`'s, no slot is cascaded (the wheel stays in `pos`'s
//!    revolution), and `next_due` answers `deferred_due` at the latest.

mod bitmap;
mod level;
#[cfg(test)]
mod proptests;

use std::num::NonZeroU64;

use bitmap::Bitmap;
use level::{Geometry, MAX_LEVELS};
use slab::Slab;

/// Identifies an entry in a [`TimerWheel`]. Valid from [`TimerWheel::insert`]
/// until [`TimerWheel::remove`]: firing does not invalidate it.
pub(crate) type Key = u32;

/// The end of a slot list.
const NIL: u32 = u32::MAX;

/// `prev` of a fired entry. Keys never reach it: see `alloc`.
const FIRED: u32 = u32::MAX - 1;

/// `prev` of the first entry of a list in transit (see
/// [`TimerWheel::fire_within`]). Keys never reach it either.
const TRANSIT: u32 = u32::MAX - 2;

/// The most lists a wheel has (`TimerWheel::heads`): level 0's ring of at
/// most 2 x 2^16 slots (`Builder::slots`), and a near and a far list for
/// each slot of the levels above it (512 at level 1, 64 at each of at most
/// 10 more).
const MAX_LISTS: u32 = 1 << 18;

/// `prev` of the first entry of list `l` of `TimerWheel::heads` is `HEAD +
/// l`: unlinking it finds its list without working out its level and slot
/// again. Keys stay below `HEAD` (see `alloc`).
const HEAD: u32 = TRANSIT - MAX_LISTS;

/// The list whose first entry has `prev`, if it is one.
fn head_of(prev: u32) -> Option<usize> {
    (HEAD..TRANSIT)
        .contains(&prev)
        .then(|| (prev - HEAD) as usize)
}

/// Where in `TimerWheel::transit` the list of the revolution after `pos`'s
/// waits to move into level 0's ring (invariant 7): the far list of level
/// 0, which has none of its own.
const NEXT: usize = MAX_LEVELS;

/// Slab capacity (in entries) above which an empty wheel frees its slab.
const SHRINK_ABOVE: usize = 1024;

/// A value the wheel can hold. When an entry fires its value is taken out
/// and a placeholder left in its place, which keeps entries as small as the
/// value itself (no `Option` around it: the entry of a 16-byte value is 32
/// bytes in the slab, not 40; see [`Tick`] for the slab's own tag).
pub(crate) trait Payload {
    /// A cheap stand-in for a fired entry's value.
    fn placeholder() -> Self;

    /// The tests' values that move later without the wheel say so here;
    /// their tests pass it as the `refile` of
    /// [`fire_within`](TimerWheel::fire_within) (see [`Refile`]).
    #[cfg(test)]
    fn refile(&self, due: u64) -> Option<u64> {
        let _ = due;
        None
    }
}

/// What the owner tells [`TimerWheel::fire_within`] and
/// [`TimerWheel::cascade_ahead`] of an entry they reach (the key, the
/// value, the tick it is due at: it fires, or its slot cascades): a tick
/// after that one that the owner has since moved it to without the wheel (a
/// deadline pushed back with no lock taken), where the wheel files it
/// instead; `None` to go on as its tick says. An owner that returns a tick
/// learns from that call that the entry is now filed there.
pub(crate) trait Refile<T>: Fn(Key, &T, u64) -> Option<u64> {}

impl<T, F: Fn(Key, &T, u64) -> Option<u64>> Refile<T> for F {}

/// The [`Refile`] of an owner that never moves an entry without the wheel.
pub(crate) fn stays<T>(_: Key, _: &T, _: u64) -> Option<u64> {
    None
}

/// The [`Refile`] of the tests: as each value's `Payload::refile` says.
#[cfg(test)]
pub(crate) fn by_value<T: Payload>(_: Key, value: &T, due: u64) -> Option<u64> {
    value.refile(due)
}

impl Payload for std::task::Waker {
    fn placeholder() -> Self {
        // Cloning the no-op waker touches no reference count.
        std::task::Waker::noop().clone()
    }
}

impl<T> Payload for Option<T> {
    fn placeholder() -> Self {
        None
    }
}

#[cfg(test)]
impl Payload for u32 {
    fn placeholder() -> Self {
        0
    }

    /// What the property tests pushed this value back to, if anything.
    fn refile(&self, due: u64) -> Option<u64> {
        proptests::pushed_back(*self, due)
    }
}

#[derive(Debug)]
struct Entry<T> {
    /// The value while pending; a placeholder once fired (invariant 1).
    value: T,
    /// The absolute tick at which the entry is due.
    tick: Tick,
    /// The previous entry in the list; at the head of list `l` of a slot,
    /// `HEAD + l`; `TRANSIT` at the head of a list in transit; `FIRED` if
    /// fired; `NIL` while linked nowhere.
    prev: u32,
    next: u32,
}

/// An entry's tick, stored plus one so that zero is free: `Slab` wraps each
/// entry in an enum of its own (a vacant place holds the next free key), and
/// that enum takes its tag from this niche. Without one, a 32-byte entry
/// takes 40 bytes in the slab, a quarter more per place, and half the
/// entries straddle two cache lines.
///
/// Ticks are at most `u64::MAX - 1` (the crate's clock saturates at
/// `MAX_TICK`); `new` saturates rather than wraps above it.
#[derive(Clone, Copy)]
struct Tick(NonZeroU64);

impl std::fmt::Debug for Tick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Tick {
    #[inline]
    fn new(tick: u64) -> Self {
        debug_assert!(tick < u64::MAX, "u64::MAX is not a tick");
        Tick(NonZeroU64::MIN.saturating_add(tick))
    }

    #[inline]
    fn get(self) -> u64 {
        self.0.get() - 1
    }
}

/// The bytes a slab place for an entry holding a `T` takes: `Slab` keeps
/// each place in an enum like `Place` (slab 0.4's is `Entry<T> { Vacant(usize),
/// Occupied(T) }`, private, with no `repr`), a vacant place holding the
/// next free key. For the size tests of the wheel's payloads; a slab release
/// that changed its enum would need this mirror changed too.
#[cfg(test)]
pub(crate) fn slab_place_size<T>() -> usize {
    #[allow(dead_code)]
    enum Place<T> {
        Vacant(usize),
        Occupied(T),
    }
    std::mem::size_of::<Place<Entry<T>>>()
}

impl<T> Entry<T> {
    fn is_fired(&self) -> bool {
        self.prev == FIRED
    }

    /// Hands out the value of an unlinked entry, marking it fired.
    fn take(&mut self) -> T
    where
        T: Payload,
    {
        self.prev = FIRED;
        std::mem::replace(&mut self.value, T::placeholder())
    }
}

/// Counters kept under whatever lock guards the wheel, so they cost nothing
/// extra to maintain.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Entries that were linked into a slot by `insert` or `renew`.
    pub(crate) registered: u64,
    /// Entries handed out by `fire` or by a reschedule to a due tick.
    pub(crate) fired: u64,
    /// Pending entries removed before they fired.
    pub(crate) cancelled: u64,
    /// Times an entry moved down a level as the wheel reached its slot.
    pub(crate) cascaded: u64,
    /// Times the wheel filed an entry at the later tick its owner gave
    /// ([`Refile`]) instead of firing or cascading it as it was.
    pub(crate) refiled: u64,
    /// Fired entries linked again by `rearm` (not counted in `registered`).
    pub(crate) rearmed: u64,
}

/// A hierarchical timing wheel keyed by absolute tick.
#[derive(Debug)]
pub(crate) struct TimerWheel<T> {
    entries: Slab<Entry<T>>,
    geometry: Geometry,
    /// First entry of each list, or `NIL`: every slot's (near) list, every
    /// level flat, then the far list of every slot of level 2 or above
    /// (`far_list`).
    heads: Box<[u32]>,
    occupied: Bitmap,
    /// Lower bound of the ticks in each slot of level 2 or above (invariant
    /// 5), indexed from the first slot of level 2 (`bound_of`).
    min_ticks: Box<[u64]>,
    /// The last tick fired, or the one being fired (invariant 2).
    pos: u64,
    /// Whether the firing of `pos` is under way: a [`fire_within`](Self::fire_within)
    /// ran out of budget before the lists in `transit` were linked again
    /// and `pos`'s level-0 slot fired, or a
    /// [`fire_keys_within`](Self::fire_keys_within) ran out in that slot.
    firing: bool,
    /// The lists taken out of the upper slots being cascaded into `pos`
    /// whose entries are not linked again yet, `NIL` if none: the near list
    /// of level `l` at `l`, only while a firing is unfinished (invariant 6),
    /// and its far list at `MAX_LEVELS + l`, until `deferred_due`
    /// (invariant 7); and the next revolution's list at `NEXT`, until
    /// `deferred_due` too.
    transit: [u32; 2 * MAX_LEVELS],
    /// The tick by which the deferred lists in `transit` must be linked
    /// again (invariant 7); `u64::MAX` once none is left to link.
    deferred_due: u64,
    /// How far the wheel has been advanced (invariant 2).
    horizon: u64,
    pending: usize,
    counters: Counters,
    /// Removals since the slab last shrank ([`after_remove`](Self::after_remove)).
    removed: usize,
    /// Whether `after_remove` shrank the slab since it was last freed: then
    /// it was large, and is freed when it runs empty even if now small.
    shrunk: bool,
}

impl<T> TimerWheel<T> {
    /// A wheel whose level 0 has `slots` slots (a power of two), advanced to
    /// tick `elapsed`.
    pub(crate) fn new(slots: usize, elapsed: u64) -> Self {
        let geometry = Geometry::new(slots);
        let total = geometry.total_slots();
        let bounded = total - geometry.first_slot(2);
        assert!(
            total + bounded <= MAX_LISTS as usize,
            "more lists than `HEAD` marks"
        );
        Self {
            entries: Slab::new(),
            geometry,
            heads: vec![NIL; total + bounded].into_boxed_slice(),
            occupied: Bitmap::new(total),
            min_ticks: vec![u64::MAX; bounded].into_boxed_slice(),
            pos: elapsed,
            firing: false,
            transit: [NIL; 2 * MAX_LEVELS],
            deferred_due: u64::MAX,
            horizon: elapsed,
            pending: 0,
            counters: Counters::default(),
            removed: 0,
            shrunk: false,
        }
    }

    /// The tick the wheel has been advanced to.
    pub(crate) fn elapsed(&self) -> u64 {
        self.horizon
    }

    /// Entries registered and neither fired nor removed.
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    pub(crate) fn counters(&self) -> Counters {
        self.counters
    }

    /// Registers `value` to fire at `tick`.
    ///
    /// Returns the value back if `tick` is not after [`elapsed`](Self::elapsed):
    /// such a timer is already due, and the caller completes it at once.
    pub(crate) fn insert(&mut self, tick: u64, value: T) -> Result<Key, T> {
        if tick <= self.horizon {
            return Err(value);
        }
        let key = self.alloc(Entry {
            value,
            tick: Tick::new(tick),
            prev: NIL,
            next: NIL,
        });
        self.link(key);
        self.pending += 1;
        self.counters.registered += 1;
        Ok(key)
    }

    /// Stores `entry` in the slab; its key stays below `HEAD`, where the
    /// marks of `prev` begin.
    fn alloc(&mut self, entry: Entry<T>) -> Key {
        let slab_key = self.entries.insert(entry);
        Key::try_from(slab_key)
            .ok()
            .filter(|&k| k < HEAD)
            .unwrap_or_else(|| panic!("a wheel shard holds at most {HEAD} timers"))
    }

    /// Removes the entry for good. Returns its value if it was still pending.
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        if self.entries[key as usize].is_fired() {
            self.entries.remove(key as usize);
            self.after_remove();
            return None;
        }
        self.unlink(key);
        self.pending -= 1;
        self.counters.cancelled += 1;
        let value = self.entries.remove(key as usize).value;
        self.after_remove();
        Some(value)
    }

    /// Whether the entry has fired (and not been re-armed since).
    pub(crate) fn is_fired(&self, key: Key) -> bool {
        self.entries[key as usize].is_fired()
    }

    /// Mutable access to a pending entry's value.
    pub(crate) fn value_mut(&mut self, key: Key) -> Option<&mut T> {
        let entry = &mut self.entries[key as usize];
        (!entry.is_fired()).then_some(&mut entry.value)
    }

    /// The value of the entry at `key`, pending or fired (a fired entry's
    /// value is a placeholder unless it fired by [`fire_keys_within`](Self::fire_keys_within)
    /// or [`mark_fired`](Self::mark_fired)); `None` if no entry is there.
    /// Unlike the methods that take a key returned by `insert`, this one
    /// accepts any key: owners that hand keys out check them with it.
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        self.entries.get(key as usize).map(|e| &e.value)
    }

    /// Mutable access to the value of the entry at `key`, pending or fired;
    /// see [`get`](Self::get).
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        self.entries.get_mut(key as usize).map(|e| &mut e.value)
    }

    /// The tick the entry is linked at (pending) or fired at.
    pub(crate) fn tick_of(&self, key: Key) -> u64 {
        self.entries[key as usize].tick.get()
    }

    /// Adds an entry that is already fired at `tick`, its value in place: a
    /// timer that was due when it was made, whose owner still wants a key for
    /// it. It is linked nowhere; [`relink`](Self::relink) makes it pending.
    pub(crate) fn insert_fired(&mut self, tick: u64, value: T) -> Key {
        let key = self.alloc(Entry {
            value,
            tick: Tick::new(tick),
            prev: FIRED,
            next: NIL,
        });
        self.counters.registered += 1;
        self.counters.fired += 1;
        key
    }

    /// Marks the entry fired at `tick`, leaving its value in place: a pending
    /// entry is unlinked first (its owner found it due out of turn); a fired
    /// one only gets its new tick.
    pub(crate) fn mark_fired(&mut self, key: Key, tick: u64) {
        if !self.is_fired(key) {
            self.unlink(key);
            self.pending -= 1;
            self.counters.fired += 1;
        }
        let entry = &mut self.entries[key as usize];
        entry.prev = FIRED;
        entry.tick = Tick::new(tick);
    }

    /// Makes a fired entry pending again at `tick` with the value it holds
    /// (see [`fire_keys_within`](Self::fire_keys_within)). Returns `false`, changing
    /// nothing, if `tick` is already due.
    ///
    /// # Panics
    /// If the entry is pending.
    pub(crate) fn relink(&mut self, key: Key, tick: u64) -> bool {
        assert!(self.is_fired(key), "relink of a pending entry");
        if tick <= self.horizon {
            return false;
        }
        self.entries[key as usize].tick = Tick::new(tick);
        self.link(key);
        self.pending += 1;
        self.counters.rearmed += 1;
        true
    }

    /// Removes the entry for good, pending or fired, and returns the value it
    /// holds (for an entry fired by [`fire_within`](Self::fire_within), the placeholder).
    pub(crate) fn take(&mut self, key: Key) -> T {
        if !self.is_fired(key) {
            self.unlink(key);
            self.pending -= 1;
            self.counters.cancelled += 1;
        }
        let value = self.entries.remove(key as usize).value;
        self.after_remove();
        value
    }

    /// Removes every entry, pending or fired, handing `(key, value)` to
    /// `out` in key order.
    pub(crate) fn take_all(&mut self, out: &mut Vec<(Key, T)>) {
        let keys: Vec<Key> = self.entries.iter().map(|(k, _)| k as Key).collect();
        out.extend(keys.into_iter().map(|k| (k, self.take(k))));
    }

    /// Moves a pending entry to `tick`, in O(1). If `tick` is already due the
    /// entry fires instead and its value is returned for the caller to
    /// complete.
    ///
    /// # Panics
    /// If the entry has fired: use [`rearm`](Self::rearm) for that.
    pub(crate) fn reschedule(&mut self, key: Key, tick: u64) -> Option<T>
    where
        T: Payload,
    {
        if tick <= self.horizon {
            return Some(self.fire_now(key));
        }
        assert!(!self.is_fired(key), "reschedule of a fired entry");
        self.unlink(key);
        self.entries[key as usize].tick = Tick::new(tick);
        self.link(key);
        None
    }

    /// Fires a pending entry out of turn, handing out its value: its owner
    /// found it due before the wheel reached its tick.
    ///
    /// # Panics
    /// If the entry has fired.
    pub(crate) fn fire_now(&mut self, key: Key) -> T
    where
        T: Payload,
    {
        assert!(!self.is_fired(key), "firing a fired entry");
        self.unlink(key);
        self.pending -= 1;
        self.counters.fired += 1;
        self.entries[key as usize].take()
    }

    /// Makes a fired entry pending again at `tick` with a new value, reusing
    /// its key. Returns the value back if `tick` is already due.
    ///
    /// # Panics
    /// If the entry is pending: use [`reschedule`](Self::reschedule) for that.
    pub(crate) fn rearm(&mut self, key: Key, tick: u64, value: T) -> Result<(), T> {
        self.link_fired(key, tick, value)?;
        self.counters.rearmed += 1;
        Ok(())
    }

    /// [`rearm`](Self::rearm) for a new timer: the owner of a fired entry
    /// took its fire and registers a new deadline under the same key (an
    /// interval's next tick), counted in `registered`, as an
    /// [`insert`](Self::insert) would be.
    ///
    /// # Panics
    /// If the entry is pending.
    pub(crate) fn renew(&mut self, key: Key, tick: u64, value: T) -> Result<(), T> {
        self.link_fired(key, tick, value)?;
        self.counters.registered += 1;
        Ok(())
    }

    /// Links the fired entry `key` at `tick` with `value`, or returns the
    /// value back if `tick` is due.
    fn link_fired(&mut self, key: Key, tick: u64, value: T) -> Result<(), T> {
        assert!(self.is_fired(key), "relinking a pending entry");
        if tick <= self.horizon {
            return Err(value);
        }
        let entry = &mut self.entries[key as usize];
        entry.tick = Tick::new(tick);
        entry.value = value;
        self.link(key);
        self.pending += 1;
        Ok(())
    }

    /// Moves the wheel to tick `now` (a smaller `now` is ignored). From here
    /// on, registrations at or before `now` are refused as due; entries that
    /// became due are handed out by [`fire_within`](Self::fire_within).
    pub(crate) fn advance(&mut self, now: u64) {
        self.horizon = self.horizon.max(now);
    }

    /// The earliest tick the owner must fire: something may be due there,
    /// or entries are to be moved ahead of time; `None` if nothing is
    /// pending.
    ///
    /// No pending entry is due before it. It is the earliest pending tick if
    /// that lies in `pos`'s revolution or the next (level 0); for an entry
    /// further out, the first tick of the revolution before the entry's, so
    /// that the wheel takes that revolution's entries out a revolution
    /// ahead ("A revolution ahead"): firing it fires nothing unless
    /// something is due there, and the next answer is later. Both may be at
    /// or before [`elapsed`](Self::elapsed) when the wheel had nothing to
    /// fire for a while (its position lags behind it), and then are fired at
    /// once. For an upper slot whose earliest entry was unlinked, the tick
    /// comes from its stale bound (invariant 5); and it is at most the tick
    /// deferred lists are due by (invariant 7), earlier than any entry in
    /// them: firing that tick links them first. Costs a look at level 0's
    /// occupancy words after `pos`, up to nine of level 1's 512 bits, and a
    /// word or two for each level above; it never
    /// walks a slot. While a firing is unfinished it is that firing's tick.
    pub(crate) fn next_due(&self) -> Option<u64> {
        if self.unfinished() {
            return Some(self.pos);
        }
        if self.pending == 0 {
            // Nothing linked and nothing deferred: no bit to look for. The
            // driver asks every shard on every pass, and most of a
            // runtime's shards may be empty (a current-thread runtime
            // registers in one): the scan of every level's words cost about
            // 300 instructions a shard.
            return None;
        }
        let linked = self.next_linked();
        if self.has_deferred() {
            return Some(linked.map_or(self.deferred_due, |t| t.min(self.deferred_due)));
        }
        linked
    }

    /// The tick by which the owner must fire the wheel for an entry at
    /// `tick`: `tick` itself if that lies in level 0's ring (`pos`'s
    /// revolution or the next), else the first tick of the revolution before
    /// its own, where the wheel takes that revolution's entries out to move
    /// them into the ring ahead of time (what [`next_due`](Self::next_due)
    /// answers for it). An owner that registers an entry plans its next
    /// visit by this, not by `tick`, or the revolution is linked only as it
    /// begins.
    pub(crate) fn due_by(&self, tick: u64) -> u64 {
        let g = self.geometry;
        if g.level_of(tick, self.pos) == 0 {
            tick
        } else {
            g.revolution_before(tick)
        }
    }

    /// [`next_due`](Self::next_due) among the entries linked in slots.
    fn next_linked(&self) -> Option<u64> {
        let g = self.geometry;
        // Level 0 holds the earliest ticks, in ring order from `pos`'s slot:
        // the rest of `pos`'s revolution, then the next one (invariant 3).
        let ring = g.ring0();
        let start = g.revolution_start(self.pos);
        let base = g.slot(0, start);
        let from = g.slot(0, self.pos) + 1;
        if let Some(slot) = self
            .occupied
            .next_one(from, ring)
            .or_else(|| self.occupied.next_one(0, base))
        {
            return Some(start + ((slot + ring - base) & (ring - 1)) as u64);
        }
        // Then the lowest level above with anything in it: its entries are
        // all earlier than those of the levels above it.
        for level in 1..g.levels() {
            let first = g.first_slot(level);
            let from = g.slot(level, self.pos) + 1;
            if let Some(slot) = self.occupied.next_one(from, first + g.slots_of(level)) {
                // At level 1 the slot's revolution, else a bound in the
                // slot's range (invariant 5): two revolutions or more after
                // `pos`'s. The wheel visits the first tick of the revolution
                // before it, whose firing takes that revolution's entries
                // out, to be moved into level 0's ring in steps before it
                // ends (invariant 7).
                let bound = if level == 1 {
                    g.level1_slot_start(slot, self.pos)
                } else {
                    self.min_ticks[self.bound_of(slot)]
                };
                let visit = g.revolution_before(bound);
                debug_assert!(visit > self.pos, "bound {bound} within a revolution of pos");
                return Some(visit);
            }
        }
        None
    }

    /// The index in `min_ticks` of slot `slot`, of level 2 or above.
    fn bound_of(&self, slot: usize) -> usize {
        slot - self.geometry.first_slot(2)
    }

    /// [`fire_within`](Self::fire_within) with no budget: for the tests (the
    /// crate's owners fire with one, or without cascades).
    /// Entries move later as their values' `Payload::refile` says.
    #[cfg(test)]
    pub(crate) fn fire(&mut self, tick: u64, out: &mut Vec<T>) -> usize
    where
        T: Payload,
    {
        let mut unbounded = usize::MAX;
        self.fire_within(tick, &mut unbounded, out, by_value)
            .expect("an unbounded firing finishes")
    }

    /// Fires `tick`: pushes the values of every entry due at it to `out` and
    /// returns how many fired. First cascades the slots of the upper levels
    /// that the wheel enters on its way to `tick`: their near lists, and
    /// their far lists when they cannot be deferred (invariant 7); a tick
    /// past the revolution that far lists were deferred in links those
    /// first.
    ///
    /// `tick` must not be after [`elapsed`](Self::elapsed), nor after the
    /// [`next_due`](Self::next_due) of the owner's last look: the driver
    /// fires ticks in order, so both hold. A tick past the current
    /// `next_due` (timers registered since the owner looked) is fired
    /// correctly, but the revolution it enters may not have been taken out
    /// a revolution ahead: its list is linked first. A tick at or before the
    /// last one fired fires nothing, and so does a stale bound that
    /// `next_due` answered with (after cascading).
    ///
    /// An entry that `refile` says was moved later (see [`Refile`]) is
    /// filed at its new tick instead, here or as its slot cascades.
    ///
    /// At most `*budget` cascaded entries are linked again (counted off
    /// `*budget`). If the budget runs out first it returns `None`, having
    /// fired nothing of `tick`, and leaves the firing unfinished (invariant
    /// 6; or not yet begun, if it ran out linking deferred lists before
    /// entering `tick`'s slots: invariant 7): the owner may let go of the wheel (its lock) and use it as usual
    /// meanwhile (insert, remove, reschedule; registrations at or before
    /// [`elapsed`](Self::elapsed) are still refused as due), and `next_due`
    /// answers `tick` until a later `fire_within` of `tick` finishes it. So
    /// a slot of a million entries cascades in steps, between which the
    /// owner's thread can do other work, rather than in one go.
    pub(crate) fn fire_within(
        &mut self,
        tick: u64,
        budget: &mut usize,
        out: &mut Vec<T>,
        refile: impl Refile<T>,
    ) -> Option<usize>
    where
        T: Payload,
    {
        self.fire_each(tick, budget, false, refile, |_, entry| {
            out.push(entry.take())
        })
    }

    /// Links at most `*budget` entries of the deferred lists (the next
    /// revolution's, and far lists) again (invariant 7), relative to the
    /// wheel's position; `true` once none is left. The owner calls it between ticks, so that the firing of the
    /// first tick past the revolution they were deferred in does not wait
    /// for all of them. Fires nothing. `refile` as for
    /// [`fire_within`](Self::fire_within).
    pub(crate) fn cascade_ahead(&mut self, budget: &mut usize, refile: impl Refile<T>) -> bool {
        self.link_deferred(budget, &refile)
    }

    /// [`cascade_ahead`](Self::cascade_ahead) for an owner that fires with
    /// [`fire_keys_within`](Self::fire_keys_within): each entry is linked at the tick it
    /// was filed at, since that owner moves entries whose deadline changed
    /// itself, as they fire.
    pub(crate) fn cascade_keys_ahead(&mut self, budget: &mut usize) -> bool {
        self.link_deferred(budget, &stays)
    }

    /// Whether deferred lists are left to link (invariant 7).
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred_due != u64::MAX && self.transit[MAX_LEVELS..].iter().any(|&h| h != NIL)
    }

    /// [`fire_keys_within`](Self::fire_keys_within) with no budget.
    #[cfg(test)]
    pub(crate) fn fire_keys(&mut self, tick: u64, out: &mut Vec<Key>) -> usize {
        let mut unbounded = usize::MAX;
        self.fire_keys_within(tick, &mut unbounded, out)
            .expect("an unbounded firing finishes")
    }

    /// Fires `tick` as [`fire_within`](Self::fire_within) does, but leaves
    /// each fired entry's value in place and pushes its key to `out`: the
    /// owner takes the values later with [`take`](Self::take) (or links an
    /// entry again with [`relink`](Self::relink)). Same preconditions as
    /// `fire_within`.
    ///
    /// The budget counts the entries fired as well as those cascades link
    /// again, so that the owner's call is short however many entries one
    /// tick holds. If it runs out first this returns `None` and leaves the
    /// firing unfinished (invariant 6): the keys of the entries it fired, if
    /// any, are in `out` (they fired all the same), the rest wait in transit
    /// or in `tick`'s level-0 slot, and `next_due` answers `tick` until a
    /// later call finishes it. Otherwise it returns how many fired.
    pub(crate) fn fire_keys_within(
        &mut self,
        tick: u64,
        budget: &mut usize,
        out: &mut Vec<Key>,
    ) -> Option<usize> {
        self.fire_each(tick, budget, true, stays, |key, entry| {
            entry.prev = FIRED;
            out.push(key);
        })
    }

    /// The body of [`fire_within`](Self::fire_within) and
    /// [`fire_keys_within`](Self::fire_keys_within): `refile` as
    /// [`Refile`]; `mark` must mark the unlinked entry fired.
    /// `counted`: the entries of `tick`'s slot count off `*budget` too, and
    /// those past it stay in the slot.
    #[inline]
    fn fire_each(
        &mut self,
        tick: u64,
        budget: &mut usize,
        counted: bool,
        refile: impl Refile<T>,
        mut mark: impl FnMut(Key, &mut Entry<T>),
    ) -> Option<usize> {
        debug_assert!(
            tick <= self.horizon,
            "firing a tick the wheel has not reached"
        );
        if self.firing && tick != self.pos && !self.unfinished() {
            // Every entry it had left was removed or moved.
            self.firing = false;
        }
        if self.firing {
            // Going on with it. A caller that asks for another tick gets
            // `pos`'s all the same (due: `pos` is not after `elapsed`), so
            // that nothing in transit is dropped; `next_due` says `pos`.
            debug_assert_eq!(tick, self.pos, "an unfinished firing is finished first");
        } else if tick <= self.pos {
            return Some(0);
        } else {
            if tick >= self.deferred_due {
                // Leaving the revolution the lists were deferred in:
                // they are linked first, relative to the old `pos`, and
                // the slots `tick` enters take them along. `next_due`
                // said `deferred_due`, so this is that tick, and it says
                // so again if the budget runs out here.
                debug_assert!(
                    tick == self.deferred_due || !self.has_deferred(),
                    "a tick after next_due"
                );
                if !self.link_deferred(budget, &refile) {
                    return None;
                }
            }
            self.take_out_cascading(tick);
        }
        if !self.link_transit(budget, &refile) {
            return None;
        }
        self.firing = false;
        let tick = self.pos;
        let slot = self.geometry.slot(0, tick);
        let mut cur = std::mem::replace(&mut self.heads[slot], NIL);
        self.occupied.clear(slot);
        let mut fired = 0;
        while cur != NIL {
            if counted {
                if *budget == 0 {
                    // The rest stays in the slot, whose firing is
                    // unfinished (invariant 6): its first entry becomes
                    // the slot's first again.
                    self.entries[cur as usize].prev = HEAD + slot as u32;
                    self.heads[slot] = cur;
                    self.occupied.set(slot);
                    self.firing = true;
                    break;
                }
                *budget -= 1;
            }
            let key = cur;
            let entry = &mut self.entries[key as usize];
            debug_assert_eq!(entry.tick.get(), tick, "a level-0 slot holds one tick");
            cur = entry.next;
            entry.next = NIL;
            if let Some(later) = refile(key, &entry.value, tick) {
                // Linked in another slot than this one, which is detached:
                // a later tick of level 0's revolution, or a level above.
                entry.tick = Tick::new(later);
                self.link(key);
                self.counters.refiled += 1;
                continue;
            }
            mark(key, entry);
            debug_assert!(entry.is_fired(), "`mark` marks the entry fired");
            fired += 1;
        }
        self.pending -= fired;
        self.counters.fired += fired as u64;
        (!self.firing).then_some(fired)
    }

    /// Whether a firing left unfinished still has something to do: near
    /// lists in transit, deferred lists due by `pos`, or entries in `pos`'s
    /// level-0 slot (invariants 6 and 7).
    fn unfinished(&self) -> bool {
        self.firing
            && (self.transit[..MAX_LEVELS].iter().any(|&head| head != NIL)
                || (self.deferred_due <= self.pos && self.has_deferred())
                || self.heads[self.geometry.slot(0, self.pos)] != NIL)
    }

    /// Starts the firing of `tick`: takes out the lists of every upper slot
    /// that `tick` lies in and `pos` does not (their ranges have been
    /// reached) into `transit`, and moves `pos` to `tick`; entering a new
    /// revolution, also the list that holds the revolution after it
    /// ([`take_out_next`](Self::take_out_next)).
    /// [`link_transit`](Self::link_transit) then links the near lists again
    /// relative to the new `pos` (one level down or more, and the ones due
    /// at `tick` into level 0), and the far lists and the next revolution's
    /// list too unless they can be deferred (invariant 7).
    ///
    /// Only the slot holding `tick` can have entries at each level: a slot
    /// between it and `pos`'s would hold ticks before `tick`, which the
    /// caller of `fire_within` has fired already. Entering the revolution
    /// after `pos`'s, those slots hold nothing of `tick`'s revolution (its
    /// entries are in level 0's ring already) and their near lists are
    /// empty: only far lists, which wait.
    fn take_out_cascading(&mut self, tick: u64) {
        let g = self.geometry;
        // Within `pos`'s revolution nothing is taken out, and lists
        // deferred in it stay so; a tick past it has them linked first.
        let leaving = !g.same_from(1, tick, self.pos);
        debug_assert!(
            !leaving || !self.has_deferred(),
            "deferred lists left from the last cascade"
        );
        let next = g.revolution_end(tick);
        let mut due = u64::MAX;
        // Every slot is taken out before any entry is linked again: `link`
        // files relative to the new `pos`.
        for level in 1..g.levels() {
            if g.same_from(level, tick, self.pos) {
                // Then the levels above agree too.
                break;
            }
            let slot = g.slot(level, tick);
            let near = std::mem::replace(&mut self.heads[slot], NIL);
            // Level 1's slots span one revolution: no far list, no bound.
            let (far, bound) = if level == 1 {
                (NIL, u64::MAX)
            } else {
                let far = std::mem::replace(&mut self.heads[self.far_list(slot)], NIL);
                let bound = std::mem::replace(&mut self.min_ticks[self.bound_of(slot)], u64::MAX);
                (far, bound)
            };
            if near != NIL || far != NIL {
                self.occupied.clear(slot);
            }
            if near != NIL {
                self.entries[near as usize].prev = TRANSIT;
            }
            if far != NIL {
                self.entries[far as usize].prev = TRANSIT;
                // Entered in its first revolution, or with a bound past
                // `tick`'s revolution (a visit ahead of its earliest entry,
                // see `next_linked`), the far list is due from the next
                // revolution on; else it may be due at once.
                due = due.min(if g.in_first_revolution(level, tick) || bound >= next {
                    next
                } else {
                    tick
                });
            }
            self.transit[level] = near;
            self.transit[MAX_LEVELS + level] = far;
        }
        self.pos = tick;
        self.firing = true;
        if leaving {
            if self.take_out_next() {
                due = due.min(next);
            }
            self.deferred_due = due;
        }
    }

    /// Takes the entries of the revolution after `pos`'s out of the upper
    /// slot they wait in (the near list of the slot that revolution starts
    /// at the highest level at which it differs from `pos`) into
    /// `transit[NEXT]`, to be linked into level 0's ring before `pos`
    /// leaves its revolution (invariant 7). `true` if there were any.
    ///
    /// The slot's far list, if any, stays: its entries lie two revolutions
    /// or more after `pos`'s, and its bound is raised to the first of those
    /// ticks if it was lower (still a bound, invariant 5), so that
    /// [`next_due`](Self::next_due) never answers a tick of the next
    /// revolution for a slot.
    fn take_out_next(&mut self) -> bool {
        let g = self.geometry;
        let next = g.revolution_end(self.pos);
        if g.revolution(next) == g.revolution(self.pos) {
            // Saturated: the last revolution has none after it.
            return false;
        }
        let level = g.level_by_bits(next, self.pos);
        let slot = g.slot(level, next);
        let near = std::mem::replace(&mut self.heads[slot], NIL);
        if level == 1 {
            // One revolution a slot: nothing stays.
            self.occupied.clear(slot);
        } else if self.heads[self.far_list(slot)] == NIL {
            self.occupied.clear(slot);
            let b = self.bound_of(slot);
            self.min_ticks[b] = u64::MAX;
        } else {
            let after = next.saturating_add(g.slots0() as u64);
            let b = self.bound_of(slot);
            let bound = &mut self.min_ticks[b];
            *bound = (*bound).max(after);
        }
        if near == NIL {
            return false;
        }
        self.entries[near as usize].prev = TRANSIT;
        self.transit[NEXT] = near;
        true
    }

    /// Links the near lists in `transit` again, and the far lists if they
    /// are due by `pos` (invariant 7), at most `*budget` entries; `true`
    /// once none is left to link before `pos` fires.
    fn link_transit(&mut self, budget: &mut usize, refile: &impl Refile<T>) -> bool {
        self.link_lists(0, budget, refile)
            && (self.deferred_due > self.pos || self.link_deferred(budget, refile))
    }

    /// Links the deferred lists again, at most `*budget` entries; `true`
    /// once none is left.
    fn link_deferred(&mut self, budget: &mut usize, refile: &impl Refile<T>) -> bool {
        if !self.link_lists(MAX_LEVELS, budget, refile) {
            return false;
        }
        self.deferred_due = u64::MAX;
        true
    }

    /// Links the entries of the lists in `transit[from..from + levels]`
    /// again, at most `*budget` of them; `true` once none is left. An entry
    /// `refile` moves later (see [`Refile`]) is linked at its new
    /// tick.
    ///
    /// One walk of each list, each entry linked again as it is reached (its
    /// `next` read first): an entry of a large slot is read once, where a
    /// walk that gathered the keys first would read it twice, and by the
    /// second time it has left the cache. No entry goes back into a list
    /// taken out: `pos` is now in each slot they came from (a tick in the
    /// range of a slot `pos` is in belongs at a lower level), and a tick of
    /// the revolution after `pos`'s belongs in level 0's ring.
    fn link_lists(&mut self, from: usize, budget: &mut usize, refile: &impl Refile<T>) -> bool {
        // `transit[0]` is always empty; `transit[NEXT]` is the next
        // revolution's list.
        for list in from..from + self.geometry.levels() {
            while self.transit[list] != NIL {
                if *budget == 0 {
                    return false;
                }
                *budget -= 1;
                let key = self.transit[list];
                let entry = &mut self.entries[key as usize];
                let next = entry.next;
                if let Some(later) = refile(key, &entry.value, entry.tick.get()) {
                    entry.tick = Tick::new(later);
                    self.counters.refiled += 1;
                }
                self.transit[list] = next;
                if next != NIL {
                    self.entries[next as usize].prev = TRANSIT;
                }
                self.counters.cascaded += 1;
                self.link(key);
            }
        }
        true
    }

    /// The far list of slot `slot`, of level 2 or above (no other level
    /// has far lists), in `heads`: after every slot's near list.
    fn far_list(&self, slot: usize) -> usize {
        debug_assert!(
            slot >= self.geometry.first_slot(2),
            "slot {slot} has no far list"
        );
        slot + self.min_ticks.len()
    }

    /// The slot whose near or far list is `list` of `heads`: near lists are
    /// numbered as their slots, far lists after them all
    /// ([`far_list`](Self::far_list)).
    #[inline]
    fn slot_of_list(&self, list: usize) -> usize {
        if list < self.geometry.total_slots() {
            list
        } else {
            list - self.min_ticks.len()
        }
    }

    /// Whether both lists of `slot` are empty (invariant 4).
    fn slot_is_empty(&self, slot: usize) -> bool {
        self.heads[slot] == NIL
            && (slot < self.geometry.first_slot(2) || self.heads[self.far_list(slot)] == NIL)
    }

    /// The slot and the list an entry at `tick` belongs in, relative to
    /// `pos` (invariant 3).
    fn place_of(&self, tick: u64) -> (usize, usize, usize) {
        let g = self.geometry;
        let level = g.level_of(tick, self.pos);
        let slot = g.slot(level, tick);
        let list = if g.in_first_revolution(level, tick) {
            slot
        } else {
            self.far_list(slot)
        };
        (level, slot, list)
    }

    /// Pushes the entry onto the front of the list its tick belongs in.
    fn link(&mut self, key: Key) {
        let tick = self.entries[key as usize].tick.get();
        debug_assert!(tick >= self.pos, "linking an entry behind the wheel");
        let (level, slot, list) = self.place_of(tick);
        let head = self.heads[list];
        {
            let entry = &mut self.entries[key as usize];
            entry.prev = HEAD + list as u32;
            entry.next = head;
        }
        self.heads[list] = key;
        if head == NIL {
            self.occupied.set(slot);
        } else {
            self.entries[head as usize].prev = key;
        }
        if level > 1 {
            let min = &mut self.min_ticks[self.bound_of(slot)];
            *min = (*min).min(tick);
        }
    }

    /// Takes the entry out of its list (in a slot, or in transit), keeping
    /// invariants 4 to 7. Only the first entry of a list can empty its
    /// slot; its `prev` names the list.
    fn unlink(&mut self, key: Key) {
        let (prev, next) = {
            let e = &mut self.entries[key as usize];
            let links = (e.prev, e.next);
            e.prev = NIL;
            e.next = NIL;
            links
        };
        if next != NIL {
            // A new first entry inherits its list's mark, or `TRANSIT`.
            self.entries[next as usize].prev = prev;
        }
        if let Some(list) = head_of(prev) {
            debug_assert_eq!(
                self.heads[list], key,
                "unlinking an entry that is not linked"
            );
            self.heads[list] = next;
            if next == NIL {
                let slot = self.slot_of_list(list);
                if self.slot_is_empty(slot) {
                    self.occupied.clear(slot);
                    if slot >= self.geometry.first_slot(2) {
                        // A non-empty slot keeps its bound, stale or not
                        // (invariant 5).
                        let b = self.bound_of(slot);
                        self.min_ticks[b] = u64::MAX;
                    }
                }
            }
        } else if prev == TRANSIT {
            let list = self
                .transit
                .iter_mut()
                .find(|head| **head == key)
                .expect("an entry marked in transit heads a list in transit");
            *list = next;
        } else {
            self.entries[prev as usize].next = next;
        }
    }

    /// The number of slots of level 0.
    pub(crate) fn slots(&self) -> usize {
        self.geometry.slots0()
    }

    /// Removes every pending entry, as cancelled, handing its value to `out`.
    /// Fired entries stay: their keys belong to their owners.
    pub(crate) fn drain_pending(&mut self, out: &mut Vec<T>) {
        let keys: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| !e.is_fired())
            .map(|(k, _)| k as Key)
            .collect();
        out.extend(keys.into_iter().filter_map(|k| self.remove(k)));
    }

    /// The values of every pending entry.
    pub(crate) fn pending_values(&self) -> impl Iterator<Item = &T> + '_ {
        self.entries
            .iter()
            .filter(|(_, e)| !e.is_fired())
            .map(|(_, e)| &e.value)
    }

    /// Gives back memory after a burst: the slab keeps its peak capacity
    /// otherwise. Only done when the wheel holds no entry at all (keys must
    /// stay put) and the slab is large enough for its memory to matter, so a
    /// wheel that often runs empty does not reallocate every time (or was
    /// that large before a mass cancel shrank it: see `after_remove`).
    pub(crate) fn shrink_if_empty(&mut self) {
        if self.entries.is_empty() && (self.entries.capacity() > SHRINK_ABOVE || self.shrunk) {
            self.entries = Slab::new();
            self.removed = 0;
            self.shrunk = false;
        }
    }

    /// Gives back memory after a mass cancel, on the removal path: a slab
    /// keeps its peak capacity, and waiting for the driver to find the wheel
    /// empty ([`shrink_if_empty`](Self::shrink_if_empty)) keeps a burst's
    /// memory as long as one unrelated timer is pending.
    ///
    /// An empty slab is freed here by `shrink_if_empty`. Otherwise keys
    /// must stay put, so the slab can only drop the vacant entries after its
    /// last occupied one (`Slab::shrink_to_fit`); it tries when all of these
    /// hold:
    /// - the slab is large enough to matter (over [`SHRINK_ABOVE`]) and under
    ///   an eighth full: hysteresis, since a slab grows by doubling and a
    ///   grown slab with half its timers cancelled is a quarter full, normal
    ///   churn that must not shrink and regrow;
    /// - its last entry is vacant (or its buffer has room past the last
    ///   entry), so the attempt frees something: no attempt is wasted, and a
    ///   survivor high in the slab costs one check per removal;
    /// - at least half as many removals as entries left have happened since
    ///   it last shrank, and, while more than [`SHRINK_ABOVE`] entries are
    ///   left, at least a sixteenth of its capacity. An attempt costs
    ///   O(capacity). While a burst drains, len / 2 keeps attempts to a
    ///   logarithmic number; the capacity / 16 floor pays for each attempt
    ///   where the entries do not halve between attempts: steady churn beside
    ///   a few survivors high in the slab (1M entries, 64 survivors, 2000
    ///   churning) cost 2.7 us a removal on average and 4.1 ms at worst under
    ///   the shard lock without it. The floor is lifted for the last
    ///   [`SHRINK_ABOVE`] entries so that a burst cancelled in any order is
    ///   given back at its end, once a first attempt has cut the slab only to
    ///   its last live entry. Left: churn of fewer than that many entries
    ///   beside survivors high in a large slab pays an attempt per len / 2
    ///   removals, as before.
    ///
    /// A slab of at most [`SHRINK_ABOVE`] places that never shrank has
    /// nothing to give back: that check is all a removal from a small wheel
    /// pays, the rest is out of line.
    #[inline]
    fn after_remove(&mut self) {
        self.removed += 1;
        if self.entries.capacity() > SHRINK_ABOVE || self.shrunk {
            self.shrink_after_remove();
        }
    }

    /// The rest of [`after_remove`](Self::after_remove), for a slab that may
    /// have memory to give back.
    #[inline(never)]
    fn shrink_after_remove(&mut self) {
        let len = self.entries.len();
        if len == 0 {
            self.shrink_if_empty();
            return;
        }
        let capacity = self.entries.capacity();
        if capacity > SHRINK_ABOVE
            && len < capacity / 8
            && self.removed >= Self::removals_per_attempt(len, capacity)
            && !self.entries.contains(capacity - 1)
        {
            self.removed = 0;
            self.shrunk = true;
            self.entries.shrink_to_fit();
        }
    }

    /// How many removals must come between two shrink attempts: see
    /// `after_remove`.
    fn removals_per_attempt(len: usize, capacity: usize) -> usize {
        if len <= SHRINK_ABOVE {
            len / 2
        } else {
            (len / 2).max(capacity / 16)
        }
    }

    /// Entries still held (pending or fired-but-not-removed).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The number of levels.
    #[cfg(test)]
    pub(crate) fn levels(&self) -> usize {
        self.geometry.levels()
    }

    /// Slots of level 2 or above whose bound is below their earliest
    /// entry's tick (stale, invariant 5); for tests.
    #[cfg(test)]
    pub(crate) fn stale_slots(&self) -> usize {
        let g = self.geometry;
        (g.first_slot(2)..g.total_slots())
            .filter(|&slot| {
                let mut exact = u64::MAX;
                for list in [slot, self.far_list(slot)] {
                    let mut cur = self.heads[list];
                    while cur != NIL {
                        exact = exact.min(self.entries[cur as usize].tick.get());
                        cur = self.entries[cur as usize].next;
                    }
                }
                self.min_ticks[self.bound_of(slot)] != exact
            })
            .count()
    }

    /// The tick the deferred lists are due by, if any is left
    /// (invariant 7); for tests.
    #[cfg(test)]
    pub(crate) fn deferred_due(&self) -> Option<u64> {
        self.has_deferred().then_some(self.deferred_due)
    }

    /// Checks every invariant; for tests.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let g = self.geometry;
        assert!(self.pos <= self.horizon, "pos past the horizon");
        // Invariants 6 and 7: the lists in transit.
        let mut linked = 0;
        for (list, &head) in self.transit.iter().enumerate() {
            let (far, level) = (list >= MAX_LEVELS, list % MAX_LEVELS);
            if far {
                // Deferred: far lists only from level 2 up (and the next
                // revolution's list, at `NEXT`), and either due later in
                // `pos`'s revolution or part of an unfinished firing.
                assert!(
                    head == NIL || (level != 1 && level < g.levels()),
                    "a far list in transit at level {level}"
                );
                assert!(
                    head == NIL
                        || (self.deferred_due > self.pos
                            && self.deferred_due == g.revolution_end(self.pos))
                        || (self.firing && self.deferred_due <= self.pos),
                    "far lists due by {} with pos {} (firing: {})",
                    self.deferred_due,
                    self.pos,
                    self.firing
                );
            } else {
                assert!(
                    head == NIL || (self.firing && level > 0 && level < g.levels()),
                    "a list in transit at level {level} (firing: {})",
                    self.firing
                );
            }
            let mut cur = head;
            let mut prev = TRANSIT;
            while cur != NIL {
                let e = &self.entries[cur as usize];
                let tick = e.tick.get();
                assert!(!e.is_fired(), "fired entry in transit");
                assert!(tick >= self.pos, "entry in transit behind pos");
                if list == NEXT {
                    assert_eq!(
                        g.revolution(tick),
                        g.revolution(self.pos).saturating_add(1),
                        "entry at {tick} in the next revolution's list (pos {})",
                        self.pos
                    );
                } else {
                    assert!(
                        g.same_from(level, tick, self.pos),
                        "entry at {tick} in transit at level {level}, outside pos {}'s slot",
                        self.pos
                    );
                }
                if far && self.deferred_due > self.pos {
                    assert!(
                        tick >= self.deferred_due,
                        "entry at {tick} deferred to {}",
                        self.deferred_due
                    );
                }
                assert_eq!(e.prev, prev, "broken back link in transit");
                linked += 1;
                prev = cur;
                cur = e.next;
            }
        }
        for slot in 0..g.total_slots() {
            // Levels 0 and 1 have neither far lists nor bounds.
            let upper = slot.checked_sub(g.first_slot(2));
            let lists = [Some(slot), upper.map(|_| self.far_list(slot))];
            let empty = lists.iter().flatten().all(|&l| self.heads[l] == NIL);
            assert_eq!(!empty, self.occupied.get(slot), "bitmap of slot {slot}");
            if let (true, Some(u)) = (empty, upper) {
                assert_eq!(self.min_ticks[u], u64::MAX);
            }
            if let (false, Some(u)) = (empty, upper) {
                // A tick of this slot's range: firing it cascades the slot.
                let min = self.min_ticks[u];
                assert!(min > self.pos, "slot {slot} bound {min} behind pos");
                assert_eq!(
                    g.slot(g.level_of(min, self.pos), min),
                    slot,
                    "slot {slot} bound {min} outside its range (pos {})",
                    self.pos
                );
            }
            for &list in lists.iter().flatten() {
                let mut cur = self.heads[list];
                let mut prev = HEAD + list as u32;
                while cur != NIL {
                    let e = &self.entries[cur as usize];
                    let tick = e.tick.get();
                    assert!(!e.is_fired(), "fired entry linked in slot {slot}");
                    // The one exception: the tick an unfinished firing is at.
                    assert!(
                        tick > self.pos || (self.firing && tick == self.pos),
                        "pending entry at {tick} behind pos"
                    );
                    assert_eq!(
                        self.place_of(tick),
                        (g.level_of(tick, self.pos), slot, list),
                        "entry at tick {tick} in the wrong list (pos {})",
                        self.pos
                    );
                    assert_eq!(e.prev, prev, "broken back link");
                    if let Some(u) = upper {
                        assert!(self.min_ticks[u] <= tick, "slot {slot} min above an entry");
                    }
                    linked += 1;
                    prev = cur;
                    cur = e.next;
                }
            }
        }
        assert_eq!(linked, self.pending, "pending count");
        let pending = self.entries.iter().filter(|(_, e)| !e.is_fired()).count();
        assert_eq!(pending, self.pending, "pending entries not all linked");
        for (_, e) in self.entries.iter().filter(|(_, e)| e.is_fired()) {
            assert_eq!(e.next, NIL, "fired entry still linked");
        }
    }

    // For the expiry queue's `peek`, `capacity` and `shrink_to_fit`.

    /// Every entry held, pending or fired: its key, its tick (linked at, or
    /// fired at), whether it fired, and its value. Visits the whole slab.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (Key, u64, bool, &T)> + '_ {
        self.entries
            .iter()
            .map(|(k, e)| (k as Key, e.tick.get(), e.is_fired(), &e.value))
    }

    /// How many entries the slab holds without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Gives back what memory it can without moving an entry, so that every
    /// key stays valid: the slab's vacant places after its last entry (not
    /// the holes before it). The levels' slot arrays are sized once by `new`
    /// and stay.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::{by_value, TimerWheel};

    /// The first entry of every list carries its list's mark (`HEAD`), in
    /// the widest wheel (the most lists) and the narrowest (one slot): an
    /// entry at every level, and two in one far list, taken out again from
    /// the head and from behind it.
    #[test]
    fn every_list_of_the_largest_and_smallest_wheels_has_a_head_mark() {
        for slots in [1 << 16, 1] {
            let mut w = TimerWheel::<u32>::new(slots, 0);
            // Every power of two lands in a near list, at every level; the
            // last two share a far list of the top level.
            let ticks: Vec<u64> = (0..64)
                .map(|k| 1u64 << k)
                // The largest tick a timer can have (`clock::MAX_TICK`).
                .chain([u64::MAX - 1, u64::MAX - 2])
                .collect();
            let keys: Vec<_> = ticks
                .iter()
                .map(|&t| w.insert(t, t as u32).unwrap())
                .collect();
            w.check_invariants();
            // In order: the first of the last two is behind its list's head.
            for (i, key) in keys.into_iter().enumerate() {
                assert!(w.remove(key).is_some(), "entry {i} of {slots} slots");
                w.check_invariants();
            }
            assert_eq!(w.pending(), 0);
        }
    }

    /// Advances to `now` and fires every due tick in order, returning
    /// `(tick, value)` pairs: what the driver does.
    fn run_to(w: &mut TimerWheel<u32>, now: u64) -> Vec<(u64, u32)> {
        run_to_by(w, now, |v| v)
    }

    /// [`run_to`] for any value, named in the pairs by `id`.
    fn run_to_by<T: super::Payload>(
        w: &mut TimerWheel<T>,
        now: u64,
        id: impl Fn(T) -> u32,
    ) -> Vec<(u64, u32)> {
        w.advance(now);
        let mut fired = Vec::new();
        while let Some(t) = w.next_due().filter(|&t| t <= now) {
            let mut out = Vec::new();
            w.fire(t, &mut out);
            fired.extend(out.into_iter().map(|v| (t, id(v))));
            w.check_invariants();
        }
        fired
    }

    /// An entry of a 16-byte value is 32 bytes, half a cache line, in the
    /// slab too, even for a value with no niche of its own.
    /// What a wheel allocates up front for its levels (the builder's and
    /// the expiry queue's docs give these figures): about 12 KiB at the
    /// default 64 slots, where a level 1 of 64 slots took 10.6 KiB, and 8
    /// bytes and a quarter more for each slot of level 0.
    #[test]
    fn a_wheel_s_levels_take_about_12_kib_at_64_slots() {
        let bytes = |slots: usize| {
            let w = TimerWheel::<u32>::new(slots, 0);
            std::mem::size_of_val(&*w.heads)
                + std::mem::size_of_val(&*w.min_ticks)
                + w.occupied.bytes()
        };
        assert_eq!(bytes(64), 11_928);
        assert_eq!(bytes(65_536), 550_008);
    }

    #[test]
    fn an_entry_takes_half_a_cache_line_in_the_slab() {
        assert_eq!(std::mem::size_of::<super::Entry<[u64; 2]>>(), 32);
        assert_eq!(super::slab_place_size::<[u64; 2]>(), 32);
    }

    #[test]
    fn a_tick_is_stored_as_it_was_given() {
        for t in [0, 1, 63, 64, u64::from(u32::MAX), crate::clock::MAX_TICK] {
            assert_eq!(super::Tick::new(t).get(), t);
        }
    }

    /// A value whose owner moves its deadline later without the wheel, as a
    /// tracked `Sleep` does (see `driver/deadline.rs`); `filed` records what
    /// `refile` told it.
    #[derive(Debug)]
    struct Moving {
        id: u32,
        to: std::cell::Cell<u64>,
        filed: std::cell::Cell<u64>,
    }

    impl super::Payload for Moving {
        fn placeholder() -> Self {
            Moving {
                id: u32::MAX,
                to: 0.into(),
                filed: 0.into(),
            }
        }

        fn refile(&self, due: u64) -> Option<u64> {
            let to = self.to.get();
            (to > due).then(|| {
                self.filed.set(to);
                to
            })
        }
    }

    fn moving(id: u32, to: u64) -> Moving {
        Moving {
            id,
            to: to.into(),
            filed: 0.into(),
        }
    }

    /// `run_to` for [`Moving`] values: `(tick, id)` pairs.
    fn run_moving_to(w: &mut TimerWheel<Moving>, now: u64) -> Vec<(u64, u32)> {
        run_to_by(w, now, |v| v.id)
    }

    #[test]
    fn an_entry_moved_later_is_filed_again_not_fired() {
        let mut w = TimerWheel::new(8, 0);
        let key = w.insert(5, moving(1, 5)).unwrap();
        w.insert(6, moving(2, 6)).unwrap();
        // Moved to 7 (same level-0 revolution), then to 30 (a level above)
        // before the wheel gets to 7.
        w.get(key).unwrap().to.set(7);
        assert_eq!(run_moving_to(&mut w, 6), vec![(6, 2)]);
        assert_eq!(w.tick_of(key), 7);
        assert_eq!(w.get(key).unwrap().filed.get(), 7, "told where it is");
        w.get(key).unwrap().to.set(30);
        assert!(run_moving_to(&mut w, 29).is_empty(), "fired before 30");
        assert_eq!(run_moving_to(&mut w, 30), vec![(30, 1)]);
        let c = w.counters();
        assert_eq!((c.registered, c.fired, c.refiled), (2, 2, 2));
    }

    #[test]
    fn a_cascading_entry_moved_later_goes_straight_to_its_new_tick() {
        // 8 slots: tick 20 is on level 1, in the slot of ticks 16..24.
        let mut w = TimerWheel::new(8, 0);
        let key = w.insert(20, moving(1, 20)).unwrap();
        w.get(key).unwrap().to.set(23);
        w.insert(17, moving(2, 17)).unwrap();
        // The visit of 8 takes the slot out, and the link before 16 sends
        // the entry to 23 at once.
        assert_eq!(run_moving_to(&mut w, 22), vec![(17, 2)]);
        assert_eq!(w.tick_of(key), 23);
        assert_eq!(w.counters().refiled, 1);
        assert_eq!(run_moving_to(&mut w, 23), vec![(23, 1)]);
    }

    #[test]
    fn an_entry_moved_within_the_pass_fires_in_tick_order() {
        let mut w = TimerWheel::new(8, 0);
        let key = w.insert(2, moving(1, 2)).unwrap();
        w.insert(4, moving(2, 4)).unwrap();
        w.insert(6, moving(3, 6)).unwrap();
        w.get(key).unwrap().to.set(5);
        // One pass up to 6: 1 is filed again at 5 and fires between 2 and 3.
        assert_eq!(run_moving_to(&mut w, 6), vec![(4, 2), (5, 1), (6, 3)]);
    }

    #[test]
    fn fire_keys_never_refiles() {
        let mut w = TimerWheel::new(8, 0);
        let key = w.insert(3, moving(1, 9)).unwrap();
        w.advance(3);
        let mut keys = Vec::new();
        assert_eq!(w.fire_keys(3, &mut keys), 1);
        assert_eq!(keys, vec![key]);
        assert_eq!(w.counters().refiled, 0);
    }

    #[test]
    fn fires_at_its_tick_not_before() {
        let mut w = TimerWheel::new(8, 0);
        w.insert(5, 1).unwrap();
        assert!(run_to(&mut w, 4).is_empty());
        assert_eq!(run_to(&mut w, 5), vec![(5, 1)]);
        assert_eq!(w.pending(), 0);
    }

    #[test]
    fn insert_at_or_before_elapsed_is_due() {
        let mut w = TimerWheel::new(8, 10);
        assert_eq!(w.insert(10, 7), Err(7));
        assert_eq!(w.insert(3, 8), Err(8));
        assert!(w.insert(11, 9).is_ok());
    }

    #[test]
    fn exact_multiples_of_the_span_do_not_fire_a_revolution_early() {
        // 4 slots: ticks 4, 8, 12 and 16 all hash to slot 0.
        let mut w = TimerWheel::new(4, 0);
        for t in [16, 4, 12, 8] {
            w.insert(t, t as u32).unwrap();
        }
        w.check_invariants();
        for now in 1..=16 {
            let fired = run_to(&mut w, now);
            if now % 4 == 0 {
                assert_eq!(fired, vec![(now, now as u32)], "at tick {now}");
            } else {
                assert!(fired.is_empty(), "at tick {now}: {fired:?}");
            }
        }
    }

    #[test]
    fn one_slot_wheel_keeps_every_round() {
        let mut w = TimerWheel::new(1, 0);
        for t in [3, 1, 2] {
            w.insert(t, t as u32).unwrap();
        }
        assert_eq!(run_to(&mut w, 3), vec![(1, 1), (2, 2), (3, 3)]);
    }

    #[test]
    fn catch_up_fires_ticks_in_order() {
        let mut w = TimerWheel::new(8, 0);
        for t in [30, 2, 17, 9, 25, 3] {
            w.insert(t, t as u32).unwrap();
        }
        let fired = run_to(&mut w, 100);
        assert_eq!(
            fired.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![2, 3, 9, 17, 25, 30]
        );
    }

    #[test]
    fn wrap_around_near_large_ticks() {
        for start in [1 << 30, 1 << 40, u64::MAX / 2, u64::MAX - 200] {
            let mut w = TimerWheel::new(16, start);
            let ticks: Vec<u64> = (1..=40).map(|i| start + i * 3).collect();
            for &t in &ticks {
                w.insert(t, (t - start) as u32).unwrap();
            }
            let mut fired = Vec::new();
            for now in start..=start + 120 {
                for (t, v) in run_to(&mut w, now) {
                    assert_eq!(t, now, "fired at {now}, due {t}");
                    assert_eq!(start + u64::from(v), t);
                    fired.push(t);
                }
            }
            assert_eq!(fired, ticks, "start {start}");
        }
    }

    #[test]
    fn remove_cancels_and_reuses_the_key() {
        let mut w = TimerWheel::new(8, 0);
        let a = w.insert(3, 1).unwrap();
        let b = w.insert(3, 2).unwrap();
        assert_eq!(w.remove(a), Some(1));
        w.check_invariants();
        let c = w.insert(11, 3).unwrap();
        assert_eq!(c, a, "slab key reused");
        assert_eq!(run_to(&mut w, 3), vec![(3, 2)]);
        assert!(w.is_fired(b));
        assert_eq!(w.remove(b), None, "fired entries hand nothing back");
        assert_eq!(run_to(&mut w, 11), vec![(11, 3)]);
        assert_eq!(w.counters().cancelled, 1);
        assert_eq!(w.counters().fired, 2);
    }

    #[test]
    fn removing_every_entry_empties_the_slot() {
        let mut w = TimerWheel::new(8, 0);
        let keys: Vec<_> = (0..5)
            .map(|i| w.insert(2 + 8 * i, i as u32).unwrap())
            .collect();
        for k in [keys[2], keys[0], keys[4], keys[1], keys[3]] {
            w.remove(k);
            w.check_invariants();
        }
        assert_eq!(w.next_due(), None);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn next_due_stays_exact_when_a_slots_earliest_entry_is_removed() {
        let mut w = TimerWheel::new(8, 0);
        let a = w.insert(4, 1).unwrap();
        w.insert(12, 2).unwrap();
        w.insert(7, 3).unwrap();
        assert_eq!(w.next_due(), Some(4));
        w.remove(a);
        w.check_invariants();
        // Tick 12 shares slot 4 with the removed entry; 7 is the earliest.
        assert_eq!(w.next_due(), Some(7));
        w.check_invariants();
        let b = w.insert(15, 4).unwrap();
        w.remove(b);
        assert_eq!(w.next_due(), Some(7));
        assert_eq!(run_to(&mut w, 7), vec![(7, 3)]);
        assert_eq!(w.next_due(), Some(12), "slot 4 walked on demand");
        assert_eq!(run_to(&mut w, 12), vec![(12, 2)]);
        assert_eq!(w.next_due(), None);
    }

    #[test]
    fn reschedule_moves_both_ways_and_fires_when_due() {
        let mut w = TimerWheel::new(8, 0);
        let k = w.insert(20, 1).unwrap();
        assert_eq!(w.reschedule(k, 5), None);
        assert_eq!(w.next_due(), Some(5));
        assert_eq!(w.reschedule(k, 9), None);
        assert!(run_to(&mut w, 8).is_empty());
        w.advance(9);
        w.check_invariants();
        let k2 = w.insert(30, 2).unwrap();
        assert_eq!(w.reschedule(k2, 9), Some(2), "a past tick fires at once");
        assert!(w.is_fired(k2));
        assert_eq!(run_to(&mut w, 9), vec![(9, 1)]);
        assert_eq!(w.pending(), 0);
    }

    /// A firing that runs out of budget linking the next revolution's
    /// entries leaves the wheel usable: entries still in transit can be
    /// cancelled (the first of their list or one inside it) or moved, new
    /// ones registered, and the next firing of the same tick goes on where
    /// it stopped. Nothing fires early, late or twice, and nothing is lost.
    #[test]
    fn a_cascade_in_steps_can_be_used_between_steps() {
        let mut w = TimerWheel::new(64, 0);
        // Ticks 128 to 137 sit at level 1 (`pos` 0): all in one slot.
        let keys: Vec<super::Key> = (0..100u32)
            .map(|v| w.insert(128 + u64::from(v % 10), v).unwrap())
            .collect();
        w.advance(134);
        // The revolution before theirs is visited first: it takes them out,
        // to be linked into level 0 before 128 (`cascade_ahead` does it in
        // steps; here the firing of 128 does, with its budget).
        assert_eq!(w.next_due(), Some(64));
        let mut out = Vec::new();
        assert_eq!(w.fire(64, &mut out), 0);
        assert_eq!(w.deferred_due(), Some(128));
        assert_eq!(w.next_due(), Some(128));
        assert_eq!(w.fire_within(128, &mut 30, &mut out, by_value), None);
        assert!(out.is_empty(), "nothing fires before the cascade ends");
        w.check_invariants();
        assert_eq!(w.next_due(), Some(128), "the unfinished firing comes first");
        assert_eq!(w.counters().cascaded, 30);
        // The list is in reverse order of linking: 99 down to 70 were linked
        // again, 69 heads what is still in transit.
        assert_eq!(w.remove(keys[69]), Some(69), "the first in transit");
        assert_eq!(w.remove(keys[50]), Some(50), "one inside the list");
        assert_eq!(w.remove(keys[99]), Some(99), "one linked again");
        assert_eq!(w.reschedule(keys[60], 300), None, "moved from transit");
        assert_eq!(w.insert(130, 1000), Err(1000), "due: refused");
        let late = w.insert(136, 1001).unwrap();
        w.check_invariants();
        assert_eq!(w.fire_within(128, &mut 10, &mut out, by_value), None);
        w.check_invariants();
        let fired = run_to(&mut w, 150);
        let mut expected: Vec<(u64, u32)> = (0..100u32)
            .filter(|v| ![69, 50, 99, 60].contains(v))
            .map(|v| (128 + u64::from(v % 10), v))
            .chain([(136, 1001)])
            .collect();
        expected.sort_unstable();
        let mut got = fired.clone();
        got.sort_unstable();
        assert_eq!(got, expected);
        assert!(fired.windows(2).all(|p| p[0].0 <= p[1].0), "in tick order");
        assert_eq!(w.pending(), 1);
        assert_eq!(w.next_due(), Some(192), "the revolution before 300's");
        assert!(w.is_fired(late));
    }

    /// The registration wave: a revolution of many entries, most of them
    /// pushed back since they were linked (idle timeouts reset by a frame),
    /// is linked during the revolution before it, in steps between ticks,
    /// so that its first tick fires with nothing left to link (a budget of
    /// zero). Linked as the wheel entered the revolution instead, a million
    /// connections' first idle deadlines held up that tick for some 45 ms.
    #[test]
    fn a_large_revolution_is_linked_before_it_begins() {
        let mut w = TimerWheel::new(64, 0);
        let n = 20_000u32;
        // Ticks 128 to 191, at level 1; three in four pushed back by 3000.
        let entries: Vec<(super::Key, u64)> = (0..n)
            .map(|v| {
                let tick = 128 + u64::from(v % 64);
                let to = if v % 4 == 0 { tick } else { tick + 3000 };
                (w.insert(tick, moving(v, to)).unwrap(), to)
            })
            .collect();
        assert_eq!(w.next_due(), Some(64), "the revolution before theirs");
        w.advance(64);
        let mut out = Vec::new();
        assert_eq!(w.fire_within(64, &mut 0, &mut out, by_value), Some(0));
        assert_eq!(w.deferred_due(), Some(128));
        let mut steps = 0;
        while !w.cascade_ahead(&mut { 4096 }, by_value) {
            steps += 1;
            w.check_invariants();
        }
        assert_eq!(steps, n as usize / 4096);
        assert_eq!(w.counters().refiled, u64::from(n) / 4 * 3);
        w.advance(128);
        let first = w.fire_within(128, &mut 0, &mut out, by_value);
        let at_128 = (0..n).filter(|v| v % 64 == 0).count();
        assert_eq!(first, Some(at_128), "128 waited for a link");
        let fired = run_moving_to(&mut w, 4000);
        assert_eq!(fired.len() + out.len(), n as usize);
        for (t, id) in fired {
            assert_eq!(t, entries[id as usize].1, "entry {id} fired off its tick");
        }
    }

    /// The wheel links a level-2 slot's first revolution into level 0 during
    /// the revolution before it, and entering the slot defers the rest:
    /// they wait in its far list for `cascade_ahead` (or the first tick past
    /// the revolution), and every entry still fires at its own tick.
    #[test]
    fn entering_a_large_slot_waits_only_for_its_first_revolution() {
        // 64 slots: a level-2 slot spans 32768 ticks, 512 revolutions. From
        // `pos` 100, ticks 32768 to 65535 sit in one level-2 slot.
        let mut w = TimerWheel::new(64, 100);
        let n = 4000u32;
        for v in 0..n {
            w.insert(32768 + u64::from(v), v).unwrap();
        }
        w.check_invariants();
        // The revolution before the slot's first is visited, which takes the
        // first revolution's entries out, due to be linked by 32768.
        assert_eq!(w.next_due(), Some(32704));
        w.advance(32768);
        let mut out = Vec::new();
        assert_eq!(w.fire(32704, &mut out), 0);
        assert_eq!(w.deferred_due(), Some(32768));
        assert_eq!(w.counters().cascaded, 0);
        assert_eq!(w.next_due(), Some(32768));
        assert_eq!(w.fire(32768, &mut out), 1);
        w.check_invariants();
        // The first revolution, 32768 to 32831, was linked again; nothing else.
        assert_eq!(w.counters().cascaded, 64);
        assert_eq!(w.deferred_due(), Some(32832));
        assert_eq!(w.next_due(), Some(32769));
        // Ticks of the revolution fire with the far list still deferred.
        assert_eq!(run_to(&mut w, 32782).len(), 14);
        assert_eq!(w.counters().cascaded, 64);
        // Linked in steps between ticks: nothing fires, nothing is lost.
        let mut steps = 0;
        while !w.cascade_ahead(&mut { 500 }, by_value) {
            steps += 1;
            w.check_invariants();
            assert_eq!(w.pending(), n as usize - 15);
        }
        assert_eq!(steps, (n as usize - 64) / 500);
        assert_eq!(w.deferred_due(), None);
        assert_eq!(w.counters().cascaded, u64::from(n));
        let fired = run_to(&mut w, 37672);
        let expected: Vec<(u64, u32)> = (15..n).map(|v| (32768 + u64::from(v), v)).collect();
        assert_eq!(fired, expected);
    }

    /// Without `cascade_ahead`, the first tick past the revolution links
    /// the far list first (in steps too, if its budget runs out), and
    /// nothing there or after it fires early, late or twice.
    #[test]
    fn a_deferred_far_list_is_linked_by_the_first_tick_past_its_revolution() {
        let mut w = TimerWheel::new(64, 100);
        // Two in the first revolution, the rest after it; 32832 is the
        // first tick past it.
        let ticks = [32768, 32769, 32832, 32832, 32833, 33672, 65535];
        for (v, &t) in ticks.iter().enumerate() {
            w.insert(t, v as u32).unwrap();
        }
        w.advance(32872);
        let mut out = Vec::new();
        assert_eq!(w.next_due(), Some(32704), "the revolution before the slot");
        assert_eq!(w.fire(32704, &mut out), 0);
        assert_eq!(w.fire(32768, &mut out), 1);
        assert_eq!(w.next_due(), Some(32769));
        assert_eq!(w.fire(32769, &mut out), 1);
        assert_eq!(w.next_due(), Some(32832), "the far list's due tick");
        assert_eq!(w.fire_within(32832, &mut 2, &mut out, by_value), None);
        w.check_invariants();
        assert_eq!(w.next_due(), Some(32832), "said again while unfinished");
        assert_eq!(w.deferred_due(), Some(32832));
        assert_eq!(w.fire_within(32832, &mut 10, &mut out, by_value), Some(2));
        w.check_invariants();
        out.sort_unstable();
        assert_eq!(out, [0, 1, 2, 3]);
        assert_eq!(w.deferred_due(), None);
        assert_eq!(run_to(&mut w, 65535), [(32833, 4), (33672, 5), (65535, 6)]);
    }

    /// A slot whose earliest entry lies past its first revolution is
    /// entered at the revolution before that entry's (`next_due` visits
    /// it), and defers its far list to the end of that revolution, as in its
    /// first: nothing in it is due before.
    #[test]
    fn a_slot_visited_past_its_first_revolution_defers_its_far_list() {
        let mut w = TimerWheel::new(64, 100);
        let k = w.insert(32972, 0u32).unwrap();
        assert_eq!(w.next_due(), Some(32896), "the revolution before 32972's");
        w.advance(32896);
        let mut out = Vec::new();
        assert_eq!(w.fire(32896, &mut out), 0);
        w.check_invariants();
        assert_eq!(w.deferred_due(), Some(32960));
        assert_eq!(w.counters().cascaded, 0, "nothing linked yet");
        assert_eq!(run_to(&mut w, 32972), [(32972, 0)]);
        assert!(w.is_fired(k));
    }

    /// An owner that fires a tick past `next_due` (the driver does only
    /// when its view of it is old: timers registered while it delivered the
    /// ticks of a pass; it would have visited the revolution before) enters
    /// a slot past its
    /// first revolution with entries maybe due in it: its far list is
    /// linked before the tick fires, not deferred, and nothing is late.
    #[test]
    fn a_slot_entered_past_its_first_revolution_defers_nothing() {
        let mut w = TimerWheel::new(64, 100);
        for (v, t) in [(0u32, 32872u64), (1, 32873), (2, 32972)] {
            w.insert(t, v).unwrap();
        }
        assert_eq!(w.next_due(), Some(32768));
        w.advance(32872);
        let mut out = Vec::new();
        assert_eq!(w.fire_within(32872, &mut 1, &mut out, by_value), None);
        w.check_invariants();
        assert_eq!(w.next_due(), Some(32872));
        assert_eq!(w.fire(32872, &mut out), 1);
        assert_eq!(w.deferred_due(), None);
        assert_eq!(w.next_due(), Some(32873));
        assert_eq!(run_to(&mut w, 32972), [(32873, 1), (32972, 2)]);
    }

    /// A firing left unfinished in a revolution whose far lists are
    /// deferred, then emptied by a removal: the next tick of the revolution
    /// fires as usual (moving `pos` on), and the deferred lists are still
    /// due by the end of the revolution.
    #[test]
    fn an_emptied_unfinished_firing_beside_deferred_lists_moves_on() {
        let mut w = TimerWheel::new(8, 0);
        // Eight slots: ticks 4096 to 8191 are one level-2 slot, its first
        // revolution 4096 to 4103; 4114 waits in its far list.
        let first = w.insert(4098, 0u32).unwrap();
        w.insert(4099, 1).unwrap();
        w.insert(4114, 2).unwrap();
        w.advance(4104);
        let mut out = Vec::new();
        assert_eq!(w.fire_within(4098, &mut 1, &mut out, by_value), None);
        assert_eq!(w.deferred_due(), Some(4104));
        assert_eq!(w.remove(first), Some(0), "nothing left of 4098's firing");
        w.check_invariants();
        assert_eq!(w.next_due(), Some(4099));
        assert_eq!(w.fire_within(4099, &mut 1, &mut out, by_value), Some(1));
        w.check_invariants();
        assert_eq!(out, [1]);
        assert_eq!(w.next_due(), Some(4104), "the far list's due tick");
        assert_eq!(run_to(&mut w, 4114), [(4114, 2)]);
    }

    /// Every entry of an unfinished firing removed: the wheel goes on from
    /// the next due tick, and an empty wheel has nothing due.
    #[test]
    fn an_unfinished_firing_emptied_by_removals_is_skipped() {
        let mut w = TimerWheel::new(64, 0);
        let keys: Vec<super::Key> = (0..10u32).map(|v| w.insert(64, v).unwrap()).collect();
        let after = w.insert(66, 10).unwrap();
        w.advance(66);
        let mut fired = Vec::new();
        assert_eq!(w.fire_keys_within(64, &mut 3, &mut fired), None);
        assert_eq!(fired.len(), 3, "a step of the tick's slot");
        let pending = keys.into_iter().filter_map(|key| w.remove(key)).count();
        assert_eq!(pending, 7, "the rest of the slot");
        w.check_invariants();
        assert_eq!(w.next_due(), Some(66));
        assert_eq!(run_to(&mut w, 66), [(66, 10)]);
        assert_eq!(w.remove(after), None);
        assert_eq!(w.next_due(), None);
        w.check_invariants();
    }

    #[test]
    fn fire_now_hands_out_an_entry_before_its_tick() {
        let mut w = TimerWheel::new(8, 0);
        // Level 2's far list: the slot of ticks 4096 to 8191, past its first
        // revolution.
        let k = w.insert(4796, 1).unwrap();
        w.insert(4797, 2).unwrap();
        assert_eq!(w.fire_now(k), 1);
        assert!(w.is_fired(k));
        w.check_invariants();
        // The slot keeps its bound (invariant 5): the revolution before it
        // is visited, and takes out 4797 only.
        assert_eq!(w.next_due(), Some(4784));
        assert_eq!(w.stale_slots(), 1);
        assert_eq!(run_to(&mut w, 4900), vec![(4797, 2)]);
        assert_eq!(w.counters().fired, 2);
    }

    #[test]
    fn rearm_makes_a_fired_entry_pending_again() {
        let mut w = TimerWheel::new(4, 0);
        let k = w.insert(2, 1).unwrap();
        assert_eq!(run_to(&mut w, 2), vec![(2, 1)]);
        assert_eq!(w.rearm(k, 2, 5), Err(5), "not again for a due tick");
        w.rearm(k, 6, 6).unwrap();
        assert!(!w.is_fired(k));
        assert_eq!(w.pending(), 1);
        assert_eq!(run_to(&mut w, 6), vec![(6, 6)]);
        assert_eq!((w.counters().registered, w.counters().rearmed), (1, 1));
    }

    #[test]
    fn renew_links_a_fired_entry_as_a_new_timer() {
        let mut w = TimerWheel::new(4, 0);
        let k = w.insert(2, 1).unwrap();
        assert_eq!(run_to(&mut w, 2), vec![(2, 1)]);
        assert_eq!(w.renew(k, 2, 5), Err(5), "not for a due tick");
        w.renew(k, 9, 9).unwrap();
        assert_eq!(w.pending(), 1);
        assert_eq!(run_to(&mut w, 8), vec![]);
        assert_eq!(run_to(&mut w, 9), vec![(9, 9)]);
        let c = w.counters();
        assert_eq!((c.registered, c.fired, c.rearmed), (2, 2, 0));
        w.check_invariants();
    }

    #[test]
    fn value_mut_reaches_pending_entries_only() {
        let mut w = TimerWheel::new(4, 0);
        let k = w.insert(1, 1).unwrap();
        *w.value_mut(k).unwrap() = 2;
        assert_eq!(run_to(&mut w, 1), vec![(1, 2)]);
        assert!(w.value_mut(k).is_none());
    }

    #[test]
    fn firing_near_ticks_never_visits_far_entries() {
        // 10k entries a long way out, on upper levels, and near ones firing
        // every tick: the near ticks move nothing (no cascade, no walk).
        let mut w = TimerWheel::new(64, 0);
        for i in 0..10_000u32 {
            w.insert(1_000_000 + u64::from(i) * 97, i).unwrap();
        }
        for t in 1..=2_000u64 {
            w.insert(t, 7).unwrap();
        }
        let fired = run_to(&mut w, 2_000);
        assert_eq!(fired.len(), 2_000);
        // Each near entry beyond level 0's first two revolutions (ticks 1 to
        // 127) moved down once; not one far entry moved.
        assert_eq!(
            w.counters().cascaded,
            2_000 - 127,
            "far entries were touched"
        );
        assert_eq!(w.pending(), 10_000);
        assert_eq!(w.next_due(), Some(1_000_000 - 64), "the revolution before");
    }

    #[test]
    fn an_entry_moves_down_at_most_levels_minus_one_times() {
        for slots in [1, 8, 512] {
            for far in [u64::MAX / 3, 1 << 40, 123_456_789, 70_000] {
                let mut w = TimerWheel::new(slots, 0);
                w.insert(far, 1).unwrap();
                // Visit the wheel often on the way, as a busy driver would.
                let mut now = 0;
                while now < far {
                    now = (now + far / 7 + 1).min(far);
                    let fired = run_to(&mut w, now);
                    assert_eq!(fired.is_empty(), now < far, "slots {slots}, far {far}");
                }
                let levels = w.levels() as u64;
                assert!(
                    w.counters().cascaded < levels,
                    "slots {slots}, far {far}: {} moves with {levels} levels",
                    w.counters().cascaded
                );
            }
        }
    }

    #[test]
    fn a_mass_cancel_shrinks_the_slab_around_a_survivor() {
        let mut w = TimerWheel::new(64, 0);
        let survivor = w.insert(1_000_000, 0).unwrap();
        let keys: Vec<super::Key> = (1..=100_000)
            .map(|i| w.insert(i, i as u32).unwrap())
            .collect();
        let peak = w.capacity();
        assert!(peak > 100_000);
        // Down to a sixth: over an eighth full, so no shrink (hysteresis).
        for &k in &keys[17_000..] {
            w.remove(k);
        }
        assert_eq!(w.capacity(), peak, "shrank while over an eighth full");
        for &k in &keys[..17_000] {
            w.remove(k);
        }
        w.check_invariants();
        assert_eq!(w.len(), 1);
        assert!(
            w.capacity() <= super::SHRINK_ABOVE,
            "{} entries kept",
            w.capacity()
        );
        assert_eq!(w.remove(survivor), Some(0), "the survivor's key is intact");
    }

    #[test]
    fn the_slab_shrinks_only_below_its_last_live_entry() {
        let mut w = TimerWheel::new(64, 0);
        let keys: Vec<super::Key> = (1..=10_000)
            .map(|i| w.insert(i, i as u32).unwrap())
            .collect();
        // The last entry stays: only the buffer's room past it is freed.
        for &k in &keys[..9_999] {
            w.remove(k);
        }
        assert_eq!(w.capacity(), 10_000);
        assert_eq!(run_to(&mut w, 10_000), vec![(10_000, 10_000)]);
        w.remove(keys[9_999]);
        assert_eq!(w.capacity(), 0, "empty: all freed");
    }

    #[test]
    fn cancel_and_reschedule_on_upper_levels_keep_next_due_exact() {
        let mut w = TimerWheel::new(8, 0);
        // `next_due` is the first tick of the revolution before the
        // earliest entry's, for entries on upper levels.
        let a = w.insert(4_696, 1).unwrap(); // level 2
        let b = w.insert(4_746, 2).unwrap(); // same level-2 slot
        w.insert(12_000, 3).unwrap();
        assert_eq!(w.next_due(), Some(4_688));
        w.remove(a);
        w.check_invariants();
        // The slot keeps its bound rather than walk its list; visiting the
        // revolution before it takes out what is there, nothing here.
        assert_eq!(w.next_due(), Some(4_688), "stale bound kept");
        assert_eq!(w.stale_slots(), 1);
        assert_eq!(w.reschedule(b, 20), None, "moved down to level 1");
        assert_eq!(w.next_due(), Some(8));
        assert_eq!(w.reschedule(b, 12), None, "into level 0's ring");
        assert_eq!(w.next_due(), Some(12));
        assert_eq!(w.reschedule(b, 4_999), None, "and back up");
        assert_eq!(w.next_due(), Some(4_984));
        assert_eq!(run_to(&mut w, 20_000), vec![(4_999, 2), (12_000, 3)]);
        assert_eq!(w.next_due(), None);
    }

    #[test]
    fn cancels_from_one_upper_slot_cost_no_walk_and_one_empty_visit() {
        // 4000 entries in one level-2 slot (64 * 512 ticks wide), cancelled
        // earliest first, asking `next_due` after each cancel, as the
        // driver's pass does: the bound stays where it was (a walk would
        // have made it exact, at a cost of the whole slot per cancel).
        let mut w = TimerWheel::new(64, 0);
        let base = 5 * 32768;
        let keys: Vec<_> = (0..4000u32)
            .map(|i| w.insert(base + u64::from(i), i).unwrap())
            .collect();
        // Visited the revolution before the bound's.
        let visit = base - 64;
        assert_eq!(w.next_due(), Some(visit));
        for &k in &keys[..3000] {
            w.remove(k);
            assert_eq!(w.next_due(), Some(visit), "the bound was walked");
        }
        w.check_invariants();
        assert_eq!(w.stale_slots(), 1);
        // The visit of the revolution before the bound's finds its first
        // revolution empty: a visit with nothing to do; the next enters the
        // slot and defers its far list, which is linked between ticks, as the
        // driver does (else the end of its first revolution is visited to
        // link it). Then the revolution before the first entry left is
        // visited, and every tick left fires in order, with nothing in
        // between.
        w.advance(base + 4000);
        let mut empty = 0;
        let mut fired = Vec::new();
        while let Some(t) = w.next_due().filter(|&t| t <= base + 4000) {
            let mut out = Vec::new();
            if w.fire(t, &mut out) == 0 {
                empty += 1;
            }
            assert!(w.cascade_ahead(&mut { usize::MAX }, by_value));
            fired.extend(out.into_iter().map(|v| (t, v)));
        }
        w.check_invariants();
        // The stale bound's, the slot's entry, and the revolution before
        // the first entry left (those after it are taken out as the ticks
        // before them fire): none fired anything.
        assert_eq!(empty, 3, "visits that fired nothing");
        let expected: Vec<_> = (3000..4000u32).map(|i| (base + u64::from(i), i)).collect();
        assert_eq!(fired, expected);
        assert_eq!(w.stale_slots(), 0);
    }

    #[test]
    fn shrink_only_when_empty() {
        let mut w = TimerWheel::new(4, 0);
        let keys: Vec<_> = (0..5000)
            .map(|i| w.insert(1 + i, i as u32).unwrap())
            .collect();
        let last = *keys.last().unwrap();
        for &k in &keys[..4999] {
            w.remove(k);
        }
        w.shrink_if_empty();
        assert_eq!(w.len(), 1, "a live key keeps the slab");
        w.remove(last);
        w.shrink_if_empty();
        assert_eq!(w.entries.capacity(), 0);
    }

    #[test]
    fn fire_keys_leaves_values_for_their_owner() {
        let mut w = TimerWheel::new(8, 0);
        let a = w.insert(3, 1).unwrap();
        let b = w.insert(3, 2).unwrap();
        let c = w.insert(4796, 3).unwrap(); // level 2's far list
        w.advance(3);
        let mut keys = Vec::new();
        assert_eq!(w.fire_keys(3, &mut keys), 2);
        keys.sort_unstable();
        assert_eq!(keys, vec![a, b]);
        w.check_invariants();
        assert!(w.is_fired(a) && w.is_fired(b));
        assert_eq!(
            (w.get(a), w.get(b)),
            (Some(&1), Some(&2)),
            "values in place"
        );
        assert_eq!((w.pending(), w.len()), (1, 3));
        assert_eq!(w.take(a), 1);
        assert!(!w.relink(b, 3), "not again for a due tick");
        assert!(w.relink(b, 9));
        assert_eq!(w.tick_of(b), 9);
        w.check_invariants();
        assert_eq!(w.next_due(), Some(9));
        assert_eq!(run_to(&mut w, 9), vec![(9, 2)]);
        assert_eq!(w.take(c), 3, "a pending entry is cancelled");
        w.check_invariants();
        assert_eq!((w.pending(), w.len()), (0, 1));
        assert_eq!(w.get(a), None, "a removed key holds nothing");
    }

    #[test]
    fn fire_and_fire_keys_fire_the_same_entries() {
        let mut by_value = TimerWheel::new(4, 0);
        let mut by_key = TimerWheel::new(4, 0);
        for t in [5, 1, 70, 5, 2, 300] {
            by_value.insert(t, t as u32).unwrap();
            by_key.insert(t, t as u32).unwrap();
        }
        for now in 1..=300 {
            let mut values = run_to(&mut by_value, now);
            by_key.advance(now);
            let mut keyed = Vec::new();
            while let Some(t) = by_key.next_due().filter(|&t| t <= now) {
                let mut keys = Vec::new();
                by_key.fire_keys(t, &mut keys);
                keyed.extend(keys.into_iter().map(|k| (t, by_key.take(k))));
                by_key.check_invariants();
            }
            values.sort_unstable();
            keyed.sort_unstable();
            assert_eq!(values, keyed, "at {now}");
        }
        assert_eq!(by_key.len(), 0);
    }

    #[test]
    fn insert_fired_and_mark_fired_keep_the_value() {
        let mut w = TimerWheel::new(8, 10);
        let a = w.insert_fired(7, 1);
        assert!(w.is_fired(a));
        assert_eq!((w.pending(), w.len(), w.tick_of(a)), (0, 1, 7));
        w.check_invariants();
        let b = w.insert(40, 2).unwrap();
        w.mark_fired(b, 10);
        assert!(w.is_fired(b));
        assert_eq!((w.get(b), w.tick_of(b)), (Some(&2), 10));
        w.check_invariants();
        assert_eq!(w.next_due(), None);
        w.mark_fired(a, 9);
        assert_eq!(w.tick_of(a), 9, "a fired entry only gets its tick");
        assert!(w.relink(a, 12));
        *w.get_mut(a).unwrap() = 5;
        assert_eq!(run_to(&mut w, 12), vec![(12, 5)]);
        let mut all = Vec::new();
        w.take_all(&mut all);
        assert_eq!(all.len(), 2);
        assert_eq!(w.len(), 0);
        w.check_invariants();
    }
}
