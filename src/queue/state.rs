//! The queue's mechanism: its shards, the consumers' firing loop, and the
//! wake-up protocol between producers and waiting consumers (on `armed`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::task::Waker;

use tokio::time::Instant;

use super::{Expired, Key};
use crate::clock::TickClock;
use crate::driver::{self, thread_index, CASCADE_STEP};
use crate::error::StaleKey;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Lock, Mutex, MutexGuard, Padded};
use crate::wheel::{self, TimerWheel};
use crate::Wheel;

/// Queue ids, so that a key of another queue is stale in this one.
static NEXT_QUEUE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Shards (and their entries) whose `due` list holds this many more stale
/// references than live entries get it compacted.
const DUE_SLACK: usize = 64;

/// What an entry of a shard's wheel holds.
struct Item<T> {
    value: T,
    /// Unique in the shard: a key or reference names this entry only if it
    /// carries the same generation.
    gen: u64,
    /// The deadline as given. The entry may be linked at an earlier tick (a
    /// reset to a later deadline leaves it there): see `fire_upto`.
    deadline: Instant,
}

/// A reference to an entry that fired (or was found due) and waits for a
/// consumer. Valid while the entry is there with the same generation, fired,
/// at the same tick; otherwise it is skipped.
#[derive(Debug, Clone, Copy)]
struct Ref {
    tick: u64,
    gen: u64,
    slot: u32,
    shard: u32,
}

struct QueueShard<T> {
    wheel: TimerWheel<Item<T>>,
    next_gen: u64,
    /// Entries a producer found due (inserted or reset to a tick the wheel
    /// has passed), for the next consumer to move to `ready`.
    due: Vec<Ref>,
}

/// The consumers' side, under one lock.
struct Firing {
    /// Fired entries waiting for a consumer, in tick order.
    ready: VecDeque<Ref>,
    /// No shard holds an entry pending before this tick: the earliest one
    /// any may hold, as the last `fire_upto` left them. `ready` hands out
    /// only references at or before it, so that a firing that stopped in
    /// the middle (see `fire_upto`) keeps the order across ticks. Entries
    /// made pending since are after the wheels' `elapsed`, and so after
    /// every reference (each is at or before `elapsed`). Before the first
    /// `fire_upto`, `u64::MAX`: nothing is pending at or before `elapsed`
    /// then, so no reference can wait for an earlier entry.
    through: u64,
    /// Scratch: references found in one pass, before they join `ready`.
    batch: Vec<Ref>,
    keys: Vec<wheel::Key>,
    next: Vec<u64>,
}

impl Firing {
    /// The first reference of `ready`, if it may be handed out (see
    /// `through`).
    fn releasable(&self) -> Option<Ref> {
        self.ready
            .front()
            .copied()
            .filter(|r| r.tick <= self.through)
    }
}

/// A consumer waiting for `target`, the earliest tick it saw due.
struct Waiter {
    id: u64,
    waker: Waker,
    target: u64,
}

/// What every handle and consumer of one queue shares.
///
/// The queue keeps shards and a firing loop of its own beside the wheel's,
/// not on them, because its entries are values that a consumer takes by key
/// in its own task (a reset writes only the deadline, the entry moving when
/// its old tick fires), where the wheel's shards hold wakers and callbacks
/// that the driver task delivers itself; it shares the wheel's clock, bound
/// and refusal check (`WheelCore::admit`), thread-to-shard map
/// (`thread_index`), lock (`sync::Lock`) and waker helpers.
pub(super) struct QueueCore<T> {
    id: u64,
    pub(super) wheel: Wheel,
    pub(super) clock: TickClock,
    shards: Box<[Padded<Mutex<QueueShard<T>>>]>,
    firing: Mutex<Firing>,
    /// Set after a producer pushes to a shard's `due`.
    has_due: AtomicBool,
    /// Set by a firing that entered a revolution and deferred the next
    /// revolution's list or an upper slot's far list (invariant 7 of the
    /// wheel); cleared by the `cascade_step` that finds
    /// none left. Both under `firing`'s lock; read without it, as a hint, so
    /// that an idle poll does not take that lock again for nothing (a stale
    /// `false` only leaves the lists to the firing they are due by).
    deferred: AtomicBool,
    /// The largest `target` of `waiters` (0 if none): an insert or reset at
    /// an earlier tick wakes the waiters whose target is later.
    ///
    /// Why no wake-up is lost: a consumer (1) registers in `waiters` and
    /// stores `armed` under its lock, then (2) scans every shard again before
    /// it sleeps. A producer (a) links its entry under its shard's lock, then
    /// (b) loads `armed`. If the consumer's scan of that shard comes after
    /// (a), it sees the entry. Otherwise (1) happens before (b) through the
    /// shard's lock, so (b) reads the consumer's store or a later one; later
    /// ones are made under the same lock and keep `armed` at least the target
    /// of every waiter still registered. The same holds for the last handle's
    /// drop, which (a) decrements `handles` and (b) locks `waiters`.
    ///
    /// Wake-on-empty: a consumer waiting for the tick of a value that then
    /// leaves by `remove` or `clear` (a `DelayQueue` consumer is woken to see
    /// `None`) is woken once the queue is empty, to see the empty queue. A
    /// producer (a) takes values under a shard's lock; if that shard is now
    /// empty (or after a `take_all`), it (b) loads `armed`, and only if it is
    /// not 0 (c) locks every shard to see whether all are empty, and if so
    /// (d) locks `waiters` and wakes those with a tick as target (a target of
    /// `u64::MAX` waits for an insert already). Nothing is lost: the
    /// consumer's last scan (2) saw the value `v` it waits for in a shard,
    /// before the producer of `v`'s removal (a) locked it, so (1) happens
    /// before that producer's (b), which therefore reads `armed` not 0. Its
    /// (c) finds every shard empty, or a value `w`: if `w` stays, the queue
    /// is not empty; if a later removal takes it, that producer's (a) locks
    /// after this (c), so (1) happens before its (b) too, and so on, until a
    /// producer finds every shard empty; its (d) happens after (1) and finds
    /// the consumer. (A value another consumer takes was due: the sleep of
    /// this one, until a tick no later, has fired or fires.) A consumer whose scan (2)
    /// finds the queue emptied registers again with `u64::MAX` and scans
    /// again before it sleeps (`poll_expired`).
    armed: AtomicU64,
    waiters: Mutex<Vec<Waiter>>,
    next_consumer: AtomicU64,
    /// Live `ExpiryQueue` handles; consumers do not count.
    handles: AtomicUsize,
}

/// No user code runs under these locks: values are dropped and wakers woken
/// after unlocking (see [`Lock`]).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock_or_recover()
}

impl<T> QueueCore<T> {
    /// An empty queue on `wheel`.
    pub(super) fn new(wheel: &Wheel) -> Self {
        let core = wheel.core();
        let clock = core.clock;
        let now = clock.floor(Instant::now());
        let shards = (0..wheel.shard_count())
            .map(|_| {
                Padded(Mutex::new(QueueShard {
                    wheel: TimerWheel::new(core.slots, now),
                    next_gen: 1,
                    due: Vec::new(),
                }))
            })
            .collect();
        QueueCore {
            id: NEXT_QUEUE.fetch_add(1, Relaxed),
            wheel: wheel.clone(),
            clock,
            shards,
            firing: Mutex::new(Firing {
                ready: VecDeque::new(),
                through: u64::MAX,
                batch: Vec::new(),
                keys: Vec::new(),
                next: Vec::new(),
            }),
            deferred: AtomicBool::new(false),
            has_due: AtomicBool::new(false),
            armed: AtomicU64::new(0),
            waiters: Mutex::new(Vec::new()),
            next_consumer: AtomicU64::new(1),
            handles: AtomicUsize::new(1),
        }
    }

    /// The deadline of the value `key` names, if it is still queued.
    pub(super) fn deadline(&self, key: &Key) -> Option<Instant> {
        let shard = self.shard_of(key)?;
        let s = lock(shard);
        s.item(key).map(|item| item.deadline)
    }

    /// A new `ExpiryQueue` handle.
    pub(super) fn add_handle(&self) {
        self.handles.fetch_add(1, Relaxed);
    }

    /// An `ExpiryQueue` handle dropped: after the last, the consumers'
    /// streams may end, so they are all woken to look (step (a) of the
    /// protocol is the decrement, (b) the lock of `waiters`).
    pub(super) fn drop_handle(&self) {
        if self.handles.fetch_sub(1, AcqRel) == 1 {
            self.wake_waiters(None);
        }
    }

    /// Whether every `ExpiryQueue` handle is gone.
    pub(super) fn has_no_handles(&self) -> bool {
        self.handles.load(Relaxed) == 0
    }

    /// An id for a new consumer, for `waiters`.
    pub(super) fn new_consumer_id(&self) -> u64 {
        self.next_consumer.fetch_add(1, Relaxed)
    }

    fn shard_of(&self, key: &Key) -> Option<&Mutex<QueueShard<T>>> {
        if key.queue != self.id {
            return None;
        }
        self.shards.get(key.shard as usize).map(|p| &p.0)
    }

    pub(super) fn insert(&self, value: T, deadline: Instant) -> Key {
        let index = thread_index() & (self.shards.len() - 1);
        let tick = self.clock.ceil(deadline);
        let mut s = lock(&self.shards[index].0);
        let gen = s.next_gen;
        s.next_gen += 1;
        let item = Item {
            value,
            gen,
            deadline,
        };
        let (slot, due) = match s.wheel.insert(tick, item) {
            Ok(slot) => (slot, false),
            Err(item) => (s.wheel.insert_fired(tick, item), true),
        };
        let key = Key {
            queue: self.id,
            gen,
            slot,
            shard: index as u32,
        };
        if due {
            s.push_due(Ref {
                tick,
                gen,
                slot,
                shard: key.shard,
            });
        }
        drop(s);
        if due {
            self.has_due.store(true, Relaxed);
        }
        self.notify(tick);
        key
    }

    pub(super) fn reset(&self, key: &Key, deadline: Instant) -> Result<(), StaleKey> {
        let shard = self.shard_of(key).ok_or_else(StaleKey::new)?;
        let tick = self.clock.ceil(deadline);
        let mut s = lock(shard);
        let item = s.item_mut(key).ok_or_else(StaleKey::new)?;
        item.deadline = deadline;
        let slot = key.slot;
        let fired = s.wheel.is_fired(slot);
        let at = s.wheel.tick_of(slot);
        let mut due = false;
        if tick <= s.wheel.elapsed() {
            // Due now: for a consumer's next poll.
            if !fired || at != tick {
                s.wheel.mark_fired(slot, tick);
                s.push_due(Ref {
                    tick,
                    gen: key.gen,
                    slot,
                    shard: key.shard,
                });
                due = true;
            }
        } else if fired {
            // Due, not taken yet: back to wait. Its reference goes stale.
            let linked = s.wheel.relink(slot, tick);
            debug_assert!(linked, "the tick is after elapsed");
        } else if tick < at {
            // Earlier: move it now.
            s.wheel.mark_fired(slot, at);
            let linked = s.wheel.relink(slot, tick);
            debug_assert!(linked, "the tick is after elapsed");
        } else {
            // Later: it stays at its old tick and moves when that fires.
            return Ok(());
        }
        drop(s);
        if due {
            self.has_due.store(true, Relaxed);
        }
        self.notify(tick);
        Ok(())
    }

    pub(super) fn remove(&self, key: &Key) -> Option<T> {
        self.remove_then(key, true)
    }

    /// `remove` without its wake-on-empty step: a deliberately broken copy
    /// for a loom model that must catch the lost wake-up.
    #[cfg(all(test, tokio_wheel_loom))]
    pub(super) fn remove_without_wake_on_empty(&self, key: &Key) -> Option<T> {
        self.remove_then(key, false)
    }

    fn remove_then(&self, key: &Key, wake_on_empty: bool) -> Option<T> {
        let shard = self.shard_of(key)?;
        let mut s = lock(shard);
        s.item(key)?;
        let item = s.wheel.take(key.slot);
        let emptied = s.wheel.len() == 0;
        drop(s);
        self.wheel.core().release(1);
        if emptied && wake_on_empty {
            self.wake_if_empty(key.shard as usize);
        }
        Some(item.value)
    }

    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(&s.0).wheel.len()).sum()
    }

    /// The earliest tick a consumer must fire (`TimerWheel::next_due`, over
    /// the shards): where a consumer with nothing ready sleeps until.
    #[cfg(tokio_wheel_loom)]
    pub(super) fn next_due(&self) -> Option<u64> {
        self.shards
            .iter()
            .filter_map(|s| lock(&s.0).wheel.next_due())
            .min()
    }

    /// The key of the value that comes out next: the earliest tick it comes
    /// out at (its fired tick if it fired, else its deadline's, where a reset
    /// to a later deadline moves it), then the earliest deadline. Visits every
    /// value, one shard's lock at a time.
    pub(super) fn peek(&self) -> Option<Key> {
        let mut best: Option<(u64, Instant, Key)> = None;
        for (index, shard) in self.shards.iter().enumerate() {
            let s = lock(&shard.0);
            for (slot, tick, fired, item) in s.wheel.entries() {
                let at = if fired {
                    tick
                } else {
                    self.clock.ceil(item.deadline).max(tick)
                };
                if best.is_none_or(|(t, d, _)| (at, item.deadline) < (t, d)) {
                    let key = Key {
                        queue: self.id,
                        gen: item.gen,
                        slot,
                        shard: index as u32,
                    };
                    best = Some((at, item.deadline, key));
                }
            }
        }
        best.map(|(_, _, key)| key)
    }

    /// Places for values every shard holds without allocating.
    pub(super) fn capacity(&self) -> usize {
        self.shards
            .iter()
            .map(|s| lock(&s.0).wheel.capacity())
            .sum()
    }

    /// Gives back what memory the shards and the consumers' lists can
    /// without moving a value (keys stay valid).
    pub(super) fn shrink_to_fit(&self) {
        for shard in self.shards.iter() {
            let mut s = lock(&shard.0);
            s.prune_due();
            s.due.shrink_to_fit();
            s.wheel.shrink_to_fit();
        }
        let mut f = lock(&self.firing);
        f.ready.shrink_to_fit();
        f.batch.shrink_to_fit();
        f.keys.shrink_to_fit();
        f.next.shrink_to_fit();
    }

    /// Removes every entry of every shard.
    pub(super) fn take_all(&self) -> Vec<Expired<T>> {
        let mut all = Vec::new();
        let mut taken = Vec::new();
        for (index, shard) in self.shards.iter().enumerate() {
            let mut s = lock(&shard.0);
            s.wheel.take_all(&mut taken);
            s.due.clear();
            drop(s);
            all.extend(taken.drain(..).map(|(slot, item)| Expired {
                key: Key {
                    queue: self.id,
                    gen: item.gen,
                    slot,
                    shard: index as u32,
                },
                deadline: item.deadline,
                value: item.value,
            }));
        }
        self.wheel.core().release(all.len());
        self.wake_if_empty(0);
        all
    }

    /// Step (b) of the protocol in `armed`'s docs: wakes the consumers
    /// waiting for a tick later than `tick`.
    fn notify(&self, tick: u64) {
        if tick < self.armed.load(Relaxed) {
            self.wake_waiters(Some(tick));
        }
    }

    /// Steps (b) to (d) of wake-on-empty (in `armed`'s docs), after a
    /// `remove` that left its shard empty or a `take_all`: if a consumer may
    /// wait for a tick and every shard is empty, wakes the consumers waiting
    /// for a tick, so that they see the empty queue (and give back their
    /// sleeps). Looks at the other shards only while some consumer waits,
    /// from the one after `emptied` on (so that threads emptying their own
    /// shards do not all lock the first), until one holds a value.
    fn wake_if_empty(&self, emptied: usize) {
        if self.armed.load(Relaxed) == 0 {
            return;
        }
        let n = self.shards.len();
        if (1..=n).any(|i| lock(&self.shards[(emptied + i) % n].0).wheel.len() != 0) {
            return;
        }
        self.wake_where(|target| target != u64::MAX);
    }

    /// Wakes (and unregisters) the waiters whose target is after `tick`, or
    /// all of them.
    pub(super) fn wake_waiters(&self, tick: Option<u64>) {
        self.wake_where(|target| tick.is_none_or(|t| t < target));
    }

    /// Wakes (and unregisters) the waiters whose target `wake` picks.
    fn wake_where(&self, wake: impl Fn(u64) -> bool) {
        let mut woken = Vec::new();
        {
            let mut waiters = lock(&self.waiters);
            waiters.retain_mut(|w| {
                if wake(w.target) {
                    woken.push(std::mem::replace(&mut w.waker, Waker::noop().clone()));
                    false
                } else {
                    true
                }
            });
            self.store_armed(&waiters);
        }
        for waker in woken {
            driver::wake(waker);
        }
    }

    fn store_armed(&self, waiters: &[Waiter]) {
        let armed = waiters.iter().map(|w| w.target).max().unwrap_or(0);
        self.armed.store(armed, Relaxed);
    }

    /// Takes a due value if there is one; else the earliest tick that may
    /// have one due (`TimerWheel::next_due`; `None`: nothing is pending). A
    /// tick at or before `now_tick` says that a firing ran out of its step
    /// (`fire_upto`) with nothing ready: the consumer comes back for the
    /// rest after a turn of the runtime.
    pub(super) fn take_due(&self, now_tick: u64) -> Result<Expired<T>, Option<u64>> {
        let mut guard = lock(&self.firing);
        let f = &mut *guard;
        loop {
            if self.has_due.swap(false, AcqRel) {
                self.collect_due(f);
            }
            while let Some(r) = f.releasable() {
                f.ready.pop_front();
                if let Some(expired) = self.take_ref(r) {
                    return Ok(expired);
                }
            }
            let next = self.fire_upto(now_tick, f);
            if f.releasable().is_none() {
                return Err(next);
            }
        }
    }

    /// Moves what producers found due to `ready`.
    fn collect_due(&self, f: &mut Firing) {
        f.batch.clear();
        for shard in self.shards.iter() {
            f.batch.append(&mut lock(&shard.0).due);
        }
        merge(&mut f.ready, &mut f.batch);
    }

    /// Advances every shard to `now_tick` and fires its due ticks, in tick
    /// order, into `ready`; returns the earliest tick still pending.
    ///
    /// One call fires or links again at most [`CASCADE_STEP`] entries (in
    /// all, `TimerWheel::fire_keys_within`), so that a tick of a hundred
    /// thousand keys, or the cascade of a slot that holds a second's worth,
    /// does not make one consumer poll of many milliseconds with producers
    /// waiting on the shard's lock. If the step runs out, it returns the
    /// tick it stopped in (at or before `now_tick`: `next_due` of that
    /// shard says so until a later call finishes it). What it fired is in
    /// `ready` all the same, but only what is at or before that tick
    /// (`through`) is handed out: a value found due at a later tick (one
    /// reset later and due by now, or one a producer found due) waits for
    /// the ticks before it.
    fn fire_upto(&self, now_tick: u64, f: &mut Firing) -> Option<u64> {
        self.has_due.store(false, Relaxed);
        f.batch.clear();
        f.next.clear();
        for shard in self.shards.iter() {
            let mut s = lock(&shard.0);
            s.wheel.advance(now_tick);
            f.batch.append(&mut s.due);
            let next = s.wheel.next_due().unwrap_or(u64::MAX);
            f.next.push(next);
        }
        let mut budget = CASCADE_STEP;
        loop {
            let tick = f.next.iter().copied().min().unwrap_or(u64::MAX);
            if tick > now_tick {
                merge(&mut f.ready, &mut f.batch);
                f.through = tick;
                return Some(tick).filter(|&t| t != u64::MAX);
            }
            for (index, (shard, next)) in self.shards.iter().zip(f.next.iter_mut()).enumerate() {
                if *next != tick {
                    continue;
                }
                let mut s = lock(&shard.0);
                f.keys.clear();
                let finished = s
                    .wheel
                    .fire_keys_within(tick, &mut budget, &mut f.keys)
                    .is_some();
                for &slot in &f.keys {
                    let item = s.wheel.get(slot).expect("a fired entry is there");
                    let (gen, wanted) = (item.gen, self.clock.ceil(item.deadline));
                    // Reset to a later deadline since it was linked: it
                    // moves now, once, to where it belongs.
                    if wanted > tick && s.wheel.relink(slot, wanted) {
                        continue;
                    }
                    let at = wanted.max(tick);
                    if at != tick {
                        s.wheel.mark_fired(slot, at);
                    }
                    f.batch.push(Ref {
                        tick: at,
                        gen,
                        slot,
                        shard: index as u32,
                    });
                }
                *next = s.wheel.next_due().unwrap_or(u64::MAX);
                if s.wheel.has_deferred() {
                    self.deferred.store(true, Relaxed);
                }
                if !finished {
                    drop(s);
                    merge(&mut f.ready, &mut f.batch);
                    f.through = tick;
                    return Some(tick);
                }
            }
        }
    }

    /// Links at most [`CASCADE_STEP`] entries (in all) of the lists that
    /// firings deferred (`TimerWheel::cascade_keys_ahead`), each shard's lock
    /// held for its own part only. Returns `true` if some are left: the consumer
    /// comes back for them after a turn of the runtime, as the wheel's
    /// driver does. Otherwise the firing of the first tick past the
    /// revolution they were deferred in would link them all under one lock,
    /// up to a million keys, and hold up producers on that shard and every
    /// value due meanwhile.
    pub(super) fn cascade_step(&self) -> bool {
        if !self.deferred.load(Relaxed) {
            return false;
        }
        // Serialised with the firings, which may defer lists again.
        let _firing = lock(&self.firing);
        let mut budget = CASCADE_STEP;
        for shard in self.shards.iter() {
            if !lock(&shard.0).wheel.cascade_keys_ahead(&mut budget) {
                return true;
            }
        }
        self.deferred.store(false, Relaxed);
        false
    }

    /// Takes the value `r` names, if the reference is still valid.
    fn take_ref(&self, r: Ref) -> Option<Expired<T>> {
        let mut s = lock(&self.shards[r.shard as usize].0);
        let valid = s.wheel.get(r.slot).is_some_and(|item| item.gen == r.gen)
            && s.wheel.is_fired(r.slot)
            && s.wheel.tick_of(r.slot) == r.tick;
        if !valid {
            return None;
        }
        let item = s.wheel.take(r.slot);
        drop(s);
        self.wheel.core().release(1);
        Some(Expired {
            key: Key {
                queue: self.id,
                gen: item.gen,
                slot: r.slot,
                shard: r.shard,
            },
            deadline: item.deadline,
            value: item.value,
        })
    }

    /// Step (1) of the protocol in `armed`'s docs.
    pub(super) fn register(&self, id: u64, waker: &Waker, target: u64) {
        let mut waiters = lock(&self.waiters);
        match waiters.iter_mut().find(|w| w.id == id) {
            Some(w) => {
                if !w.waker.will_wake(waker) {
                    w.waker.clone_from(waker);
                }
                w.target = target;
            }
            None => waiters.push(Waiter {
                id,
                waker: waker.clone(),
                target,
            }),
        }
        self.store_armed(&waiters);
    }

    /// Takes consumer `id` out of `waiters` if `registered` says it is in.
    pub(super) fn unregister(&self, id: u64, registered: &mut bool) {
        if !std::mem::take(registered) {
            return;
        }
        let mut waiters = lock(&self.waiters);
        if let Some(i) = waiters.iter().position(|w| w.id == id) {
            let w = waiters.swap_remove(i);
            self.store_armed(&waiters);
            drop(waiters);
            driver::drop_waker(w.waker);
        }
    }
}

impl<T> Drop for QueueCore<T> {
    fn drop(&mut self) {
        // Values dropped with the queue give their places back.
        let left: usize = self
            .shards
            .iter_mut()
            .map(|s| {
                s.0.get_mut()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .wheel
                    .len()
            })
            .sum();
        self.wheel.core().release(left);
    }
}

impl<T> QueueShard<T> {
    /// The item `key` names, if it is still there.
    fn item(&self, key: &Key) -> Option<&Item<T>> {
        self.wheel.get(key.slot).filter(|item| item.gen == key.gen)
    }

    fn item_mut(&mut self, key: &Key) -> Option<&mut Item<T>> {
        self.wheel
            .get_mut(key.slot)
            .filter(|item| item.gen == key.gen)
    }

    /// Adds a reference to `due`, dropping stale ones when they pile up (a
    /// producer that inserts due values and removes them while no consumer
    /// polls).
    fn push_due(&mut self, r: Ref) {
        if self.due.len() >= 2 * self.wheel.len() + DUE_SLACK {
            self.prune_due();
        }
        self.due.push(r);
    }

    /// Drops the references of `due` that went stale.
    fn prune_due(&mut self) {
        let wheel = &self.wheel;
        self.due.retain(|r| {
            wheel.get(r.slot).is_some_and(|item| item.gen == r.gen)
                && wheel.is_fired(r.slot)
                && wheel.tick_of(r.slot) == r.tick
        });
    }
}

/// Merges `batch` (any order) into `ready` (in tick order), emptying it.
/// References of the same tick keep their order, those of `ready` first.
///
/// `ready` may hold thousands of references held back after a stopped
/// firing (see `Firing::through`) when a batch comes in before them, so
/// the slow path appends and sorts again: a stable sort finds the two
/// sorted runs and merges them in linear time, where inserting each
/// reference in place would move the held-back ones once per reference.
fn merge(ready: &mut VecDeque<Ref>, batch: &mut Vec<Ref>) {
    batch.sort_by_key(|r| r.tick);
    let in_order = ready
        .back()
        .is_none_or(|last| batch.first().is_none_or(|r| r.tick >= last.tick));
    ready.extend(batch.drain(..));
    if !in_order {
        ready.make_contiguous().sort_by_key(|r| r.tick);
    }
}

#[cfg(all(test, not(tokio_wheel_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    /// One consumer call fires at most a step of a tick that holds more
    /// keys than that, in all shards together: the rest stay pending in the
    /// wheels, and each later call that finds nothing ready fires the next
    /// step, going on from the shard it stopped in.
    #[tokio::test(start_paused = true)]
    async fn a_large_tick_fires_a_step_per_call() {
        let w = Wheel::builder()
            .tick(Duration::from_millis(1))
            .shards(4)
            .build()
            .unwrap();
        let q = w.expiry_queue();
        let n = 3 * CASCADE_STEP + 100;
        let at = Instant::now() + Duration::from_millis(50);
        // A share from a thread of each shard (a thread inserts into its
        // own), so that the step runs across shards. Threads get their
        // shard from a process-wide count that other tests' threads take
        // from too, so new ones are tried until every shard has its share.
        let shards = q.inner.shards.len();
        let share = n.div_ceil(shards);
        let mut filled = vec![false; shards];
        let mut tried = 0;
        while filled.contains(&false) {
            tried += 1;
            assert!(tried < 1000, "no thread for every shard: {filled:?}");
            let want = filled.clone();
            let q = &q;
            let got = std::thread::scope(|scope| {
                scope
                    .spawn(move || {
                        let shard = thread_index() & (shards - 1);
                        if want[shard] {
                            return None;
                        }
                        let from = shard * share;
                        for i in from..(from + share).min(n) {
                            q.insert_at(i, at);
                        }
                        Some(shard)
                    })
                    .join()
                    .unwrap()
            });
            if let Some(shard) = got {
                filled[shard] = true;
            }
        }
        assert_eq!(q.len(), n);
        tokio::time::advance(Duration::from_millis(60)).await;
        let core = &*q.inner;
        let now_tick = core.clock.floor(Instant::now());
        let pending = || {
            core.shards
                .iter()
                .map(|s| lock(&s.0).wheel.pending())
                .sum::<usize>()
        };
        let (mut taken, mut firing_calls) = (0, 0);
        while taken < n {
            let before = pending();
            match core.take_due(now_tick) {
                Ok(_) => taken += 1,
                Err(next) => panic!("nothing due after {taken}: {next:?}"),
            }
            let fired = before - pending();
            assert!(fired <= CASCADE_STEP, "{fired} fired in one call");
            firing_calls += usize::from(fired > 0);
        }
        assert_eq!(firing_calls, n.div_ceil(CASCADE_STEP));
        assert_eq!(pending(), 0);
        assert_eq!(core.take_due(now_tick).err(), Some(None));
    }
}
