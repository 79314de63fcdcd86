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
//! (c) computes it again. Both sides use `SeqCst`, so for any registration
//! either (c) sees its entry or (2) sees the value stored in (b); a timer can
//! never fall between the driver's scan and its sleep. When (b) stored `IDLE`
//! and (c) finds work, the driver takes itself back by the same
//! compare-and-swap, or exits if a registration already started a new driver:
//! there is never more than one.

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

/// The panic message for a timer polled where no driver can be started.
pub(crate) const NO_RUNTIME: &str = "tokio-wheel: this wheel's driver is not running and there is \
     no Tokio runtime here to start it on; poll wheel timers from within a Tokio 1.x runtime";

/// What every shard of one wheel shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) clock: TickClock,
    pub(crate) tick: Duration,
    pub(crate) slots: usize,
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
    /// Locks the shard. No code that can call back into the wheel (waking or
    /// dropping a `Waker`) ever runs under this lock, so a poisoned lock only
    /// means one of our own assertions failed; the data is still consistent
    /// at every such point and the lock is taken anyway.
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
    ) -> Box<[Arc<Shard>]> {
        let clock = TickClock::new(origin, tick);
        let shared = Arc::new(Shared {
            clock,
            tick,
            slots,
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
    /// if it plans to wake later, or starts one on the current runtime if none
    /// runs. Called after every registration that links an entry.
    ///
    /// Errs, changing nothing, if a driver must be started and there is no
    /// runtime here. Panics (with Tokio's message) if the runtime has no time
    /// driver.
    pub(crate) fn schedule(self: &Arc<Self>, tick: u64) -> Result<(), NoRuntime> {
        let mut planned = self.next_wake.load(SeqCst);
        loop {
            if tick >= planned {
                return Ok(());
            }
            if planned != IDLE {
                self.notify.notify_one();
                return Ok(());
            }
            let handle = Handle::try_current().map_err(|_| NoRuntime)?;
            // Made here, not in the task, so that a runtime without time
            // fails in the caller with Tokio's own message.
            let timer = Box::pin(tokio::time::sleep_until(Instant::now()));
            match self.next_wake.compare_exchange(IDLE, tick, SeqCst, SeqCst) {
                Ok(_) => {
                    self.driver_starts.fetch_add(1, Relaxed);
                    let guard = DriverGuard {
                        shared: self.clone(),
                        exited: false,
                    };
                    // The guard is moved into the future at once: if the
                    // runtime drops the task before its first poll, the guard
                    // still hands the wheel back.
                    drop(handle.spawn(async move { run(guard, timer).await }));
                    return Ok(());
                }
                Err(now_planned) => planned = now_planned,
            }
        }
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
            for waker in d.wakers.drain(..) {
                waker.wake();
            }
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
            // Only a driver stores values other than IDLE; nobody raced us.
            self.next_wake.store(again, SeqCst);
            return Some(again);
        }
        self.next_wake
            .compare_exchange(IDLE, again, SeqCst, SeqCst)
            .ok()
            .map(|_| again)
    }
}

/// A timer had to start the driver where there is no Tokio runtime.
#[derive(Debug)]
pub(crate) struct NoRuntime;

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
        for waker in wakers {
            waker.wake();
        }
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
