//! The tick task, and the state it shares with timers.
//!
//! A wheel is split into shards, each a [`TimerWheel`] behind its own mutex.
//! A timer registers in the shard of the thread that created it, so worker
//! threads of a multi-thread runtime register and cancel on different locks
//! (and bump different reference counts). Only the driver visits every shard.
//!
//! The driver is a task on the Tokio runtime. It sleeps (on a Tokio timer, so
//! paused time drives it) until the next tick that has anything due, fires
//! every due tick in order across all shards, and exits when nothing is
//! pending. A registration that needs an earlier wake-up than the driver
//! plans, or finds no driver at all, notifies or starts one.
//!
//! # The wake-up protocol
//!
//! `next_wake` holds the tick the driver will next wake at, or [`IDLE`] when
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

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::clock::{TickClock, FAR_FUTURE};
use crate::wheel::TimerWheel;

/// `next_wake` when no driver runs.
pub(crate) const IDLE: u64 = u64::MAX;

/// Why a timer could not get a driver; its message is the panic message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoDriver {
    /// No runtime is bound to the wheel and none is current.
    NoRuntime,
    /// The runtime the driver must run on is shutting down.
    ShuttingDown,
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
        }
    }
}

/// What every shard of one wheel shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) clock: TickClock,
    pub(crate) tick: Duration,
    pub(crate) slots: usize,
    /// The runtime to run the driver on; `None`: the one current where a
    /// timer needs a driver.
    runtime: Option<Handle>,
    /// Set once, right after the shards are made. Weak, because shards point
    /// here: a shard lives as long as a `Wheel` handle or a timer uses it.
    shards: OnceLock<Box<[Weak<Shard>]>>,
    /// See the module docs.
    next_wake: AtomicU64,
    notify: tokio::sync::Notify,
    driver_wakeups: AtomicU64,
    driver_starts: AtomicU64,
}

/// One lock's worth of the wheel. Aligned so that two shards never share a
/// cache line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Shard {
    wheel: Mutex<TimerWheel<Waker>>,
    pub(crate) shared: Arc<Shared>,
}

impl Shard {
    /// Locks the shard. No `Waker` is ever woken or dropped under this lock
    /// (either can run a task's code, which may drop timers of this shard);
    /// the only waker code run under it is `clone` in the driver's hand-over,
    /// which executors implement as a reference count. So a poisoned lock only
    /// means one of our own assertions failed; the data is still consistent at
    /// every such point and the lock is taken anyway.
    pub(crate) fn lock(&self) -> MutexGuard<'_, TimerWheel<Waker>> {
        self.wheel.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counters read by [`Wheel::stats`](crate::Wheel::stats).
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub(crate) pending: usize,
    pub(crate) registered: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) driver_wakeups: u64,
    pub(crate) driver_starts: u64,
}

impl Shared {
    /// Makes a wheel's shared state and its `shards` shards.
    pub(crate) fn make_shards(
        origin: Instant,
        tick: Duration,
        slots: usize,
        shards: usize,
        runtime: Option<Handle>,
    ) -> Box<[Arc<Shard>]> {
        let clock = TickClock::new(origin, tick);
        let shared = Arc::new(Shared {
            clock,
            tick,
            slots,
            runtime,
            shards: OnceLock::new(),
            next_wake: AtomicU64::new(IDLE),
            notify: tokio::sync::Notify::new(),
            driver_wakeups: AtomicU64::new(0),
            driver_starts: AtomicU64::new(0),
        });
        let strong: Box<[Arc<Shard>]> = (0..shards)
            .map(|_| {
                Arc::new(Shard {
                    wheel: Mutex::new(TimerWheel::new(slots, 0)),
                    shared: shared.clone(),
                })
            })
            .collect();
        let weak = strong.iter().map(Arc::downgrade).collect();
        shared.shards.set(weak).expect("shards are set once");
        strong
    }

    /// The live shards. A shard that is gone held no timer.
    fn shards(&self, out: &mut Vec<Arc<Shard>>) {
        out.clear();
        let all = self.shards.get().expect("shards are set at construction");
        out.extend(all.iter().filter_map(Weak::upgrade));
    }

    /// The earliest tick any shard may have due, or `IDLE`.
    fn next_due(&self, shards: &[Arc<Shard>]) -> u64 {
        shards
            .iter()
            .filter_map(|s| s.lock().next_due())
            .min()
            .unwrap_or(IDLE)
    }

    /// Sums the counters of every shard and of the driver.
    pub(crate) fn totals(&self) -> Totals {
        let mut shards = Vec::new();
        self.shards(&mut shards);
        let mut t = Totals {
            driver_wakeups: self.driver_wakeups.load(Relaxed),
            driver_starts: self.driver_starts.load(Relaxed),
            ..Totals::default()
        };
        for shard in &shards {
            let w = shard.lock();
            let c = w.counters();
            t.pending += w.pending();
            t.registered += c.registered;
            t.fired += c.fired;
            t.cancelled += c.cancelled;
        }
        t
    }

    /// Makes sure a driver will process `tick`: notifies the running driver
    /// if it plans to wake later, or starts one if none runs (on the bound
    /// runtime, else the current one). Called after every registration that
    /// links an entry, and on every poll of a pending timer.
    ///
    /// Errs, changing nothing but waking timers, if a driver must be started
    /// and cannot be. Panics (with Tokio's message) if the runtime has no time
    /// driver.
    pub(crate) fn schedule(self: &Arc<Self>, tick: u64) -> Result<(), NoDriver> {
        let mut planned = self.next_wake.load(SeqCst);
        loop {
            if tick >= planned {
                return Ok(());
            }
            if planned != IDLE {
                self.notify.notify_one();
                return Ok(());
            }
            let handle = match &self.runtime {
                Some(handle) => handle.clone(),
                None => Handle::try_current().map_err(|_| NoDriver::NoRuntime)?,
            };
            // Made here, not in the task, so that a runtime without time
            // fails in the caller with Tokio's own message.
            let timer = {
                let _in_runtime = handle.enter();
                Box::pin(tokio::time::sleep_until(Instant::now()))
            };
            match self.next_wake.compare_exchange(IDLE, tick, SeqCst, SeqCst) {
                Ok(_) => return self.spawn_driver(&handle, timer),
                Err(now_planned) => planned = now_planned,
            }
        }
    }

    /// Spawns the driver after `schedule` claimed `next_wake`.
    fn spawn_driver(
        self: &Arc<Self>,
        handle: &Handle,
        timer: Pin<Box<tokio::time::Sleep>>,
    ) -> Result<(), NoDriver> {
        self.driver_starts.fetch_add(1, Relaxed);
        let guard = DriverGuard {
            shared: self.clone(),
            exited: false,
        };
        // The guard is moved into the future at once: if the runtime drops
        // the task before its first poll, the guard still hands the wheel back.
        let mut task = handle.spawn(async move { run(guard, timer).await });
        // A runtime that is shutting down cancels a new task on the spot (and
        // the guard has handed the wheel back). Telling the caller breaks what
        // would otherwise be a loop: wake, poll, spawn, cancelled, wake...
        if task.is_finished() {
            let mut cx = std::task::Context::from_waker(Waker::noop());
            if let Poll::Ready(Err(e)) = Pin::new(&mut task).poll(&mut cx) {
                if e.is_cancelled() {
                    return Err(NoDriver::ShuttingDown);
                }
            }
        }
        Ok(())
    }

    /// Fires every tick up to `now_tick`, in tick order across shards, and
    /// returns the next tick that may have something due (or `IDLE`).
    fn advance(&self, now_tick: u64, d: &mut DriverScratch) -> u64 {
        self.shards(&mut d.shards);
        d.next.clear();
        for shard in &d.shards {
            let mut w = shard.lock();
            // From here on registrations at or before `now_tick` complete at
            // once, so the loop below sees every entry it must fire.
            w.advance(now_tick);
            d.next.push(w.next_due().unwrap_or(IDLE));
        }
        loop {
            let tick = d.next.iter().copied().min().unwrap_or(IDLE);
            if tick > now_tick {
                for shard in &d.shards {
                    shard.lock().shrink_if_empty();
                }
                return tick;
            }
            for (shard, next) in d.shards.iter().zip(d.next.iter_mut()) {
                if *next == tick {
                    let mut w = shard.lock();
                    w.fire(tick, &mut d.wakers);
                    *next = w.next_due().unwrap_or(IDLE);
                }
            }
            if !d.wakers.is_empty() {
                tracing::trace!(tick, woken = d.wakers.len(), "tokio-wheel: tick fired");
            }
            // Outside every lock: a woken task may run (and drop timers) at once.
            wake_all(&mut d.wakers);
        }
    }

    /// Steps (b) and (c) of the protocol. Returns the tick to sleep until, or
    /// `None` if this driver must exit.
    fn publish(&self, next: u64, d: &mut DriverScratch) -> Option<u64> {
        self.next_wake.store(next, SeqCst);
        let again = self.next_due(&d.shards);
        // Shards that were gone at step (a) cannot have gained timers: a new
        // timer needs a live shard, and the upgrade above kept those alive.
        if again >= next {
            return (next != IDLE).then_some(next);
        }
        if next != IDLE {
            // Registrations only write `next_wake` by a compare-and-swap from
            // IDLE, so nobody can have changed it since (b).
            self.next_wake.store(again, SeqCst);
            return Some(again);
        }
        self.next_wake
            .compare_exchange(IDLE, again, SeqCst, SeqCst)
            .ok()
            .map(|_| again)
    }
}

/// Wakes and empties `wakers`. If a waker panics, the rest are still woken
/// (by the guard, as the panic unwinds): their entries have fired already, so
/// nothing else would wake them.
fn wake_all(wakers: &mut Vec<Waker>) {
    struct WakeRest<'a>(std::vec::Drain<'a, Waker>);
    impl Drop for WakeRest<'_> {
        fn drop(&mut self) {
            self.0.by_ref().for_each(Waker::wake);
        }
    }
    let mut rest = WakeRest(wakers.drain(..));
    for waker in rest.0.by_ref() {
        waker.wake();
    }
}

/// Buffers the driver reuses from pass to pass.
#[derive(Default)]
struct DriverScratch {
    shards: Vec<Arc<Shard>>,
    next: Vec<u64>,
    wakers: Vec<Waker>,
}

/// Owned by the driver task. If the task ends any way but by deciding to
/// (runtime shut down, task aborted, a panic), it hands the wheel back: it
/// marks the driver gone and wakes every pending timer, whose next poll starts
/// a new driver wherever it is polled. Nothing registered is left waiting on a
/// driver that no longer exists.
struct DriverGuard {
    shared: Arc<Shared>,
    exited: bool,
}

impl Drop for DriverGuard {
    fn drop(&mut self) {
        if self.exited {
            return;
        }
        tracing::debug!("tokio-wheel: driver stopped by its runtime; waking pending timers");
        self.shared.next_wake.store(IDLE, SeqCst);
        let mut shards = Vec::new();
        self.shared.shards(&mut shards);
        let mut wakers = Vec::new();
        for shard in &shards {
            wakers.extend(shard.lock().pending_values().cloned());
        }
        wake_all(&mut wakers);
    }
}

async fn run(mut guard: DriverGuard, mut timer: Pin<Box<tokio::time::Sleep>>) {
    let shared = guard.shared.clone();
    let mut scratch = DriverScratch::default();
    tracing::debug!(tick = ?shared.tick, slots = shared.slots, "tokio-wheel: driver started");
    loop {
        shared.driver_wakeups.fetch_add(1, Relaxed);
        let now = Instant::now();
        let next = shared.advance(shared.clock.floor(now), &mut scratch);
        let Some(next) = shared.publish(next, &mut scratch) else {
            guard.exited = true;
            tracing::debug!("tokio-wheel: nothing pending; driver stopped");
            return;
        };
        // Let go of the shards while asleep, so unused ones can be freed.
        scratch.shards.clear();
        let wake_at = shared
            .clock
            .instant_of(next)
            .unwrap_or_else(|| now + FAR_FUTURE);
        timer.as_mut().reset(wake_at);
        tracing::trace!(next, "tokio-wheel: driver parked");
        let mut notified = pin!(shared.notify.notified());
        std::future::poll_fn(|cx| {
            if timer.as_mut().poll(cx).is_ready() || notified.as_mut().poll(cx).is_ready() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}
