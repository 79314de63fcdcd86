//! Firing inside Tokio's park: the waker of the driver's Tokio timer.

use std::sync::{Arc, Weak};
use std::task::Waker;

use tokio::time::Instant;

use super::fire::{Fired, Pass};
use super::handoff::PassGate;
use super::wake::wake;
use super::WheelCore;
use crate::sync::{Lock, Mutex, MutexGuard};

/// The driver timer's waker fires due ticks itself only while the wheel
/// holds at most this many timers; otherwise it leaves them to the driver
/// task. While Tokio's park runs that pass, no other worker of a
/// multi-thread runtime can fire Tokio's own timers: a mass expiry fired
/// there (1M sleeps due within 100 ms) held a 1 ms ticker up for 86 to 110
/// ms (`compare`, workload 3), against 16 to 31 ms when the driver task
/// fired them tick by tick. Bounding what is pending bounds the pass.
pub(super) const INLINE_PENDING: usize = 4096;

/// The waker the driver polls its Tokio timer with. When Tokio fires that
/// timer (in the runtime's park, where it wakes its own timers, so before a
/// task that called `tokio::time::advance` resumes), this fires the due
/// ticks at once and wakes their sleeps, instead of waiting for the driver
/// task's next turn, if the wheel holds at most [`INLINE_PENDING`] timers.
/// The callbacks that fired, and any wakers past `max_wakeups_per_tick`, are
/// left to the driver task, which it then wakes to deliver them, plan the
/// next wake-up and arm the timer again. The driver task and this never fire
/// at once ([`PassGate`]).
pub(super) struct TimerWaker {
    /// Weak: Tokio keeps this waker in its timer entry, which must not keep
    /// the wheel alive.
    core: Weak<WheelCore>,
    pub(super) gate: PassGate,
    /// The driver task's waker, from its last poll.
    task: Mutex<Option<Waker>>,
    /// The pass's buffers, and what it left to the driver task (its wakers
    /// and callbacks). Locked only inside a pass, or by the driver task while
    /// it runs, so never contended.
    pass: Mutex<Pass>,
}

impl TimerWaker {
    pub(super) fn new(core: &Arc<WheelCore>) -> Self {
        TimerWaker {
            core: Arc::downgrade(core),
            gate: PassGate::new(),
            task: Mutex::new(None),
            pass: Mutex::new(Pass::default()),
        }
    }

    /// Keeps the waker of the driver task's current poll.
    pub(super) fn set_task(&self, waker: &Waker) {
        let mut task = self.task.lock_or_recover();
        if !task.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }

    fn lock_pass(&self) -> MutexGuard<'_, Pass> {
        self.pass.lock_or_recover()
    }

    /// Moves what the last pass left into the driver task's buffers (empty
    /// at the top of its loop), in the order it fired.
    pub(super) fn take_left(&self, out: &mut Fired) {
        out.append(&mut self.lock_pass().fired);
    }
}

impl std::task::Wake for TimerWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.gate.begin_pass() {
            if let Some(core) = self.core.upgrade().filter(|c| !c.is_shut_down()) {
                let mut p = self.lock_pass();
                if core.pending_at_most(INLINE_PENDING, &mut p.shards) {
                    let now = Instant::now();
                    core.fire_due(now, &mut p);
                    // Wakers first, in firing order, up to the burst cap
                    // (not on paused time: see `clock_paused_since`); the
                    // rest stay in `p` for the driver task.
                    let cap = if clock_paused_since(now) {
                        usize::MAX
                    } else {
                        core.max_wakeups_per_tick
                    };
                    let n = p.fired.wakers.len().min(cap);
                    for waker in p.fired.wakers.drain(..n) {
                        wake(waker);
                    }
                }
                p.shards.clear();
            }
            self.gate.end_pass();
        }
        let task = self.task.lock_or_recover().take();
        if let Some(task) = task {
            wake(task);
        }
    }
}

/// Whether the clock has not moved since `read`, taken before a firing pass,
/// on a current-thread runtime: then it is paused (Tokio pauses only
/// current-thread runtimes, and a paused clock moves only while its runtime
/// parks or a task calls `advance`, never inside a pass), whereas a live
/// monotonic clock has moved on. On paused time the burst cap
/// (`max_wakeups_per_tick`) is not applied to a batch of at most
/// [`INLINE_PENDING`]: the cap paces live runtimes, and `advance` promises
/// every due timer of such a wheel woken when it returns (the README).
/// Should a coarse live clock read the same twice, a current-thread runtime
/// merely gets that batch in one go; a multi-thread runtime, whose worker's
/// local queue a burst could overflow, is never taken for paused.
pub(super) fn clock_paused_since(read: Instant) -> bool {
    Instant::now() == read
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}
