//! The wake-up protocol between registrations and the driver, on its own so
//! that loom can check it (`src/driver/loom.rs`) with the very code the
//! driver runs. The argument for its soundness is in the module docs of
//! [`driver`](super).

use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};

use crate::sync::{yield_thread, AtomicBool, AtomicU64, AtomicU8};

/// `next_wake` when no driver runs.
pub(crate) const IDLE: u64 = u64::MAX;

/// What a registration must do after linking an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// A driver will process the tick in time: nothing.
    Covered,
    /// A driver runs but plans to wake later: notify it.
    Notify,
    /// No driver runs: start one, once [`Handoff::claim`] succeeds.
    Start,
}

/// The tick the driver will next wake at, or [`IDLE`] when none runs; and
/// whether the wheel was shut down.
#[derive(Debug)]
pub(crate) struct Handoff {
    next_wake: AtomicU64,
    /// Set once by [`Handoff::shut_down`]. Read after every change to an entry
    /// that a shutdown must see (see "Shutdown" in the driver's docs).
    shut_down: AtomicBool,
}

impl Handoff {
    pub(crate) fn new() -> Self {
        Handoff {
            next_wake: AtomicU64::new(IDLE),
            shut_down: AtomicBool::new(false),
        }
    }

    /// Sets the shut-down flag; `true` if this call set it. The caller then
    /// locks every shard in turn and wakes what it finds there.
    pub(crate) fn shut_down(&self) -> bool {
        !self.shut_down.swap(true, SeqCst)
    }

    /// Whether the wheel was shut down.
    #[inline]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(SeqCst)
    }

    /// Step (2)'s common case: the wheel is not shut down and a driver will
    /// process `tick` ([`plan`](Self::plan) says `Covered`). The same two
    /// loads, in the same order, as the first two of
    /// `WheelCore::schedule`, which starts with this: two loads inlined in
    /// every caller, and a call only when there is something to do.
    #[inline]
    pub(crate) fn covers(&self, tick: u64) -> bool {
        !self.is_shut_down() && self.plan(tick) == Plan::Covered
    }

    /// Step (2), after linking an entry at `tick` under a shard lock.
    #[inline]
    pub(crate) fn plan(&self, tick: u64) -> Plan {
        match self.next_wake.load(SeqCst) {
            planned if tick >= planned => Plan::Covered,
            IDLE => Plan::Start,
            _ => Plan::Notify,
        }
    }

    /// Takes the driver's role for a registration at `tick` that saw no
    /// driver. `false`: someone else started one meanwhile; plan again.
    pub(crate) fn claim(&self, tick: u64) -> bool {
        self.next_wake
            .compare_exchange(IDLE, tick, SeqCst, SeqCst)
            .is_ok()
    }

    /// Steps (b) and (c), by the driver after firing: publishes `next` (the
    /// earliest due tick it found, or `IDLE`), then looks again with
    /// `rescan`, which locks every shard. Returns the tick to sleep until, or
    /// `None` if this driver must stop (nothing pending, or a registration
    /// already started a new driver).
    pub(crate) fn publish(&self, next: u64, rescan: impl FnOnce() -> u64) -> Option<u64> {
        self.next_wake.store(next, SeqCst);
        let again = rescan();
        if again >= next {
            return (next != IDLE).then_some(next);
        }
        if next != IDLE {
            // Registrations only write `next_wake` by a compare-and-swap from
            // IDLE, so nobody can have changed it since the store.
            self.next_wake.store(again, SeqCst);
            return Some(again);
        }
        self.claim(again).then_some(again)
    }

    /// The driver is gone (stopped by shutdown or killed with its runtime):
    /// the next registration starts a new one.
    pub(crate) fn release(&self) {
        self.next_wake.store(IDLE, SeqCst);
    }
}

/// A shard's `fired_upto`, of "Polling without the lock" in the driver's
/// docs: every sleep entry of the shard due at or before it has fired.
#[derive(Debug)]
pub(crate) struct FiredUpto(AtomicU64);

impl FiredUpto {
    pub(crate) fn new() -> Self {
        FiredUpto(AtomicU64::new(0))
    }

    /// By the driver, under the shard's lock, right after firing `tick`
    /// there and before waking any of its wakers.
    pub(crate) fn raise(&self, tick: u64) {
        self.0.fetch_max(tick, Release);
    }

    /// Whether an entry due at `tick` may have fired; `false` means it has
    /// not, or its waker is yet to be woken (after a `raise` this load would
    /// see). A poll that finds `false` with the registered waker returns
    /// `Pending` without the lock.
    pub(crate) fn covers(&self, tick: u64) -> bool {
        tick <= self.0.load(Acquire)
    }
}

/// Who fires ticks right now: the driver task, or the waker of its Tokio
/// timer (see `TimerWaker` in the driver). The two never fire at once.
///
/// - [`RUNNING`](Self::enter): the driver task is in its loop.
/// - `WAITING`: the driver task waits for its timer or a notification. Only
///   here may the timer's waker take over ([`begin_pass`](Self::begin_pass)).
/// - `PASSING`: the timer's waker is firing; the driver task, if polled
///   meanwhile, waits for the wake-up that [`end_pass`](Self::end_pass)'s
///   caller sends it.
/// - `CLOSED`: the driver task is gone; the timer's waker does nothing.
///
/// No wake-up of the driver task is lost: it stores its waker *before*
/// [`enter`](Self::enter), and the pass takes that waker *after*
/// [`end_pass`](Self::end_pass). If `enter` fails on `PASSING`, the pass's
/// later look at the waker sees the one just stored; if the pass looked
/// first, its `end_pass` came before, and `enter` succeeds. The loom model
/// `loom_timer_pass_hands_back_to_the_driver` checks this.
#[derive(Debug)]
pub(crate) struct PassGate(AtomicU8);

const RUNNING: u8 = 0;
const WAITING: u8 = 1;
const PASSING: u8 = 2;
const CLOSED: u8 = 3;

impl PassGate {
    /// A gate for a driver task that is running.
    pub(crate) fn new() -> Self {
        PassGate(AtomicU8::new(RUNNING))
    }

    /// By the driver task, on every poll of its wait: `false` while a pass
    /// runs (return `Pending`; the pass wakes the task when it is done).
    pub(crate) fn enter(&self) -> bool {
        match self.0.compare_exchange(WAITING, RUNNING, SeqCst, SeqCst) {
            Ok(_) => true,
            Err(state) => state == RUNNING,
        }
    }

    /// By the driver task, before it returns `Pending` from its wait.
    pub(crate) fn leave(&self) {
        let _ = self.0.compare_exchange(RUNNING, WAITING, SeqCst, SeqCst);
    }

    /// By the timer's waker: `true` if it may fire (the driver task waits).
    pub(crate) fn begin_pass(&self) -> bool {
        self.0
            .compare_exchange(WAITING, PASSING, SeqCst, SeqCst)
            .is_ok()
    }

    /// By the timer's waker, after firing and before it takes the driver
    /// task's waker to wake it.
    pub(crate) fn end_pass(&self) {
        let _ = self.0.compare_exchange(PASSING, WAITING, SeqCst, SeqCst);
    }

    /// The driver task is gone. Waits out a pass under way, so that what it
    /// leaves for the driver is there when this returns.
    pub(crate) fn close(&self) {
        while self
            .0
            .fetch_update(SeqCst, SeqCst, |s| (s != PASSING).then_some(CLOSED))
            .is_err()
        {
            yield_thread();
        }
    }
}
