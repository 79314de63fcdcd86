//! The driver task: its loop, its deliveries, and the guard that hands the
//! wheel back if the runtime drops it.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::time::Instant;

use super::callback::Spawned;
use super::fire::{Fired, Pass, Step, CASCADE_STEP};
use super::timer_waker::{clock_paused_since, TimerWaker, INLINE_PENDING};
use super::wake::{drop_caught, wake, wake_all};
use super::WheelCore;
use crate::clock::FAR_FUTURE;

/// The driver task's pass, and its deliveries left before the next yield.
#[derive(Default)]
struct DriverScratch {
    pass: Pass,
    budget: usize,
}

impl WheelCore {
    /// Wakes the fired sleeps and spawns the fired callbacks, in the order
    /// they fired, yielding to the runtime after every
    /// `max_wakeups_per_tick` of them (burst smoothing). A callback runs as a
    /// task of its own: a slow or panicking one holds up nothing else.
    /// `now` is a clock reading taken before what is delivered fired (or
    /// was taken over), for `clock_paused_since`.
    async fn deliver(self: &Arc<Self>, d: &mut DriverScratch, now: Instant) {
        // Popped from the back, so first reversed: first fired, first woken.
        d.pass.fired.wakers.reverse();
        d.pass.fired.callbacks.reverse();
        // On paused time a batch small enough for the timer's waker is not
        // paced either: see `clock_paused_since`. Asked only when the cap is
        // reached (never, by default), and before the first yield, so the
        // clock it reads has not moved on since the batch was taken.
        let small = d.pass.fired.wakers.len() + d.pass.fired.callbacks.len() <= INLINE_PENDING;
        let mut unpaced = None;
        let rest = Deliveries {
            core: self,
            fired: &mut d.pass.fired,
        };
        loop {
            if d.budget == 0 {
                if !*unpaced.get_or_insert_with(|| small && clock_paused_since(now)) {
                    tokio::task::yield_now().await;
                }
                d.budget = self.max_wakeups_per_tick;
            }
            if let Some(waker) = rest.fired.wakers.pop() {
                wake(waker);
            } else if let Some(c) = rest.fired.callbacks.pop() {
                // Handed back to the wheel if the runtime drops it unrun.
                let task = tokio::spawn(Spawned::new(self, c));
                if cancelled_on_the_spot(task) {
                    // The runtime is stopping (and `Spawned` stranded the
                    // callback). Spawning more would only strand them, and
                    // taking the stranded back to spawn again would loop:
                    // wait to be dropped with the runtime, whose
                    // `Deliveries` and `DriverGuard` strand what is left.
                    std::future::pending::<()>().await;
                }
            } else {
                return;
            }
            d.budget -= 1;
        }
    }

    /// Steps (b) and (c) of the protocol. Returns the tick to sleep until, or
    /// `None` if this driver must exit.
    fn publish(&self, next: u64, d: &DriverScratch) -> Option<u64> {
        // Shards that were gone at step (a) cannot have gained timers: a new
        // timer needs a live shard, and the upgrade in `begin_pass` kept those.
        self.handoff.publish(next, || self.next_due(&d.pass.shards))
    }
}

/// Whether a task just spawned was cancelled at once, unrun: what a runtime
/// that is shutting down does to a new task.
pub(super) fn cancelled_on_the_spot<T>(mut task: tokio::task::JoinHandle<T>) -> bool {
    if !task.is_finished() {
        return false;
    }
    let mut cx = Context::from_waker(Waker::noop());
    matches!(Pin::new(&mut task).poll(&mut cx), Poll::Ready(Err(e)) if e.is_cancelled())
}

/// What is left to deliver. A waker's panic is caught ([`wake`]), but the
/// runtime may drop the driver while it yields between deliveries (runtime
/// shutdown); this still wakes the rest as it drops (their entries have
/// fired, so nothing else would), and strands the callbacks left, which a
/// runtime that is stopping would drop unrun.
struct Deliveries<'a> {
    core: &'a WheelCore,
    fired: &'a mut Fired,
}

impl Drop for Deliveries<'_> {
    fn drop(&mut self) {
        wake_all(&mut self.fired.wakers);
        self.core.strand(&mut self.fired.callbacks);
    }
}

/// Owned by the driver task. If the task ends any way but by deciding to
/// (its runtime shut down, or a bug of ours panicked: wakers' panics are
/// caught), it hands the wheel back: it marks the driver gone and wakes every
/// pending sleep, whose next poll starts a new driver wherever it is polled.
///
/// Pending callbacks cannot run on a runtime that is gone. They stay in the
/// wheel while any handle to it exists: they run if a timer of the wheel
/// starts a driver on another runtime (an unbound wheel), and
/// [`WheelCore::shutdown`] hands them back. So do callbacks that had fired
/// but were not spawned yet (by its timer's waker, or in the middle of a
/// delivery): they are kept as stranded ([`WheelCore::strand`]), since a
/// runtime that is stopping drops what is spawned on it. The guard drops
/// their shards' pins, so that a wheel nobody can reach is freed, and the
/// callbacks with it: a warning names how many were pending.
pub(super) struct DriverGuard {
    core: Arc<WheelCore>,
    timer: Arc<TimerWaker>,
    exited: bool,
}

impl DriverGuard {
    pub(super) fn new(core: &Arc<WheelCore>) -> Self {
        DriverGuard {
            core: core.clone(),
            timer: Arc::new(TimerWaker::new(core)),
            exited: false,
        }
    }

    /// The driver decided to stop (after delivering all it fired): nothing
    /// fires from its timer any more.
    fn exit(&mut self) {
        self.timer.gate.close();
        self.exited = true;
    }
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        if self.exited {
            return;
        }
        tracing::debug!("tokio-wheel: driver stopped by its runtime; waking pending timers");
        // First: no pass of its timer's waker runs once a new driver can start.
        self.timer.gate.close();
        self.core.handoff.release();
        // What that waker fired and left to the driver task: the wakers are
        // woken, the callbacks stranded (the runtime is stopping).
        let mut left = Fired::default();
        self.timer.take_left(&mut left);
        drop(Deliveries {
            core: &self.core,
            fired: &mut left,
        });
        let mut shards = Vec::new();
        self.core.shards(&mut shards);
        let mut wakers = Vec::new();
        let mut pins = Vec::new();
        let mut stranded = 0;
        for shard in &shards {
            let mut s = shard.lock();
            wakers.extend(s.sleeps.pending_values().cloned());
            stranded += s.pending_callbacks();
            pins.extend(s.pin.take());
        }
        if stranded > 0 {
            tracing::warn!(
                stranded,
                "tokio-wheel: the driver's runtime stopped with callbacks pending; they cannot \
                 run there. They run if a timer of this wheel starts a driver on another \
                 runtime, `Wheel::shutdown` hands them back, and they are dropped unrun once \
                 every handle to the wheel is gone"
            );
        }
        wake_all(&mut wakers);
        // Dropping the last pin frees the shard and its callbacks (user code).
        drop(shards);
        for pin in pins {
            drop_caught("dropping stranded callbacks", pin);
        }
    }
}

/// The driver task.
pub(super) async fn run(
    mut guard: DriverGuard,
    mut timer: Pin<Box<tokio::time::Sleep>>,
    start: u64,
) {
    let core = guard.core.clone();
    let timer_waker = guard.timer.clone();
    let fire_waker = Waker::from(timer_waker.clone());
    let mut scratch = DriverScratch {
        budget: core.max_wakeups_per_tick,
        ..DriverScratch::default()
    };
    tracing::debug!(
        tick = ?core.tick,
        slots = core.slots,
        start,
        "tokio-wheel: driver started"
    );
    loop {
        if core.is_shut_down() {
            // What fired before the shutdown is still delivered.
            timer_waker.take_left(&mut scratch.pass.fired);
            core.deliver(&mut scratch, Instant::now()).await;
            core.handoff.release();
            guard.exit();
            tracing::debug!("tokio-wheel: driver stopped: the wheel was shut down");
            return;
        }
        core.metrics.wakeups.fetch_add(1, Relaxed);
        let mut now = Instant::now();
        timer_waker.take_left(&mut scratch.pass.fired);
        core.take_stranded(&mut scratch.pass.fired.callbacks);
        // Outside every lock: a woken task may run (and drop timers) at once.
        core.deliver(&mut scratch, now).await;
        core.begin_pass(now, &mut scratch.pass);
        loop {
            // Each tick delivered before the next is fired, so that a mass
            // expiry reaches its tasks tick by tick; a large cascade is
            // fired in steps, with a yield between two.
            loop {
                let step = core.fire_next_tick(&mut scratch.pass, CASCADE_STEP);
                if step == Step::Done {
                    break;
                }
                core.deliver(&mut scratch, now).await;
                if step == Step::Paused {
                    tokio::task::yield_now().await;
                    scratch.budget = core.max_wakeups_per_tick;
                }
            }
            // Then the lists the wheels deferred (the next revolution's, far
            // lists), a step at a time, with a new pass after each to fire
            // what came due meanwhile.
            if !core.cascade_ahead(&mut scratch.pass, CASCADE_STEP) || core.is_shut_down() {
                break;
            }
            tokio::task::yield_now().await;
            scratch.budget = core.max_wakeups_per_tick;
            core.end_pass(&mut scratch.pass);
            now = Instant::now();
            core.begin_pass(now, &mut scratch.pass);
        }
        let next = core.end_pass(&mut scratch.pass);
        let Some(next) = core.publish(next, &scratch) else {
            guard.exit();
            tracing::debug!("tokio-wheel: nothing pending; driver parked until the next timer");
            return;
        };
        // Let go of the shards while asleep, so unused ones can be freed.
        scratch.pass.shards.clear();
        let wake_at = core
            .clock
            .instant_of(next)
            .unwrap_or_else(|| now + FAR_FUTURE);
        timer.as_mut().reset(wake_at);
        tracing::trace!(next, "tokio-wheel: driver sleeping until its next due tick");
        let mut notified = pin!(core.notify.notified());
        std::future::poll_fn(|cx| {
            timer_waker.set_task(cx.waker());
            if !timer_waker.gate.enter() {
                // The timer's waker is firing; it wakes this task when done.
                return Poll::Pending;
            }
            let mut timer_cx = Context::from_waker(&fire_waker);
            if timer.as_mut().poll(&mut timer_cx).is_ready()
                || notified.as_mut().poll(cx).is_ready()
            {
                Poll::Ready(())
            } else {
                timer_waker.gate.leave();
                Poll::Pending
            }
        })
        .await;
    }
}
