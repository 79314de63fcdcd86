//! A shard: one lock's worth of the wheel, and which thread uses which.
//!
//! A timer registers in the shard of the thread that first uses it
//! ([`thread_index`]), so worker threads of a multi-thread runtime register
//! and cancel on different locks. Each shard holds two [`TimerWheel`]s that
//! advance together: sleeps (their wakers; and the deadlines their `Sleep`s
//! pushed back, see `deadline.rs`) and callbacks.

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Waker;

use super::callback::Callback;
use super::deadline::Deadlines;
use super::handoff::FiredUpto;
use super::WheelCore;
use crate::sync::{AtomicUsize, Lock, Mutex, MutexGuard, Padded};
use crate::wheel::{Counters, Key, TimerWheel};

/// Hands each thread a shard index once; threads then keep to their shard.
static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    static THREAD_INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// This thread's index: its timers go to shard `thread_index() % shards`
/// (of the wheel, and of an expiry queue).
pub(crate) fn thread_index() -> usize {
    THREAD_INDEX
        .try_with(|i| match i.get() {
            Some(i) => i,
            None => {
                let n = NEXT_THREAD.fetch_add(1, Relaxed);
                i.set(Some(n));
                n
            }
        })
        // A thread-local being torn down: any shard will do.
        .unwrap_or(0)
}

/// The shards of one wheel, as a `Wheel` handle holds them (strongly; the
/// core holds them weakly). Each its own allocation, so that timers of
/// different threads bump different reference counts.
#[derive(Debug)]
pub(crate) struct Shards(Box<[Arc<Shard>]>);

impl Shards {
    pub(super) fn new(shards: Box<[Arc<Shard>]>) -> Self {
        Shards(shards)
    }

    /// The shard this thread registers in.
    pub(crate) fn local(&self) -> &Arc<Shard> {
        &self.0[thread_index() & (self.0.len() - 1)]
    }

    /// How many (a power of two).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// What the shards share.
    pub(crate) fn core(&self) -> &Arc<WheelCore> {
        &self.0[0].core
    }

    /// Timers registered and not fired or cancelled, over every shard.
    pub(crate) fn pending(&self) -> usize {
        self.0.iter().map(|s| s.lock().pending()).sum()
    }

    #[cfg(test)]
    pub(crate) fn get(&self, i: usize) -> &Arc<Shard> {
        &self.0[i]
    }
}

/// One lock's worth of the wheel.
///
/// # Layout
///
/// The fields before `state` are read on every frame of a connection
/// (its `Sleep`'s reset and poll read the wheel through `core`, its
/// lock-free poll reads `fired_upto` and `usual_vtable`), by whichever
/// worker runs the task, and written seldom:
/// `fired_upto` once per tick the driver fires here, `usual_vtable` once.
/// The lock and the state it guards are written by every registration,
/// cancel and pass. So they live on lines of their own ([`Padded`]): when
/// `core` shared the lock word's line, and the other two the line of the
/// state's last fields, each lock and unlock of the shard took those lines
/// away from every other worker's cache (`docs/benchmarks.md`, "A shard's
/// lock on lines of its own"). `repr(C)` keeps the order; the alignment
/// keeps two shards apart.
#[derive(Debug)]
#[repr(C, align(128))]
pub(crate) struct Shard {
    pub(crate) core: Arc<WheelCore>,
    /// See "Polling without the lock" in `entry.rs`.
    pub(super) fired_upto: FiredUpto,
    /// The address of the `RawWakerVTable` of the first waker registered
    /// here (0 until then): nearly every waker of a runtime shares it.
    usual_vtable: AtomicUsize,
    state: Padded<Mutex<ShardState>>,
}

impl Shard {
    pub(super) fn new(core: Arc<WheelCore>, slots: usize) -> Self {
        Shard {
            core,
            fired_upto: FiredUpto::new(),
            usual_vtable: AtomicUsize::new(0),
            state: Padded(Mutex::new(ShardState::new(slots))),
        }
    }

    /// Whether a sleep entry of this shard due at `tick` may have fired (see
    /// [`FiredUpto::covers`]).
    pub(super) fn may_have_fired(&self, tick: u64) -> bool {
        self.fired_upto.covers(tick)
    }

    /// What a registered `Sleep` keeps of its waker so that a later poll can
    /// tell, without the lock, that it comes with the same one: the data
    /// pointer (plus one), if the waker's vtable is this shard's usual one; 0
    /// otherwise (that `Sleep` takes the lock).
    ///
    /// A load, and a compare-exchange only while no vtable is set: an RMW
    /// that fails still takes the line for writing, away from every worker
    /// whose polls read it.
    pub(super) fn waker_id(&self, waker: &Waker) -> usize {
        let (data, vtable) = addresses(waker);
        let usual = match self.usual_vtable.load(Relaxed) {
            0 => match self
                .usual_vtable
                .compare_exchange(0, vtable, Relaxed, Relaxed)
            {
                Ok(_) => vtable,
                Err(usual) => usual,
            },
            usual => usual,
        };
        if usual == vtable {
            id_of(data)
        } else {
            0
        }
    }

    /// Whether `waker` is the one whose [`waker_id`](Self::waker_id) is `id`
    /// (never for 0): what `Waker::will_wake` compares, data pointer and
    /// vtable.
    pub(super) fn is_waker(&self, id: usize, waker: &Waker) -> bool {
        let (data, vtable) = addresses(waker);
        id != 0 && id_of(data) == id && vtable == self.usual_vtable.load(Relaxed)
    }

    /// Locks the shard. No `Waker` is ever woken or dropped under this lock
    /// (either can run a task's code, which may drop timers of this shard);
    /// see [`Lock`] for why poisoning is ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, ShardState> {
        self.state.lock_or_recover()
    }
}

/// The identity of a waker of the usual vtable whose data is at `data`:
/// plus one, so that 0 is left to say "no identity" (a data address of
/// `usize::MAX` has identity 0 and takes the lock).
fn id_of(data: usize) -> usize {
    data.wrapping_add(1)
}

/// What `Waker::will_wake` compares of a waker: the addresses of its data
/// and of its vtable.
fn addresses(waker: &Waker) -> (usize, usize) {
    (
        waker.data() as usize,
        std::ptr::from_ref(waker.vtable()) as usize,
    )
}

/// The timers of one shard: sleeps (wakers) and callbacks, in two wheels that
/// advance together. The callback wheel is made on first use.
#[derive(Debug)]
pub(super) struct ShardState {
    pub(super) sleeps: TimerWheel<Waker>,
    /// The deadlines of the sleeps' entries that were pushed back without
    /// the lock: the wheel's `Refile` for `sleeps`.
    pub(super) deadlines: Deadlines,
    /// `Option` only to give fired entries a placeholder.
    pub(super) callbacks: Option<Box<TimerWheel<Option<Callback>>>>,
    /// This shard, while it holds pending callbacks: see "Pending callbacks
    /// keep their shard alive" in `callback.rs`.
    pub(super) pin: Option<Arc<Shard>>,
}

impl ShardState {
    fn new(slots: usize) -> Self {
        ShardState {
            sleeps: TimerWheel::new(slots, 0),
            deadlines: Deadlines::default(),
            callbacks: None,
            pin: None,
        }
    }

    /// Takes a sleep's entry out of the wheel (cancelled, or fired and
    /// done), returning its waker if it was pending. `tracked`: its `Sleep`
    /// was in `State::Tracked`, whose entry stops being tracked here.
    #[inline]
    pub(super) fn remove_sleep(&mut self, key: Key, tracked: bool) -> Option<Waker> {
        if tracked {
            self.deadlines.untrack(key);
        }
        // A removal gives back a burst's memory, amortized O(1)
        // (`TimerWheel::after_remove`), and the pages past it with it.
        let waker = self.sleeps.remove(key);
        self.deadlines.fit(self.sleeps.capacity());
        waker
    }

    /// Sleeps and callbacks registered and not fired or cancelled.
    pub(super) fn pending(&self) -> usize {
        self.sleeps.pending() + self.pending_callbacks()
    }

    /// Both wheels' counters, summed.
    pub(super) fn counters(&self) -> Counters {
        let mut c = self.sleeps.counters();
        if let Some(t) = &self.callbacks {
            let t = t.counters();
            c.registered += t.registered;
            c.fired += t.fired;
            c.cancelled += t.cancelled;
            c.cascaded += t.cascaded;
            c.refiled += t.refiled;
            c.rearmed += t.rearmed;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// The layout the struct's docs describe: the fields a frame reads share
    /// no line with the lock or the state it guards, and two shards share
    /// none either.
    #[test]
    fn read_mostly_fields_are_apart_from_the_lock() {
        const LINE: usize = 64;
        let read_mostly = [
            (offset_of!(Shard, core), size_of::<Arc<WheelCore>>()),
            (offset_of!(Shard, fired_upto), size_of::<FiredUpto>()),
            (offset_of!(Shard, usual_vtable), size_of::<AtomicUsize>()),
        ];
        let state = offset_of!(Shard, state);
        for (offset, size) in read_mostly {
            assert!(
                (offset + size - 1) / LINE < state / LINE,
                "a read-mostly field at {offset} shares a line with the state at {state}"
            );
        }
        // Two shards of a `Box<[Arc<Shard>]>` are separate allocations; an
        // `Arc`'s counts sit before its value, a line pair apart from it.
        assert_eq!(align_of::<Shard>(), 128);
    }
}
