//! A `Sleep`'s life in the wheel, in the role of tokio's `TimerEntry`:
//! registration on the first pending poll, the lock-free poll, an
//! interval's completion without the lock, the waker swap, the re-arm of an
//! entry that fired early, `reset`, cancellation on drop, and the fall-back
//! to Tokio's timer after a shutdown.
//!
//! Every operation here that links an entry or changes it (registration,
//! re-arm, waker swap, reset) ends in [`SleepEntry::schedule`] (or in
//! `WheelCore::schedule` directly), after its critical section: step (2) of
//! "Shutdown" in the driver's docs. `Sleep` only calls [`SleepEntry::poll`],
//! [`SleepEntry::reset`], [`SleepEntry::is_elapsed`] and
//! [`SleepEntry::leave`], so it cannot skip that step.
//!
//! # Polling without the lock
//!
//! A `Sleep` polled again with the same waker before its entry fired need
//! not lock its shard (a server's idle timer is polled on every frame). It
//! keeps its waker's identity (`Shard::waker_id`), and compares it with the
//! poll's; and each shard publishes `fired_upto`, raised by the driver under
//! the lock right after it fires a tick there, before it wakes any of that
//! tick's wakers. A `Sleep` knows a tick its entry is linked at or after
//! (its deadline's; once its deadline was pushed back, the last value of
//! the slot's `filed` it saw, or an earlier tick, and the slot's own once
//! the shard has fired that one or none is kept, see `State::Tracked`,
//! `Filed` and `deadline.rs`), so if that
//! tick is after `fired_upto` the entry has not fired, or is firing right
//! now and its waker (the same as this poll's) is woken after the store, so
//! the task is polled again and then sees the new value. Either way
//! `Pending` is right. Any other poll takes the lock, but an interval's
//! (see "Completing without the lock"). The loom models
//! `loom_lock_free_poll_racing_a_firing_pass`,
//! `loom_lock_free_poll_racing_a_refiling_pass` and
//! `loom_lock_free_poll_racing_a_second_refiling_pass` check this.
//!
//! The lock-free poll still reads the shut-down flag and the driver's
//! planned tick (`Handoff::covers`, two loads inlined into the poll, with no
//! call unless one of them says there is something to do): a poll woken by
//! shutdown's scan must see the flag and go over to Tokio's timer, and one
//! whose driver was stopped with its runtime starts a new one.
//!
//! # Completing without the lock
//!
//! The converse holds for an entry linked at its deadline's own tick: the
//! driver raises `fired_upto` to a tick only once every entry of the shard
//! due at or before it has fired (ticks fire in order, a tick's cascade in
//! steps is finished first, and no registration is accepted at or before
//! the wheel's `elapsed`, which the firing reached), so if the deadline's
//! tick is at or before `fired_upto`, the entry has fired, and the
//! deadline has passed (its tick is at or before `elapsed`, see
//! `has_passed`; tick 0 proves nothing and is left to the lock). An
//! interval's poll (`keep`) with the registered waker then completes
//! without the lock, leaving the fired entry in the slab (`State::Fired`),
//! and the next tick's registration links that entry again (`State::Kept`,
//! `TimerWheel::renew`): one lock a tick, as `tokio::time::Interval` takes,
//! where completing and registering took two. A `Sleep` whose entry may be
//! linked after its deadline's tick (see `register` and `rearm`) keeps the
//! waker identity 0, so it never takes this path, nor the lock-free
//! `Pending`. Other sleeps still complete under the lock and free their
//! entry there: a completed `Sleep` kept alive does not hold the slab. The
//! loom model `loom_lock_free_completion_racing_a_firing_pass` checks it.

use std::sync::Arc;
use std::task::{Context, Waker};

use tokio::time::Instant;

use super::deadline::Page;
use super::shard::{Shard, ShardState};
use super::wake::{drop_waker, wake};
use super::{NoDriver, WheelCore};
use crate::clock::MAX_TICK;
use crate::wheel::Key;

/// A `Sleep` on its wheel: the shard it registers in and its state there.
/// Dropping it cancels the entry.
pub(crate) struct SleepEntry {
    shard: Arc<Shard>,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Not in the wheel: never polled, reset, or due at the first poll.
    /// `reserved`: holds a place under `Builder::max_pending` (made by a
    /// `try_` constructor), which the entry takes over on registration.
    /// `future`: the clock, read when the `Sleep` was made, was before the
    /// deadline, so the first poll registers without reading it again.
    Idle { reserved: bool, future: bool },
    /// As `Idle` (never `reserved`), holding the fired entry `key` of a
    /// `Fired` `Sleep` that was reset (an interval's next tick): the
    /// registration links it again rather than taking a new one.
    Kept { key: Key, future: bool },
    /// In the wheel under `key`, linked at (or fired from) the deadline's tick, or
    /// a later one only if the wheel's clock ran ahead of the runtime's (see
    /// `register`) or the entry was re-armed after the wheel passed that
    /// tick (see `rearm`). `waker`: the registered waker's identity
    /// (`Shard::waker_id`), so that a poll with the same waker needs no lock
    /// before the entry's tick has fired (see "Polling without the lock")
    /// nor, for an interval, after (see "Completing without the lock"), and
    /// the first push back need not read the entry (see `track`); 0
    /// (no lock-free poll) for an unknown waker, an entry linked after the
    /// deadline's tick, and one that fired for another deadline than this
    /// one and that no poll has seen (a reset raced the firing: see `track`
    /// and `move_earlier`) or that fired out of turn (`move_earlier`). A
    /// nonzero `waker` thus says the entry is linked at the deadline's tick
    /// or has fired.
    Registered { key: Key, waker: usize },
    /// In the wheel under `key`, tracked by its shard (see `deadline.rs`):
    /// the deadline was pushed back while registered, and the entry is
    /// linked at its slot's `filed` or later. The slot's `tick` is always
    /// the tick of the `Sleep`'s deadline: every change of the deadline in
    /// this state writes it. `page` holds the slot. Every change out of
    /// this state untracks the entry under the lock that makes it
    /// (invariant 1 of `deadline.rs`).
    ///
    /// `waker`: the registered waker's identity, as in `Registered` (0 for
    /// an unknown one or one of another vtable than the shard's usual one,
    /// which takes the lock); the entry may be linked after the deadline's
    /// tick here, so it proves nothing after `filed` has fired. `filed`:
    /// the last value of the slot's `filed` this `Sleep` read or wrote, a
    /// tick the entry is linked at or after (the slot's only goes down by
    /// this `Sleep`'s own writes), so that a poll reads the slot, a line
    /// outside the task, only once the shard has fired that tick or its
    /// driver is not planned at or before it (see "Polling without the
    /// lock"). It is kept as its distance below the deadline's tick, in
    /// three bytes (see [`Filed`]), so that the state is 24 bytes and a
    /// `Sleep` 40: as the deadline's tick when `filed` is after it, and not
    /// at all when it is too far below it (the poll reads the slot then).
    Tracked {
        key: Key,
        filed: Filed,
        page: Arc<Page>,
        waker: usize,
    },
    /// Completed.
    Elapsed,
    /// Completed without the lock (an interval's tick, see "Completing
    /// without the lock"): the entry `key` fired and stays in the slab, for
    /// a reset to link again (`Kept`) or the drop to free.
    Fired { key: Key },
}

/// A tracked `Sleep`'s kept `filed` (see `State::Tracked`): how many ticks
/// it lies before the tick of the `Sleep`'s deadline, in 24 bits, or none.
///
/// A full tick would make the state 32 bytes and a `Sleep` 48; the distance
/// fits beside the key and the state's tag. The `Sleep` knows its
/// deadline's tick (a division of the deadline it keeps), and moves the
/// distance with it when a reset pushes the deadline back
/// ([`later`](Self::later)), so the tick it stands for stays put.
///
/// Any tick at or before the one kept still proves what the kept one does
/// (the entry is linked at or after it), only less often. So a `filed`
/// after the deadline's tick (an entry linked after it, see `register` and
/// `rearm`) is kept as the deadline's tick itself, and one 2^24 - 1 ticks
/// or more before it (4.6 hours at a 1 ms tick, 46 hours at the default
/// 10 ms) is not kept: every poll then reads the slot, as it does once the
/// kept tick has fired, until a read finds a `filed` in range again (the
/// pass files the entry again at the deadline's tick). Never a later tick
/// than the entry's, which could say that an entry that fired had not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Filed([u8; 3]);

impl Filed {
    /// Not kept.
    const NONE: u32 = (1 << 24) - 1;

    /// `filed` kept for a deadline at tick `due`.
    pub(super) fn new(filed: u64, due: u64) -> Self {
        Self::of(Self::clamp(due.saturating_sub(filed)))
    }

    /// A distance, or `NONE` if it is that or more.
    #[inline]
    fn clamp(below: u64) -> u32 {
        below.min(u64::from(Self::NONE)) as u32
    }

    fn of(below: u32) -> Self {
        debug_assert!(below <= Self::NONE, "{below} does not fit in 24 bits");
        let [a, b, c, _] = below.to_le_bytes();
        Filed([a, b, c])
    }

    fn below(self) -> u32 {
        let [a, b, c] = self.0;
        u32::from_le_bytes([a, b, c, 0])
    }

    /// The tick kept, for a deadline at tick `due` (the one it was kept
    /// for, or moved to by [`later`](Self::later)).
    #[inline]
    pub(super) fn tick(self, due: u64) -> Option<u64> {
        let below = self.below();
        if below == Self::NONE {
            return None;
        }
        // Never past `due` (the distance is kept and moved with it); if it
        // were, the slot is read rather than a tick wrapped around.
        due.checked_sub(u64::from(below))
    }

    /// Whether a tick is kept at all.
    #[inline]
    pub(super) fn is_kept(self) -> bool {
        self.below() != Self::NONE
    }

    /// The deadline's tick moved `by` ticks later: the same tick, further
    /// below it.
    #[inline]
    pub(super) fn later(self, by: u64) -> Self {
        let below = self.below();
        if below == Self::NONE {
            return self;
        }
        // Both under 2^24: no overflow.
        Self::of((below + Self::clamp(by)).min(Self::NONE))
    }
}

impl std::fmt::Debug for Filed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.below() {
            Self::NONE => f.write_str("Filed(none)"),
            below => write!(f, "Filed({below} below)"),
        }
    }
}

/// What a poll on the wheel came to.
pub(crate) enum Step {
    Ready,
    /// Ready, found due by the registering poll (see `Sleep`'s "The first
    /// poll", which may yield once on it).
    Due,
    Pending,
    /// The wheel is shut down and the entry taken out: continue on Tokio's
    /// own timer, due at this instant (the deadline).
    FallBack(Instant),
}

impl SleepEntry {
    /// An entry not yet in the wheel; `reserved` and `future` as in
    /// `State::Idle`.
    pub(crate) fn new(shard: Arc<Shard>, reserved: bool, future: bool) -> Self {
        SleepEntry {
            shard,
            state: State::Idle { reserved, future },
        }
    }

    /// What the wheel's shards share: its clock, its bound.
    pub(crate) fn core(&self) -> &WheelCore {
        &self.shard.core
    }

    /// The shard, for a `Sleep` that leaves the wheel (to come back later).
    pub(crate) fn shard(&self) -> &Arc<Shard> {
        &self.shard
    }

    /// What `Sleep`'s `Debug` says of it.
    pub(crate) fn describe(&self) -> &'static str {
        match self.state {
            State::Idle { .. } | State::Kept { .. } => "idle",
            State::Registered { .. } | State::Tracked { .. } => "registered",
            State::Elapsed | State::Fired { .. } => "elapsed",
        }
    }

    /// Whether the entry fired and `deadline` has passed (see
    /// `Sleep::is_elapsed`).
    pub(crate) fn is_elapsed(&self, deadline: i64) -> bool {
        match self.state {
            State::Idle { .. } | State::Kept { .. } => false,
            State::Elapsed | State::Fired { .. } => true,
            State::Registered { key, .. } | State::Tracked { key, .. } => {
                let shard = self.shard.lock();
                let fired = shard.sleeps.is_fired(key);
                let elapsed = shard.sleeps.elapsed();
                drop(shard);
                fired && self.has_passed(deadline, elapsed)
            }
        }
    }

    /// The `Sleep` leaves the wheel (a reset beyond its range): the entry is
    /// taken out and the task that registered (maybe not this one) is woken
    /// to poll again and wait on Tokio's timer.
    pub(crate) fn leave(&mut self) {
        self.unregister_and_wake();
    }

    /// The clock, in the same units as a deadline.
    fn now(&self) -> i64 {
        self.shard.core.clock.offset_of(Instant::now())
    }

    /// Whether `deadline` has passed, for an entry found fired: `elapsed` is
    /// the shard's wheel's (`TimerWheel::elapsed`), read under the lock.
    ///
    /// Without a clock read when the wheel proves it: the wheel only ever
    /// advances to `TickClock::floor` of a reading of the clock (the
    /// driver's pass), so a deadline whose tick is at or before `elapsed`
    /// had passed at that reading, and the clock does not go back. Tick 0 is
    /// the exception (the floor of any reading before the origin is 0, so
    /// reaching it proves nothing): such a deadline, and one after
    /// `elapsed` (a deadline pushed back after its entry fired, an entry
    /// fired by `move_earlier`), take the clock read. This relies on the
    /// driver and the `Sleep` reading the same clock, which sharing a wheel
    /// only between runtimes that share a clock (see `Wheel`) gives, and is
    /// what `tokio::time` relies on too (its `Sleep` completes when its
    /// driver has fired it). It saves a clock read, and its conversion, on
    /// every completed sleep: 138 of the 1731 instructions a completed
    /// sleep cost (callgrind, `benches/instructions.rs`, `sleep-wheel`).
    fn has_passed(&self, deadline: i64, elapsed: u64) -> bool {
        let tick = self.tick_of(deadline);
        (tick != 0 && tick <= elapsed) || deadline <= self.now()
    }

    fn tick_of(&self, deadline: i64) -> u64 {
        self.shard.core.clock.ceil_offset(deadline)
    }

    /// A poll of the `Sleep` due at `deadline`: completes, registers, swaps
    /// the waker, re-arms or falls back, as its state needs. `keep`: an
    /// interval's poll, which completes without the lock when it can (see
    /// "Completing without the lock" in the module docs). Inline: it is
    /// every poll's path, and `Sleep::poll` is in another codegen unit
    /// (`always`: a call here cost a completed sleep 94 instructions).
    #[inline(always)]
    pub(crate) fn poll(&mut self, deadline: i64, keep: bool, cx: &mut Context<'_>) -> Step {
        // Lock-free: see "Polling without the lock" in the module docs.
        // `schedule` still reads the shut-down flag.
        match self.state {
            State::Elapsed | State::Fired { .. } => Step::Ready,
            State::Idle { reserved, future } => self.register(deadline, reserved, future, None, cx),
            State::Kept { key, future } => self.register_kept(deadline, future, key, cx),
            State::Registered { key, waker } => {
                let filed = self.tick_of(deadline);
                if self.shard.is_waker(waker, cx.waker()) {
                    if !self.shard.may_have_fired(filed) {
                        return self.schedule(filed, deadline);
                    }
                    if keep && filed != 0 {
                        // Fired, and the deadline has passed: see
                        // "Completing without the lock" in the module docs.
                        self.state = State::Fired { key };
                        return Step::Ready;
                    }
                }
                self.poll_registered(deadline, key, cx)
            }
            State::Tracked {
                key, waker, filed, ..
            } => {
                if self.shard.is_waker(waker, cx.waker()) {
                    // As `schedule`, but a driver planned after the kept
                    // tick (or none, or a shutdown) first reads the slot: the
                    // pass may have filed the entry again early (a cascade),
                    // and the driver, told of the kept tick, would wake for
                    // nothing.
                    let due = self.tick_of(deadline);
                    if let Some(filed) = filed.tick(due) {
                        if !self.shard.may_have_fired(filed)
                            && self.shard.core.handoff.covers(filed)
                        {
                            return Step::Pending;
                        }
                    }
                    if let Some(filed) = self.filed_now(due) {
                        return self.schedule(filed, deadline);
                    }
                }
                self.poll_registered(deadline, key, cx)
            }
        }
    }

    /// The deadline moved from `old` to `new`. `future`: the caller read the
    /// clock and it was before `new` (`Sleep::reset_after_reading`), which
    /// spares a `Sleep` out of the wheel the clock read of its registration.
    pub(crate) fn reset(&mut self, old: i64, new: i64, future: bool) {
        let key = match self.state {
            State::Registered { key, .. } | State::Tracked { key, .. } => key,
            _ => return self.reset_unregistered(future),
        };
        if self.shard.core.is_shut_down() {
            // The next poll goes over to Tokio's timer. Shutdown's scan of
            // this shard may come after this unregistration and miss the
            // entry, so wake its task here (it may be another than this).
            self.unregister_and_wake();
            return;
        }
        // Both from the `Sleep`'s own deadlines, not the slot's tick (the
        // same: see `State::Tracked`): a division is cheaper than a load of
        // a line that is cold once per frame.
        let new_tick = self.tick_of(new);
        // An idle timeout pushed back by a frame moves a whole tick or more:
        // later, told without the old deadline's tick (a division), which
        // only a tracked `Sleep` keeping its entry's tick then needs.
        let later = self.shard.core.clock.a_tick_later(old, new) || {
            let old_tick = self.tick_of(old);
            if new_tick == old_tick {
                // Same tick: the entry stays (an idle timeout reset several
                // times within one tick costs nothing more).
                return;
            }
            new_tick > old_tick
        };
        if later {
            // Later: the entry stays where it is, and the firing pass files
            // it again for the new deadline when it gets there (see
            // `deadline.rs`): one store, once the entry is tracked.
            match self.state {
                State::Tracked {
                    key,
                    ref page,
                    ref mut filed,
                    ..
                } => {
                    page.slot(key).push_back(new_tick);
                    // The kept tick stays where it is, further below the
                    // deadline's.
                    if filed.is_kept() {
                        let old_tick = self.shard.core.clock.ceil_offset(old);
                        *filed = filed.later(new_tick - old_tick);
                    }
                }
                State::Registered { waker, .. } => self.track(key, waker, old, new_tick),
                _ => unreachable!("reset of a `Sleep` with no entry linked"),
            }
            return;
        }
        self.move_earlier(key, new, new_tick);
    }

    /// [`reset`](Self::reset) of a `Sleep` with no entry linked: nothing to
    /// move. Out of line: the reset of a registered `Sleep` (an idle
    /// timeout's, on every frame) ran 7 more instructions with it inlined.
    #[inline(never)]
    fn reset_unregistered(&mut self, future: bool) {
        self.state = match self.state {
            // The clock read at creation says nothing of the new deadline;
            // the caller's reading, if any, does.
            State::Idle { reserved, .. } => State::Idle { reserved, future },
            State::Kept { key, .. } | State::Fired { key } => State::Kept { key, future },
            State::Elapsed => State::Idle {
                reserved: false,
                future,
            },
            State::Registered { .. } | State::Tracked { .. } => {
                unreachable!("a registered sleep has its entry to move")
            }
        };
    }

    /// The first reset of a registered `Sleep` to a later tick: its shard
    /// tracks the entry, which stays where it is, with the new deadline in
    /// the entry's slot (see `deadline.rs`). Called in `State::Registered`
    /// only, with its waker identity `id`: a tracked `Sleep` pushes back
    /// without the lock. `old`: the deadline before the reset.
    ///
    /// A `Sleep` that knows its waker's identity knows where its entry is
    /// linked (its old deadline's tick, see `State::Registered`) and which
    /// waker the entry holds, so the slot is filled without a look at the
    /// entry in the slab, a line no frame had touched since the
    /// registration: when the entry cannot have fired (the wheel has not
    /// reached its tick), only the page and its slot are read and written.
    /// Live, in the window of the matrix's `base` cell, where every
    /// connection's first frame tracks its idle timeout, that look was
    /// the step of the wheel's that waited longest (`docs/benchmarks.md`,
    /// "A sampled profile, live").
    ///
    /// Out of line, as `move_earlier` and `unregister_and_wake` are: an idle
    /// timeout's `reset` runs on every frame and pushes the deadline later,
    /// so these run once per wait or less there, and with them inlined the
    /// frame's path ran 12 more instructions (callgrind, the pattern harness
    /// at 100k connections).
    #[cold]
    #[inline(never)]
    fn track(&mut self, key: Key, id: usize, old: i64, tick: u64) {
        // Linked at the old deadline's tick, or fired: a nonzero identity
        // says so (`State::Registered`).
        let known = (id != 0).then(|| self.tick_of(old));
        let mut guard = self.shard.lock();
        let shard = &mut *guard;
        let (filed, waker) = match known {
            // Entries fire only at ticks the wheel has reached, and only
            // this `Sleep` fires its own out of turn (`move_earlier`, which
            // then forgets the identity).
            Some(filed) if filed > shard.sleeps.elapsed() => {
                debug_assert_eq!(shard.sleeps.tick_of(key), filed, "linked elsewhere");
                debug_assert!(
                    shard
                        .sleeps
                        .value_mut(key)
                        .is_some_and(|w| self.shard.is_waker(id, w)),
                    "another waker, or fired"
                );
                (filed, id)
            }
            _ => {
                let filed = shard.sleeps.tick_of(key);
                let Some(waker) = shard.sleeps.value_mut(key) else {
                    // It fired for the old deadline and no poll has seen it
                    // yet. The next poll completes, if the new deadline has
                    // passed, or re-arms the entry; it must take the lock to
                    // see that (the lock-free check would take the new
                    // deadline's tick, not yet fired, for the entry's).
                    drop(guard);
                    self.state = State::Registered { key, waker: 0 };
                    return;
                };
                // The identity of the waker it holds, if one of the usual
                // vtable: the poll takes the lock for any other.
                (filed, self.shard.waker_id(waker))
            }
        };
        let page = shard.deadlines.track(key, tick, filed);
        drop(guard);
        self.state = State::Tracked {
            key,
            filed: Filed::new(filed, tick),
            page,
            waker,
        };
    }

    /// The lock-free poll of a tracked `Sleep` whose kept `filed` proves
    /// nothing any more (its shard fired that tick) or that its driver is
    /// not planned for: reads the slot's, keeps it, and returns it if that
    /// tick has not fired (the pass filed the entry again for the
    /// pushed-back deadline). `due`: the tick of the `Sleep`'s deadline.
    /// Out of line: about once per wait, where the poll runs on every frame.
    #[cold]
    #[inline(never)]
    fn filed_now(&mut self, due: u64) -> Option<u64> {
        self.read_filed(due)
            .filter(|&filed| !self.shard.may_have_fired(filed))
    }

    /// A tracked `Sleep`'s slot's `filed`, read and kept (see
    /// `State::Tracked`) for its deadline's tick `due`; `None` if the
    /// `Sleep` is not tracked.
    #[inline]
    fn read_filed(&mut self, due: u64) -> Option<u64> {
        match &mut self.state {
            State::Tracked {
                key, page, filed, ..
            } => {
                let slot_filed = page.slot(*key).filed();
                *filed = Filed::new(slot_filed, due);
                Some(slot_filed)
            }
            _ => None,
        }
    }

    /// Whether the `Sleep` is registered with a known waker identity, so
    /// that its first push back fills the slot without reading the entry
    /// (see [`track`](Self::track)): for the loom models.
    #[cfg(all(test, tokio_wheel_loom))]
    pub(crate) fn knows_its_waker(&self) -> bool {
        matches!(self.state, State::Registered { waker, .. } if waker != 0)
    }

    /// Whether the entry is tracked (its deadline pushed back into its
    /// slot): for the loom models.
    #[cfg(all(test, tokio_wheel_loom))]
    pub(crate) fn is_tracked(&self) -> bool {
        matches!(self.state, State::Tracked { .. })
    }

    /// A reset to an earlier tick: the entry moves, in O(1) under the lock,
    /// so that the task is woken at the new deadline's tick. A deadline that
    /// has passed (one clock read, only on this path) fires now and the next
    /// poll completes, as with `tokio::time`, rather than at the driver's
    /// next pass.
    #[cold]
    #[inline(never)]
    fn move_earlier(&mut self, key: Key, new: i64, new_tick: u64) {
        let mut shard = self.shard.lock();
        let tracked = matches!(self.state, State::Tracked { .. });
        if shard.sleeps.is_fired(key) {
            // As in `track`: the next poll takes the lock.
            if tracked {
                shard.deadlines.untrack(key);
            }
            drop(shard);
            self.state = State::Registered { key, waker: 0 };
            return;
        }
        let due_now = if new <= self.now() {
            Some(shard.sleeps.fire_now(key))
        } else {
            shard.sleeps.reschedule(key, new_tick)
        };
        if let State::Tracked { page, filed, .. } = &mut self.state {
            if due_now.is_some() {
                shard.deadlines.untrack(key);
            } else {
                page.slot(key).moved_to(new_tick);
                *filed = Filed::new(new_tick, new_tick);
            }
        }
        let due_by = shard.sleeps.due_by(new_tick);
        drop(shard);
        match due_now {
            Some(waker) => {
                // The new deadline has passed: the entry fired here, not in
                // the driver (and was untracked above), so the next poll
                // takes the lock to see it (and completes: `has_passed` reads
                // the clock if the wheel has not reached the deadline's
                // tick).
                self.shard.core.release(1);
                self.state = State::Registered { key, waker: 0 };
                // Maybe another task's waker: its panic stays with the wheel.
                wake(waker);
            }
            // After the critical section: step (2) of "Shutdown" in the
            // driver's docs. The entry was linked before it too, but taking
            // it out below may come before shutdown's scan.
            None => match self.shard.core.schedule(due_by) {
                Ok(()) => {}
                Err(NoDriver::ShutDown) => self.unregister_and_wake(),
                Err(why) => {
                    self.unregister();
                    panic!("{}", why.message());
                }
            },
        }
    }

    /// [`register`](Self::register) under a kept key (an interval's next
    /// tick): out of line, so that the first poll of every other `Sleep`
    /// inlines `register` with no key to look at (a completed sleep ran 24
    /// more instructions with one).
    #[inline(never)]
    fn register_kept(
        &mut self,
        deadline: i64,
        future: bool,
        key: Key,
        cx: &mut Context<'_>,
    ) -> Step {
        self.register(deadline, false, future, Some(key), cx)
    }

    /// First poll that is not yet due: link an entry (`kept`'s, if the
    /// `Sleep` completed without the lock, see `State::Kept`).
    // Inline, as `poll` is: both are on the path of every first poll.
    #[inline(always)]
    fn register(
        &mut self,
        deadline: i64,
        reserved: bool,
        future: bool,
        kept: Option<Key>,
        cx: &mut Context<'_>,
    ) -> Step {
        if self.shard.core.is_shut_down() {
            self.unregister();
            return self.fall_back(deadline);
        }
        // A sleep made with a duration was checked against the clock when it
        // was made; one that fell due since then is linked all the same and
        // completes at the driver's next pass, never early (as tokio::time
        // does). That saves a clock read on every registration.
        if !future && deadline <= self.now() {
            return self.complete_unlinked();
        }
        let tick = self.tick_of(deadline);
        let waker = cx.waker().clone();
        let id = self.shard.waker_id(&waker);
        let inserted = {
            let mut shard = self.shard.lock();
            let key = link(&mut shard, kept, tick, waker);
            key.map(|key| (key, shard.sleeps.due_by(tick)))
        };
        // The driver must come by `due_by`: the entry's tick, or for one two
        // revolutions or more away, the revolution before its own, to move
        // it into the lowest level ahead of time (`TimerWheel::due_by`).
        let (key, due_by, waker) = match inserted {
            Ok((key, due_by)) => (key, due_by, id),
            Err(waker) => {
                // The wheel has passed that tick. For a tick of 1 or later
                // that means the deadline has passed by the clock (see
                // `has_passed`); but a deadline at or before the wheel's
                // origin (tick 0: a wheel whose origin is ahead of this
                // runtime's clock, see `Builder::build`) may not have:
                // trust our clock, wait for the next tick, and the poll
                // after it fires reads the clock again (`has_passed`).
                if deadline <= self.now() {
                    drop(waker);
                    return self.complete_unlinked();
                }
                let mut shard = self.shard.lock();
                let next = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
                let key = link(&mut shard, kept, next, waker)
                    .unwrap_or_else(|_| unreachable!("the tick after elapsed is accepted"));
                // Linked after the deadline's tick: no lock-free poll (see
                // `State::Registered`).
                (key, shard.sleeps.due_by(next), 0)
            }
        };
        if !reserved {
            self.shard.core.charge();
        }
        self.state = State::Registered { key, waker };
        // Reads the shut-down flag after the link: see `schedule`.
        self.schedule(due_by, deadline)
    }

    /// An idle `Sleep` found due at registration completes without linking
    /// an entry: it gives back a reserved place, and keeps a kept key for
    /// the next registration. Out of line: a first poll that finds its
    /// deadline passed is rare.
    #[cold]
    #[inline(never)]
    fn complete_unlinked(&mut self) -> Step {
        match self.state {
            State::Kept { key, .. } => self.state = State::Fired { key },
            _ => {
                self.unregister();
                self.state = State::Elapsed;
            }
        }
        Step::Due
    }

    /// A poll that takes the lock: the entry may have fired, or the waker
    /// changed.
    // Out of line: inlined into `poll`, it made a completed sleep 14
    // instructions dearer, call included (callgrind,
    // `benches/instructions.rs`, `sleep-wheel`).
    #[inline(never)]
    fn poll_registered(&mut self, deadline: i64, key: Key, cx: &mut Context<'_>) -> Step {
        if self.shard.core.is_shut_down() {
            self.unregister();
            return self.fall_back(deadline);
        }
        let tracked = matches!(self.state, State::Tracked { .. });
        let mut new_waker = None;
        loop {
            let mut shard = self.shard.lock();
            let elapsed = shard.sleeps.elapsed();
            let linked = shard.sleeps.tick_of(key);
            let Some(registered) = shard.sleeps.value_mut(key) else {
                // Fired (and its place under the bound given back). Only this
                // `Sleep` touches a fired entry. Done if the deadline has
                // passed, under this same lock; else re-armed, holding the
                // deadline itself: either way no longer tracked.
                if self.has_passed(deadline, elapsed) {
                    let removed = shard.remove_sleep(key, tracked);
                    drop(shard);
                    debug_assert!(removed.is_none(), "completing a pending entry");
                    self.state = State::Elapsed;
                    return Step::Ready;
                }
                if tracked {
                    shard.deadlines.untrack(key);
                }
                // Not tracked from here on, whatever `rearm` runs into
                // (the waker's clone is the task's code): a drop in between
                // takes the fired entry out as a `Registered` one.
                self.state = State::Registered { key, waker: 0 };
                drop(shard);
                return self.rearm(deadline, key, cx);
            };
            if registered.will_wake(cx.waker()) {
                break;
            }
            match new_waker.take() {
                Some(new) => {
                    // The entry does not move. The new identity is kept
                    // before the old waker is dropped (a waker made later
                    // may come to have its addresses).
                    let id = self.shard.waker_id(&new);
                    let state = match &mut self.state {
                        State::Tracked { waker, .. } => {
                            *waker = id;
                            None
                        }
                        // Linked where it was.
                        _ => {
                            let waker = self.identity_if_exact(linked, deadline, id);
                            Some(State::Registered { key, waker })
                        }
                    };
                    let old = std::mem::replace(registered, new);
                    drop(shard);
                    if let Some(state) = state {
                        self.state = state;
                    }
                    // Another task's waker, maybe.
                    drop_waker(old);
                    break;
                }
                // Cloned outside the lock, then try again.
                None => {
                    drop(shard);
                    new_waker = Some(cx.waker().clone());
                }
            }
        }
        // Cheap when a driver runs; starts one if the last was stopped with
        // its runtime while this timer waited. It also reads the shut-down
        // flag after the waker swap: a shutdown that scanned this shard
        // before it woke the old waker, not this one (see `schedule`).
        let due = self.tick_of(deadline);
        let filed = self.read_filed(due).unwrap_or(due);
        self.schedule(filed, deadline)
    }

    /// The entry fired, but the deadline has not passed by the clock: a reset
    /// moved it later after the entry fired (or while the pass that fired it
    /// read the slot), or the deadline lies at or before the wheel's origin
    /// and the wheel's clock runs ahead of the runtime's (see `register`).
    /// Re-arm it, holding the waker itself.
    fn rearm(&mut self, deadline: i64, key: Key, cx: &mut Context<'_>) -> Step {
        let waker = cx.waker().clone();
        let id = self.shard.waker_id(&waker);
        let mut shard = self.shard.lock();
        let earliest = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
        let tick = self.tick_of(deadline).max(earliest);
        shard
            .sleeps
            .rearm(key, tick, waker)
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        debug_assert!(!shard.deadlines.is_tracked(key), "re-armed while tracked");
        let due_by = shard.sleeps.due_by(tick);
        drop(shard);
        let waker = self.identity_if_exact(tick, deadline, id);
        self.state = State::Registered { key, waker };
        self.shard.core.charge();
        // Reads the shut-down flag after the re-arm: see `schedule`.
        self.schedule(due_by, deadline)
    }

    /// The waker identity a `Registered` state keeps for its entry linked at
    /// `linked`: `id` if that is the deadline's tick, else 0, so that an
    /// entry linked later takes no lock-free path (see `State::Registered`).
    #[inline]
    fn identity_if_exact(&self, linked: u64, deadline: i64, id: usize) -> usize {
        if linked == self.tick_of(deadline) {
            id
        } else {
            0
        }
    }

    /// Tells the driver about `tick`, returning `Pending`. If no driver can be
    /// had: after a shutdown, goes over to Tokio's timer; otherwise
    /// unregisters and panics with a message naming the cause.
    ///
    /// Every poll that links an entry or changes it (registration, re-arm,
    /// waker swap) ends here, after its critical section, and
    /// `WheelCore::schedule` reads the shut-down flag first: so either
    /// shutdown's scan of the shard saw the entry as it is now (and woke its
    /// waker), or the flag is seen here and the poll goes over to Tokio's
    /// timer itself. Checking the flag only before the lock would let a
    /// shutdown scan the shard in between and never wake the entry.
    ///
    /// Inline, for its common case (not shut down, a driver planned at or
    /// before `tick`): two loads and `Pending`, on the path of every poll,
    /// the lock-free one included.
    #[inline]
    fn schedule(&mut self, tick: u64, deadline: i64) -> Step {
        if self.shard.core.handoff.covers(tick) {
            return Step::Pending;
        }
        self.schedule_slow(tick, deadline)
    }

    /// [`schedule`](Self::schedule) when the driver must be notified or
    /// started, or the wheel is shut down.
    #[inline(never)]
    fn schedule_slow(&mut self, tick: u64, deadline: i64) -> Step {
        match self.shard.core.schedule(tick) {
            Ok(()) => Step::Pending,
            Err(NoDriver::ShutDown) => {
                self.unregister();
                self.fall_back(deadline)
            }
            Err(why) => {
                self.unregister();
                panic!("{}", why.message());
            }
        }
    }

    /// Takes the entry out of the wheel (or gives back a reserved place),
    /// leaving the `Sleep` idle.
    fn unregister(&mut self) {
        if let Some(waker) = self.take_entry() {
            // Dropped outside the lock: it may be the last reference to a
            // task whose other timers lock this shard as they drop. It may be
            // another task's, whose code must not unwind through the wheel.
            drop_waker(waker);
        }
    }

    /// [`unregister`](Self::unregister), waking the task that registered:
    /// for a reset that takes the entry out while that task waits on it.
    #[cold]
    #[inline(never)]
    fn unregister_and_wake(&mut self) {
        if let Some(waker) = self.take_entry() {
            wake(waker);
        }
    }

    /// `unregister`, returning what a pending entry held.
    fn take_entry(&mut self) -> Option<Waker> {
        match self.state {
            State::Registered { key, .. } | State::Tracked { key, .. } => {
                let tracked = matches!(self.state, State::Tracked { .. });
                self.state = State::Idle {
                    reserved: false,
                    future: false,
                };
                let waker = self.shard.lock().remove_sleep(key, tracked);
                if waker.is_some() {
                    self.shard.core.release(1);
                }
                waker
            }
            State::Idle {
                reserved: true,
                future,
            } => {
                self.state = State::Idle {
                    reserved: false,
                    future,
                };
                self.shard.core.release(1);
                None
            }
            State::Kept { .. } | State::Fired { .. } => {
                self.free_kept();
                None
            }
            State::Idle { .. } | State::Elapsed => None,
        }
    }

    /// `take_entry` of a `Kept` or `Fired` `Sleep` (an interval's): frees
    /// the fired entry it kept, whose place under the bound was given back
    /// when it fired. Out of line: a cancelled timeout ran 5 more
    /// instructions with it inlined (callgrind, `benches/instructions.rs`).
    #[cold]
    #[inline(never)]
    fn free_kept(&mut self) {
        let key = match self.state {
            State::Kept { key, future } => {
                self.state = State::Idle {
                    reserved: false,
                    future,
                };
                key
            }
            State::Fired { key } => {
                self.state = State::Elapsed;
                key
            }
            _ => return,
        };
        let removed = self.shard.lock().remove_sleep(key, false);
        debug_assert!(removed.is_none(), "a kept entry was pending");
    }

    /// The wheel is shut down: the caller goes over to Tokio's own timer for
    /// the same deadline.
    fn fall_back(&self, deadline: i64) -> Step {
        Step::FallBack(self.shard.core.clock.instant_at(deadline))
    }
}

/// Links `waker` at `tick` in the shard: under `kept`, a fired entry's key,
/// if there is one (counted as a new registration), else under a new key.
/// Returns the waker back if `tick` is already due.
#[inline]
fn link(shard: &mut ShardState, kept: Option<Key>, tick: u64, waker: Waker) -> Result<Key, Waker> {
    let key = match kept {
        Some(key) => shard.sleeps.renew(key, tick, waker).map(|()| key),
        None => shard.sleeps.insert(tick, waker),
    };
    debug_assert!(
        key.as_ref()
            .map_or(true, |&key| !shard.deadlines.is_tracked(key)),
        "a new entry is tracked"
    );
    key
}

impl Drop for SleepEntry {
    fn drop(&mut self) {
        self.unregister();
    }
}

#[cfg(all(test, not(tokio_wheel_loom)))]
mod tests {
    use proptest::prelude::*;

    use super::{Filed, State};

    /// The tracked state fits beside the shard pointer in 32 bytes, so that
    /// a `Sleep` is 40 (`size_of_sleep`).
    #[test]
    fn the_state_is_24_bytes() {
        assert_eq!(std::mem::size_of::<State>(), 24);
    }

    #[test]
    fn a_kept_tick_stays_put_as_the_deadline_moves_later() {
        let f = Filed::new(100, 130);
        assert_eq!(f.tick(130), Some(100));
        let f = f.later(20);
        assert_eq!(f.tick(150), Some(100), "the same tick, further below");
        assert_eq!(Filed::new(130, 130).tick(130), Some(130));
    }

    #[test]
    fn a_tick_after_the_deadline_is_kept_as_the_deadline_and_a_far_one_not_at_all() {
        assert_eq!(Filed::new(200, 130).tick(130), Some(130));
        let limit = u64::from(Filed::NONE);
        assert_eq!(Filed::new(0, limit - 1).tick(limit - 1), Some(0));
        assert_eq!(Filed::new(0, limit).tick(limit), None);
        assert_eq!(Filed::new(1, u64::MAX - 1).tick(u64::MAX - 1), None);
        let f = Filed::new(5, limit + 4);
        assert_eq!(f.tick(limit + 4), Some(5));
        assert_eq!(f.later(1).tick(limit + 5), None, "moved out of range");
        assert_eq!(f.later(u64::MAX).tick(u64::MAX), None);
        assert_eq!(
            Filed::new(0, limit).later(1).tick(limit + 1),
            None,
            "none stays none"
        );
        assert!(!Filed::new(0, limit).is_kept());
        assert_eq!(format!("{:?}", Filed::new(3, 10)), "Filed(7 below)");
    }

    proptest! {
        /// Never a later tick than the one kept (which would say an entry
        /// that fired had not), and that very tick while it is in range.
        #[test]
        fn never_later_than_the_tick_kept(
            due in 1u64..1 << 40,
            gap in 0u64..1 << 25,
            after in any::<bool>(),
            moves in proptest::collection::vec(0u64..1 << 23, 0..8),
        ) {
            // Mostly within range of the deadline's tick, on both sides.
            let filed = if after { due + gap } else { due.saturating_sub(gap) };
            let mut f = Filed::new(filed, due);
            let mut now = due;
            for by in moves {
                f = f.later(by);
                now += by;
            }
            match f.tick(now) {
                Some(t) => prop_assert_eq!(t, filed.min(due)),
                None => prop_assert!(now - filed.min(due) >= u64::from(Filed::NONE)),
            }
        }
    }
}
