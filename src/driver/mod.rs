//! Everything behind the public timers: the shards, every lock, and every
//! step of the protocol between timers and the driver task. The public types
//! (`Sleep`, `TimerHandle`, `Wheel`, `ExpiryQueue`) call in here and never
//! take a lock themselves.
//!
//! | file | mechanism |
//! |---|---|
//! | `mod.rs` | [`WheelCore`], what every shard of one wheel shares; construction and [`WheelCore::shutdown`] |
//! | `shard.rs` | [`Shard`]: one lock's worth of the wheel, the thread-to-shard map, waker identity |
//! | `entry.rs` | [`SleepEntry`]: a `Sleep`'s life in the wheel (the role of tokio's `TimerEntry`) |
//! | `deadline.rs` | the deadlines `Sleep`s push back without the lock, in pages by key, and how the firing pass refiles their entries |
//! | `callback.rs` | a callback's life in the wheel: scheduling, the one cancel, shutdown's hand-back |
//! | `admission.rs` | `Builder::max_pending`, and the one refusal check |
//! | `schedule.rs` | step (2) of the wake-up protocol: notify or start the driver |
//! | `fire.rs` | the firing pass: fire every due tick, in order across shards |
//! | `run.rs` | the driver task and its guard |
//! | `timer_waker.rs` | firing inside Tokio's park, from the waker of the driver's Tokio timer |
//! | `handoff.rs` | the protocol's atomics: `next_wake`, the shut-down flag, `fired_upto`, the pass gate |
//! | `metrics.rs` | counters, lag, `Stats`, the live-wheel count |
//! | `wake.rs` | running other tasks' wakers without letting their panics through |
//!
//! A wheel is split into shards, each a [`TimerWheel`](crate::wheel::TimerWheel)
//! behind its own mutex. A timer registers in the shard of the thread that
//! created it, so worker threads of a multi-thread runtime register and
//! cancel on different locks (and bump different reference counts). Only the
//! driver visits every shard.
//!
//! The driver is a task on the Tokio runtime. It sleeps (on a Tokio timer, so
//! paused time drives it) until the next tick that has anything due, fires
//! every due tick in order across all shards, and exits when nothing is
//! pending. A registration that needs an earlier wake-up than the driver
//! plans, or finds no driver at all, notifies or starts one.
//!
//! When that Tokio timer fires, its waker (`TimerWaker`) fires the due
//! ticks itself and wakes their sleeps right there, in the runtime's park
//! where Tokio wakes its own timers, rather than on the driver task's next
//! turn: so a task that calls `tokio::time::advance` finds the wheel's due
//! timers woken when it resumes, as it finds Tokio's. The driver task then
//! spawns the callbacks that fired, plans the next wake-up and arms the
//! timer again. The two never fire at once (`PassGate`).
//!
//! # The wake-up protocol
//!
//! `next_wake` holds the tick the driver will next wake at, or `IDLE` when
//! no driver runs. A registration (1) inserts into its shard under the
//! shard's lock, then (2) loads `next_wake`: if its tick is earlier it
//! notifies the driver, or, seeing `IDLE`, claims the right to start one by a
//! compare-and-swap from `IDLE`. The driver, after firing, (a) computes the
//! earliest due tick over all shards, (b) stores it in `next_wake`, and
//! (c) computes it again, locking every shard.
//!
//! Why no timer can fall between the driver's scan and its sleep: the shard's
//! lock orders the registration's critical section (1) and the driver's
//! rescan (c). If (1) comes first, (c) sees the entry. If (c) comes first,
//! then (b) happens before (2) through that unlock/lock pair, so by coherence
//! (2) reads the value stored at (b) or a later one, and acts on it. This
//! rests on the insert being under the lock and the load after it; keep it
//! so. When (b) stored `IDLE` and (c) finds work, the driver takes itself back
//! by the same compare-and-swap, or exits if a registration already started a
//! new driver: a driver exists exactly while `next_wake != IDLE`, and only a
//! compare-and-swap from `IDLE` makes one, so there is never more than one.
//!
//! Cancelling does not wake the driver: it may wake once more for a tick whose
//! timers are all gone, find nothing and sleep again or stop. (Waking it on
//! every cancel would cost far more in the common case of a request timeout
//! cancelled right after it registered.)
//!
//! # Shutdown
//!
//! [`WheelCore::shutdown`] (s1) sets the shut-down flag, then (s2) locks every
//! shard in turn, handing back its callbacks and waking its pending sleeps;
//! the driver exits when it sees the flag, without looking at the shards
//! again. So every path that links an entry or changes one that shutdown must
//! see (a registration, a re-arm, a waker swap, a reset) (1) does so under the
//! shard's lock and then (2) reads the flag; if set, it takes the entry out
//! and goes over to Tokio's timer (a callback is handed back as refused).
//! The same argument as above: if (1) comes before the shard's (s2), the scan
//! sees the entry and wakes its task, whose next poll sees the flag; if (s2)
//! comes first, (s1) happens before (2) through that unlock/lock pair, and (2)
//! sees the flag. Checking the flag only before (1) leaves a gap: set the
//! flag, scan the shard, then link, and nothing ever wakes the entry. The
//! loom model `loom_registration_racing_shutdown` checks both orders.
//!
//! The rule is kept in one place: step (2) is [`WheelCore::schedule`], which
//! reads the flag first thing, and only the entry and callback modules link
//! or change entries; each of their operations that does ends in it, and
//! takes the entry out on its error. The public types cannot skip it: they
//! never touch a shard.

mod admission;
mod callback;
mod deadline;
mod entry;
mod fire;
mod handoff;
#[cfg(all(test, tokio_wheel_loom))]
mod loom;
mod metrics;
mod run;
mod schedule;
mod shard;
mod timer_waker;
mod wake;

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::clock::TickClock;
use crate::sync::{Lock, Mutex, MutexGuard};
use crate::timer_task::TimerTask;
use admission::Bound;
use callback::Callback;
use handoff::Handoff;
use metrics::Metrics;

pub(crate) use callback::{schedule as schedule_callback, CallbackEntry, Cancel};
pub(crate) use entry::{SleepEntry, Step};
pub(crate) use fire::CASCADE_STEP;
pub(crate) use shard::{thread_index, Shard, Shards};
pub(crate) use wake::{drop_waker, wake};

#[cfg(all(test, tokio_wheel_loom))]
pub(crate) use loom::model_shards;

/// Why a timer could not get a driver; its message is the panic message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoDriver {
    /// No runtime is bound to the wheel and none is current.
    NoRuntime,
    /// The runtime the driver must run on is shutting down.
    ShuttingDown,
    /// The wheel was shut down.
    ShutDown,
}

impl NoDriver {
    pub(crate) fn message(self) -> &'static str {
        match self {
            NoDriver::NoRuntime => {
                "tokio-wheel: this wheel's driver is not running and there is no Tokio runtime \
                 here to start it on; poll wheel timers from within a Tokio 1.x runtime, or bind \
                 the wheel to one with `Builder::runtime`"
            }
            NoDriver::ShuttingDown => {
                "tokio-wheel: the Tokio runtime that runs this wheel's driver is shutting down; \
                 its timers can no longer fire"
            }
            NoDriver::ShutDown => "tokio-wheel: the wheel has been shut down",
        }
    }
}

/// A wheel's settings, checked by the builder.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) origin: Instant,
    pub(crate) tick: Duration,
    pub(crate) slots: usize,
    pub(crate) shards: usize,
    pub(crate) runtime: Option<Handle>,
    pub(crate) max_pending: Option<usize>,
    pub(crate) max_wakeups_per_tick: Option<usize>,
}

/// What every shard of one wheel shares: its clock and settings, the
/// hand-off with its driver, its counters.
#[derive(Debug)]
pub(crate) struct WheelCore {
    pub(crate) clock: TickClock,
    pub(crate) tick: Duration,
    pub(crate) slots: usize,
    /// The runtime to run the driver on; `None`: the one current where a
    /// timer needs a driver.
    runtime: Option<Handle>,
    /// Deliveries (wake-ups and callbacks) between two yields of the driver.
    max_wakeups_per_tick: usize,
    bound: Option<Bound>,
    /// Set once, right after the shards are made. Weak, because shards point
    /// here: a shard lives as long as a `Wheel` handle or a timer uses it.
    shards: OnceLock<Box<[Weak<Shard>]>>,
    /// `next_wake` and the shut-down flag of the module docs.
    handoff: Handoff,
    notify: tokio::sync::Notify,
    metrics: Metrics,
    /// Callbacks that fired but could not be spawned because the driver's
    /// runtime stopped first: spawned by the next driver, or handed back by
    /// [`WheelCore::shutdown`].
    stranded: Mutex<Vec<Callback>>,
}

impl WheelCore {
    /// Makes a wheel's shared state and its shards.
    pub(crate) fn new_shards(config: Config) -> Shards {
        metrics::count_new_wheel();
        let core = Arc::new(WheelCore {
            clock: TickClock::new(config.origin, config.tick),
            tick: config.tick,
            slots: config.slots,
            runtime: config.runtime,
            max_wakeups_per_tick: config.max_wakeups_per_tick.unwrap_or(usize::MAX),
            bound: config.max_pending.map(Bound::new),
            shards: OnceLock::new(),
            handoff: Handoff::new(),
            notify: tokio::sync::Notify::new(),
            metrics: Metrics::default(),
            stranded: Mutex::new(Vec::new()),
        });
        let strong: Box<[Arc<Shard>]> = (0..config.shards)
            .map(|_| Arc::new(Shard::new(core.clone(), config.slots)))
            .collect();
        let weak = strong.iter().map(Arc::downgrade).collect();
        core.shards.set(weak).expect("shards are set once");
        Shards::new(strong)
    }

    /// The live shards. A shard that is gone held no timer.
    fn shards(&self, out: &mut Vec<Arc<Shard>>) {
        out.clear();
        let all = self.shards.get().expect("shards are set at construction");
        out.extend(all.iter().filter_map(Weak::upgrade));
    }

    /// The runtime the wheel is bound to, if any.
    pub(crate) fn runtime(&self) -> Option<&Handle> {
        self.runtime.as_ref()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.handoff.is_shut_down()
    }

    /// Stops the wheel: see [`Wheel::shutdown`](crate::Wheel::shutdown).
    pub(crate) fn shutdown(&self) -> Vec<TimerTask> {
        // Step (s1) of "Shutdown" in the module docs.
        if !self.handoff.shut_down() {
            // A later call: only callbacks stranded since (a runtime that
            // stopped dropped them unrun; see `WheelCore::warn_stranded`).
            let mut late = Vec::new();
            self.hand_back_stranded(&mut late);
            late.sort_by_key(TimerTask::deadline);
            return late;
        }
        // The driver exits when it sees the flag; this makes it look now.
        self.notify.notify_one();
        let mut shards = Vec::new();
        self.shards(&mut shards);
        let mut tasks = Vec::new();
        let mut wakers = Vec::new();
        let mut pins = Vec::new();
        let mut drained = 0;
        // Step (s2): every entry linked before this shard's lock is found here.
        for shard in &shards {
            let mut s = shard.lock();
            drained += s.drain_callbacks(&mut tasks);
            pins.extend(s.take_pin_if_idle());
            wakers.extend(s.sleeps.pending_values().cloned());
        }
        self.release(drained);
        drop(pins);
        self.hand_back_stranded(&mut tasks);
        tracing::debug!(handed_back = tasks.len(), "tokio-wheel: wheel shut down");
        // Pending sleeps re-poll, see the shutdown and go to Tokio's timer.
        // A waker that panics is reported and the rest are still woken: the
        // callbacks drained above are handed back whatever the wakers do.
        wake::wake_all(&mut wakers);
        tasks.sort_by_key(TimerTask::deadline);
        tasks
    }
}

impl Drop for WheelCore {
    fn drop(&mut self) {
        metrics::count_dropped_wheel();
    }
}

impl WheelCore {
    fn lock_stranded(&self) -> MutexGuard<'_, Vec<Callback>> {
        self.stranded.lock_or_recover()
    }
}
