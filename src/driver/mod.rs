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
//! When that Tokio timer fires, its waker ([`TimerWaker`]) fires the due
//! ticks itself and wakes their sleeps right there, in the runtime's park
//! where Tokio wakes its own timers, rather than on the driver task's next
//! turn: so a task that calls `tokio::time::advance` finds the wheel's due
//! timers woken when it resumes, as it finds Tokio's. The driver task then
//! spawns the callbacks that fired, plans the next wake-up and arms the
//! timer again. The two never fire at once ([`PassGate`]).
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
//!
//! # Shutdown
//!
//! [`Shared::shutdown`] (s1) sets the shut-down flag, then (s2) locks every
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
//! [`Shared::schedule`] reads the flag first thing, so every caller that
//! links and then schedules does (2).
//!
//! # Polling without the lock
//!
//! A `Sleep` polled again with the same waker before its entry fired need
//! not lock its shard (a server's idle timer is polled on every frame). It
//! keeps its waker's identity ([`Shard::waker_id`]) and compares it with the
//! poll's; and each shard publishes `fired_upto`, raised by the driver under
//! the lock right after it fires a tick there, before it wakes any of that
//! tick's wakers. A `Sleep` knows a tick its entry is linked at or after
//! (its deadline's, less the ticks a reset left it behind by), so if that
//! tick is after `fired_upto` the entry has not fired, or is firing right now and its waker
//! (the same as this poll's) is woken after the store, so the task is polled
//! again and then sees the new value. Either way `Pending` is right. Any
//! other poll takes the lock. The loom model `loom_lock_free_poll_racing_fire`
//! checks this.
//!
//! # Pending callbacks keep their shard alive
//!
//! Only handles (`Wheel`, `Sleep`, `TimerHandle`) and the driver's pass hold
//! a shard; `Shared::shards` is weak. A callback is fire and forget, so a
//! shard that holds pending callbacks holds a strong reference to itself (its
//! `pin`), set when its first callback is linked and dropped when its last
//! one fires, is cancelled or is handed back. This cycle exists only while a
//! callback is pending, and a driver exists then, so it is always broken; if
//! the runtime stops the driver (see [`DriverGuard`]) the pins are dropped
//! too, with a warning, since no driver is left to run the callbacks.
//!
//! # User code run by the wheel
//!
//! Waking or dropping a `Waker` runs the executor's (or a user's) code. The
//! crate does both for wakers of other tasks (the driver, shutdown, a reset,
//! a waker swap); a panic there must not unwind through the wheel, where it
//! would kill the driver (stranding callbacks) or cut a shutdown short
//! (losing the callbacks it was handing back). [`wake`] and [`drop_waker`]
//! catch it and report it with `tracing::error!`.

mod handoff;
#[cfg(all(test, tokio_wheel_loom))]
mod loom;

use std::any::Any;
use std::future::{Future, IntoFuture};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::clock::{TickClock, FAR_FUTURE, MAX_TICK};
use crate::task::{Scheduled, TimerTask};
use crate::wheel::{Counters, Key, TimerWheel};
use crate::Stats;
use handoff::{FiredUpto, Handoff, PassGate, Plan, IDLE};

/// More live wheels than this in one process earns one warning: a wheel is
/// meant to be shared, and each has its own driver.
const MANY_WHEELS: usize = 64;
static LIVE_WHEELS: AtomicUsize = AtomicUsize::new(0);
static WARNED_MANY_WHEELS: AtomicBool = AtomicBool::new(false);

/// The driver timer's waker fires due ticks itself only while the wheel
/// holds at most this many timers; otherwise it leaves them to the driver
/// task. While Tokio's park runs that pass, no other worker of a
/// multi-thread runtime can fire Tokio's own timers: a mass expiry fired
/// there (1M sleeps due within 100 ms) held a 1 ms ticker up for 86 to 110
/// ms (`compare`, workload 3), against 16 to 31 ms when the driver task
/// fired them tick by tick. Bounding what is pending bounds the pass.
const INLINE_PENDING: usize = 4096;

/// The driver warns when it runs a tick this many ticks late.
const LAG_WARN_TICKS: u32 = 4;
/// At most one lag warning per this long.
const LAG_WARN_EVERY: Duration = Duration::from_secs(1);

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

/// What every shard of one wheel shares.
#[derive(Debug)]
pub(crate) struct Shared {
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
    /// [`Shared::shutdown`].
    stranded: Mutex<Vec<Scheduled>>,
}

/// `Builder::max_pending`: registered timers plus reserved ones.
#[derive(Debug)]
struct Bound {
    max: usize,
    used: AtomicUsize,
}

/// Counters kept by the driver (relaxed atomics: it is their only writer).
#[derive(Debug, Default)]
struct Metrics {
    wakeups: AtomicU64,
    starts: AtomicU64,
    ticks: AtomicU64,
    ticks_skipped: AtomicU64,
    max_batch: AtomicU64,
    last_lag_nanos: AtomicU64,
    max_lag_nanos: AtomicU64,
}

/// One lock's worth of the wheel. Aligned so that two shards never share a
/// cache line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Shard {
    state: Mutex<ShardState>,
    /// See "Polling without the lock" in the module docs.
    fired_upto: FiredUpto,
    /// The address of the `RawWakerVTable` of the first waker registered
    /// here (0 until then): nearly every waker of a runtime shares it.
    usual_vtable: AtomicUsize,
    pub(crate) shared: Arc<Shared>,
}

impl Shard {
    /// Whether a sleep entry of this shard due at `tick` may have fired (see
    /// [`FiredUpto::covers`]).
    pub(crate) fn may_have_fired(&self, tick: u64) -> bool {
        self.fired_upto.covers(tick)
    }

    /// What a registered `Sleep` keeps of its waker so that a later poll can
    /// tell, without the lock, that it comes with the same one: the data
    /// pointer (plus one), if the waker's vtable is this shard's usual one; 0
    /// otherwise (that `Sleep` takes the lock).
    pub(crate) fn waker_id(&self, waker: &Waker) -> usize {
        let vtable = vtable_addr(waker);
        let usual = match self
            .usual_vtable
            .compare_exchange(0, vtable, Relaxed, Relaxed)
        {
            Ok(_) => vtable,
            Err(usual) => usual,
        };
        if usual == vtable {
            (waker.data() as usize).wrapping_add(1)
        } else {
            0
        }
    }

    /// Whether `waker` is the one whose [`waker_id`](Self::waker_id) is `id`
    /// (never for 0): what `Waker::will_wake` compares, data pointer and
    /// vtable.
    pub(crate) fn is_waker(&self, id: usize, waker: &Waker) -> bool {
        id != 0
            && (waker.data() as usize).wrapping_add(1) == id
            && vtable_addr(waker) == self.usual_vtable.load(Relaxed)
    }

    /// Locks the shard. No `Waker` is ever woken or dropped under this lock
    /// (either can run a task's code, which may drop timers of this shard);
    /// the only waker code run under it is `clone` in the driver's hand-over,
    /// which executors implement as a reference count. So a poisoned lock only
    /// means one of our own assertions failed; the data is still consistent at
    /// every such point and the lock is taken anyway.
    pub(crate) fn lock(&self) -> MutexGuard<'_, ShardState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The timers of one shard: sleeps (wakers) and callbacks, in two wheels that
/// advance together. The callback wheel is made on first use.
#[derive(Debug)]
pub(crate) struct ShardState {
    pub(crate) sleeps: TimerWheel<Waker>,
    /// `Option` only to give fired entries a placeholder.
    tasks: Option<Box<TimerWheel<Option<Scheduled>>>>,
    /// This shard, while it holds pending callbacks: see "Pending callbacks
    /// keep their shard alive" in the module docs.
    pin: Option<Arc<Shard>>,
}

impl ShardState {
    fn new(slots: usize) -> Self {
        ShardState {
            sleeps: TimerWheel::new(slots, 0),
            tasks: None,
            pin: None,
        }
    }

    /// Links a callback at `tick`, or at the next tick if that one has
    /// passed; returns the tick it is linked at. `shard` is the shard this
    /// state belongs to: it stays alive while the callback is pending.
    pub(crate) fn insert_task(
        &mut self,
        shard: &Arc<Shard>,
        tick: u64,
        scheduled: Scheduled,
    ) -> u64 {
        if self.pin.is_none() {
            self.pin = Some(shard.clone());
        }
        let elapsed = self.sleeps.elapsed();
        let slots = self.sleeps.slots();
        let tasks = self
            .tasks
            .get_or_insert_with(|| Box::new(TimerWheel::new(slots, elapsed)));
        let tick = tick.max(elapsed.saturating_add(1)).min(MAX_TICK);
        let state = scheduled.state.clone();
        let key = tasks
            .insert(tick, Some(scheduled))
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        state.set_key(key);
        tick
    }

    /// Removes a pending callback.
    pub(crate) fn remove_task(&mut self, key: Key) -> Option<Scheduled> {
        self.tasks.as_mut().and_then(|t| t.remove(key)).flatten()
    }

    /// The shard's pin, once no callback is pending in it: for the caller to
    /// drop after unlocking. Called after every removal of callbacks.
    #[must_use = "drop the pin after unlocking the shard"]
    pub(crate) fn take_pin_if_idle(&mut self) -> Option<Arc<Shard>> {
        if self.tasks.as_ref().is_some_and(|t| t.pending() > 0) {
            return None;
        }
        self.pin.take()
    }

    /// Callbacks linked and not fired or cancelled.
    fn pending_tasks(&self) -> usize {
        self.tasks.as_ref().map_or(0, |t| t.pending())
    }

    /// Sleeps and callbacks registered and not fired or cancelled.
    pub(crate) fn pending(&self) -> usize {
        self.sleeps.pending() + self.pending_tasks()
    }

    fn counters(&self) -> Counters {
        let mut c = self.sleeps.counters();
        if let Some(t) = &self.tasks {
            let t = t.counters();
            c.registered += t.registered;
            c.fired += t.fired;
            c.cancelled += t.cancelled;
            c.cascaded += t.cascaded;
            c.rearmed += t.rearmed;
        }
        c
    }

    fn advance(&mut self, now: u64) {
        self.sleeps.advance(now);
        if let Some(t) = &mut self.tasks {
            t.advance(now);
        }
    }

    fn next_due(&mut self) -> Option<u64> {
        let tasks = self.tasks.as_mut().and_then(|t| t.next_due());
        match (self.sleeps.next_due(), tasks) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires `tick`: wakers to `wakers`, callbacks (marked expired and
    /// removed, since nothing else owns their entries) to `tasks`, to be
    /// spawned.
    fn fire(
        &mut self,
        tick: u64,
        wakers: &mut Vec<Waker>,
        scheduled: &mut Vec<Option<Scheduled>>,
        tasks: &mut Vec<Scheduled>,
    ) {
        self.sleeps.fire(tick, wakers);
        if let Some(wheel) = &mut self.tasks {
            wheel.fire(tick, scheduled);
            for s in scheduled.drain(..).flatten() {
                s.state.set_expired();
                wheel.remove(s.state.key());
                tasks.push(s);
            }
        }
    }

    /// Cancels every pending callback, handing its task to `out`.
    fn drain_tasks(&mut self, out: &mut Vec<TimerTask>) -> usize {
        let Some(wheel) = &mut self.tasks else {
            return 0;
        };
        let mut drained = Vec::new();
        wheel.drain_pending(&mut drained);
        let drained: Vec<Scheduled> = drained.into_iter().flatten().collect();
        for s in &drained {
            s.state.set_cancelled();
        }
        let n = drained.len();
        out.extend(drained.into_iter().map(|s| s.task));
        n
    }

    pub(crate) fn shrink_if_empty(&mut self) {
        self.sleeps.shrink_if_empty();
        if let Some(t) = &mut self.tasks {
            t.shrink_if_empty();
        }
    }
}

impl Shared {
    /// Makes a wheel's shared state and its shards.
    pub(crate) fn make_shards(config: Config) -> Box<[Arc<Shard>]> {
        let live = LIVE_WHEELS.fetch_add(1, Relaxed) + 1;
        if live > MANY_WHEELS && !WARNED_MANY_WHEELS.swap(true, Relaxed) {
            tracing::warn!(
                live,
                "tokio-wheel: more than {MANY_WHEELS} wheels are alive; a wheel is meant to be \
                 shared (clone the `Wheel`), and each one runs its own driver"
            );
        }
        let shared = Arc::new(Shared {
            clock: TickClock::new(config.origin, config.tick),
            tick: config.tick,
            slots: config.slots,
            runtime: config.runtime,
            max_wakeups_per_tick: config.max_wakeups_per_tick.unwrap_or(usize::MAX),
            bound: config.max_pending.map(|max| Bound {
                max,
                used: AtomicUsize::new(0),
            }),
            shards: OnceLock::new(),
            handoff: Handoff::new(),
            notify: tokio::sync::Notify::new(),
            metrics: Metrics::default(),
            stranded: Mutex::new(Vec::new()),
        });
        let strong: Box<[Arc<Shard>]> = (0..config.shards)
            .map(|_| {
                Arc::new(Shard {
                    state: Mutex::new(ShardState::new(config.slots)),
                    fired_upto: FiredUpto::new(),
                    usual_vtable: AtomicUsize::new(0),
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

    /// A snapshot for [`Wheel::stats`](crate::Wheel::stats): the driver's
    /// counters, and those of every shard summed.
    pub(crate) fn stats(&self) -> Stats {
        let mut shards = Vec::new();
        self.shards(&mut shards);
        let m = &self.metrics;
        let mut stats = Stats {
            driver_wakeups: m.wakeups.load(Relaxed),
            driver_starts: m.starts.load(Relaxed),
            ticks: m.ticks.load(Relaxed),
            ticks_skipped: m.ticks_skipped.load(Relaxed),
            max_batch: m.max_batch.load(Relaxed),
            last_lag: Duration::from_nanos(m.last_lag_nanos.load(Relaxed)),
            max_lag: Duration::from_nanos(m.max_lag_nanos.load(Relaxed)),
            ..Stats::default()
        };
        for shard in &shards {
            let s = shard.lock();
            let c = s.counters();
            stats.pending += s.pending();
            stats.registered += c.registered;
            // A re-armed entry had fired before its timer was due (see
            // `Stats::rearmed`): that fire was not the timer's.
            stats.fired += c.fired - c.rearmed;
            stats.rearmed += c.rearmed;
            stats.cancelled += c.cancelled;
            stats.cascades += c.cascaded;
        }
        stats
    }

    /// The runtime the wheel is bound to, if any.
    pub(crate) fn runtime(&self) -> Option<&Handle> {
        self.runtime.as_ref()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.handoff.is_shut_down()
    }

    fn lock_stranded(&self) -> MutexGuard<'_, Vec<Scheduled>> {
        self.stranded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps callbacks that fired but cannot be spawned (the driver's
    /// runtime is stopping), for the next driver or `shutdown`.
    fn strand(&self, tasks: &mut Vec<Scheduled>) {
        if !tasks.is_empty() {
            tracing::warn!(
                stranded = tasks.len(),
                "tokio-wheel: callbacks fired as the driver's runtime stopped; they run on the \
                 next driver of this wheel, or `Wheel::shutdown` hands them back"
            );
            self.lock_stranded().append(tasks);
        }
    }

    /// Takes one place under `Builder::max_pending`, for a timer that may be
    /// refused; `Err(max)` at the bound.
    pub(crate) fn reserve(&self) -> Result<(), usize> {
        match &self.bound {
            Some(b) if b.used.fetch_add(1, Relaxed) >= b.max => {
                b.used.fetch_sub(1, Relaxed);
                Err(b.max)
            }
            _ => Ok(()),
        }
    }

    /// Takes one place for a timer that is never refused (it may go past the
    /// bound, making `reserve` fail until enough are released).
    pub(crate) fn charge(&self) {
        if let Some(b) = &self.bound {
            b.used.fetch_add(1, Relaxed);
        }
    }

    /// Gives back `n` places: timers fired or cancelled.
    pub(crate) fn release(&self, n: usize) {
        if let (Some(b), true) = (&self.bound, n > 0) {
            b.used.fetch_sub(n, Relaxed);
        }
    }

    /// Makes sure a driver will process `tick`: notifies the running driver
    /// if it plans to wake later, or starts one if none runs (on the bound
    /// runtime, else the current one). Called after every registration that
    /// links an entry, and on every poll of a pending timer.
    ///
    /// Errs, changing nothing but waking timers, if a driver must be started
    /// and cannot be, and with [`NoDriver::ShutDown`] whenever the wheel is
    /// shut down: this is step (2) of "Shutdown" in the module docs, so call
    /// it after the critical section that linked or changed the entry, and
    /// take the entry out on that error. Panics (with Tokio's message) if the
    /// runtime has no time driver.
    pub(crate) fn schedule(self: &Arc<Self>, tick: u64) -> Result<(), NoDriver> {
        if self.is_shut_down() {
            return Err(NoDriver::ShutDown);
        }
        loop {
            match self.handoff.plan(tick) {
                Plan::Covered => return Ok(()),
                Plan::Notify => {
                    self.notify.notify_one();
                    return Ok(());
                }
                Plan::Start => {}
            }
            if self.is_shut_down() {
                return Err(NoDriver::ShutDown);
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
            if self.handoff.claim(tick) {
                return self.spawn_driver(&handle, timer);
            }
        }
    }

    /// Spawns the driver after `schedule` claimed the driver's role.
    fn spawn_driver(
        self: &Arc<Self>,
        handle: &Handle,
        timer: Pin<Box<tokio::time::Sleep>>,
    ) -> Result<(), NoDriver> {
        let starts = self.metrics.starts.fetch_add(1, Relaxed) + 1;
        let guard = DriverGuard {
            shared: self.clone(),
            timer: Arc::new(TimerWaker::new(self)),
            exited: false,
        };
        // The guard is moved into the future at once: if the runtime drops
        // the task before its first poll, the guard still hands the wheel back.
        let mut task = handle.spawn(async move { run(guard, timer, starts).await });
        // A runtime that is shutting down cancels a new task on the spot (and
        // the guard has handed the wheel back). Telling the caller breaks what
        // would otherwise be a loop: wake, poll, spawn, cancelled, wake...
        if task.is_finished() {
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(Err(e)) = Pin::new(&mut task).poll(&mut cx) {
                if e.is_cancelled() {
                    return Err(NoDriver::ShuttingDown);
                }
            }
        }
        Ok(())
    }

    /// Stops the wheel: see [`Wheel::shutdown`](crate::Wheel::shutdown).
    pub(crate) fn shutdown(&self) -> Vec<TimerTask> {
        // Step (s1) of "Shutdown" in the module docs.
        if !self.handoff.shut_down() {
            return Vec::new();
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
            drained += s.drain_tasks(&mut tasks);
            pins.extend(s.take_pin_if_idle());
            wakers.extend(s.sleeps.pending_values().cloned());
        }
        self.release(drained);
        drop(pins);
        for s in self.lock_stranded().drain(..) {
            s.state.set_cancelled();
            tasks.push(s.task);
        }
        tracing::debug!(handed_back = tasks.len(), "tokio-wheel: wheel shut down");
        // Pending sleeps re-poll, see the shutdown and go to Tokio's timer.
        // A waker that panics is reported and the rest are still woken: the
        // callbacks drained above are handed back whatever the wakers do.
        wake_all(&mut wakers);
        tasks.sort_by_key(TimerTask::deadline);
        tasks
    }

    /// Fires every tick up to `now`'s, in tick order across shards, into
    /// `p.wakers` and `p.tasks` (in the order they fired, after whatever they
    /// already hold), and returns the next tick that may have something due
    /// (or `IDLE`). Delivering them is the caller's. The driver task runs the
    /// same steps with a delivery after each tick.
    ///
    /// Run by the driver task, or by its timer's waker ([`TimerWaker`]),
    /// never by both at once.
    fn fire_due(&self, now: Instant, p: &mut Pass) -> u64 {
        self.begin_pass(now, p);
        while self.fire_next_tick(p) {}
        self.end_pass(p)
    }

    /// Starts a pass up to `now`'s tick: takes the live shards and moves each
    /// to that tick. From here on registrations at or before it complete at
    /// once, so [`fire_next_tick`](Self::fire_next_tick) sees every entry it
    /// must fire.
    fn begin_pass(&self, now: Instant, p: &mut Pass) {
        p.now = Some(now);
        p.now_tick = self.clock.floor(now);
        p.visited = 0;
        p.lag_noted = false;
        self.shards(&mut p.shards);
        p.next.clear();
        p.from = u64::MAX;
        for shard in &p.shards {
            let mut s = shard.lock();
            p.from = p.from.min(s.sleeps.elapsed());
            s.advance(p.now_tick);
            p.next.push(s.next_due().unwrap_or(IDLE));
        }
    }

    /// Fires the earliest tick of the pass that has something due, across
    /// shards, into `p.wakers` and `p.tasks`; `false` when none is left.
    fn fire_next_tick(&self, p: &mut Pass) -> bool {
        loop {
            let tick = p.next.iter().copied().min().unwrap_or(IDLE);
            if tick > p.now_tick {
                return false;
            }
            p.visited += 1;
            let before = p.wakers.len() + p.tasks.len();
            for (shard, next) in p.shards.iter().zip(p.next.iter_mut()) {
                if *next == tick {
                    let mut s = shard.lock();
                    s.fire(tick, &mut p.wakers, &mut p.scheduled, &mut p.tasks);
                    // Under the lock and before any of them is woken: a poll
                    // that reads the old value is followed by the wake.
                    shard.fired_upto.raise(tick);
                    *next = s.next_due().unwrap_or(IDLE);
                    // Not the last reference: `p.shards` holds one.
                    let pin = s.take_pin_if_idle();
                    drop(s);
                    drop(pin);
                }
            }
            let batch = p.wakers.len() + p.tasks.len() - before;
            if batch == 0 {
                continue;
            }
            self.release(batch);
            self.metrics.max_batch.fetch_max(batch as u64, Relaxed);
            if !p.lag_noted {
                // The earliest tick of this pass is the latest one run.
                p.lag_noted = true;
                if let Some(now) = p.now {
                    self.note_lag(tick, now, p);
                }
            }
            tracing::trace!(tick, woken = batch, "tokio-wheel: tick fired");
            return true;
        }
    }

    /// Ends a pass: counts the ticks visited and skipped, and returns the
    /// next tick that may have something due (or `IDLE`).
    fn end_pass(&self, p: &mut Pass) -> u64 {
        let advanced = p.now_tick.saturating_sub(p.from.min(p.now_tick));
        self.metrics.ticks.fetch_add(p.visited, Relaxed);
        self.metrics
            .ticks_skipped
            .fetch_add(advanced.saturating_sub(p.visited), Relaxed);
        for shard in &p.shards {
            shard.lock().shrink_if_empty();
        }
        p.next.iter().copied().min().unwrap_or(IDLE)
    }

    /// Whether the wheel holds at most `max` timers (sleeps and callbacks).
    fn pending_at_most(&self, max: usize, shards: &mut Vec<Arc<Shard>>) -> bool {
        self.shards(shards);
        let mut pending = 0;
        shards.iter().all(|s| {
            pending += s.lock().pending();
            pending <= max
        })
    }

    /// Records how late the driver ran `tick`, warning (at most once a
    /// second) when it is several ticks late: the runtime is overloaded.
    fn note_lag(&self, tick: u64, now: Instant, d: &mut Pass) {
        let Some(at) = self.clock.instant_of(tick) else {
            return;
        };
        let lag = now.saturating_duration_since(at);
        let nanos = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX);
        self.metrics.last_lag_nanos.store(nanos, Relaxed);
        self.metrics.max_lag_nanos.fetch_max(nanos, Relaxed);
        if lag > self.tick * LAG_WARN_TICKS
            && d.last_lag_warning.is_none_or(|w| now - w >= LAG_WARN_EVERY)
        {
            d.last_lag_warning = Some(now);
            tracing::warn!(
                ?lag,
                tick = ?self.tick,
                "tokio-wheel: the driver ran a tick late; the runtime may be overloaded"
            );
        }
    }

    /// Wakes the fired sleeps and spawns the fired callbacks, in the order
    /// they fired, yielding to the runtime after every
    /// `max_wakeups_per_tick` of them (burst smoothing). A callback runs as a
    /// task of its own: a slow or panicking one holds up nothing else.
    async fn deliver(&self, d: &mut DriverScratch) {
        // Popped from the back, so first reversed: first fired, first woken.
        d.pass.wakers.reverse();
        d.pass.tasks.reverse();
        let rest = Deliveries {
            shared: self,
            wakers: &mut d.pass.wakers,
            tasks: &mut d.pass.tasks,
        };
        loop {
            if d.budget == 0 {
                tokio::task::yield_now().await;
                d.budget = self.max_wakeups_per_tick;
            }
            if let Some(waker) = rest.wakers.pop() {
                wake(waker);
            } else if let Some(s) = rest.tasks.pop() {
                drop(tokio::spawn(s.task.into_future()));
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
        // timer needs a live shard, and the upgrade in `fire_due` kept those.
        self.handoff.publish(next, || self.next_due(&d.pass.shards))
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        LIVE_WHEELS.fetch_sub(1, Relaxed);
    }
}

/// What is left to deliver. A waker's panic is caught ([`wake`]), but the
/// runtime may drop the driver while it yields between deliveries (runtime
/// shutdown); this still wakes the rest as it drops (their entries have
/// fired, so nothing else would), and strands the callbacks left, which a
/// runtime that is stopping would drop unrun.
struct Deliveries<'a> {
    shared: &'a Shared,
    wakers: &'a mut Vec<Waker>,
    tasks: &'a mut Vec<Scheduled>,
}

impl Drop for Deliveries<'_> {
    fn drop(&mut self) {
        wake_all(self.wakers);
        self.shared.strand(self.tasks);
    }
}

/// Wakes and empties `wakers`. A waker that panics is reported and the rest
/// are still woken.
fn wake_all(wakers: &mut Vec<Waker>) {
    while let Some(waker) = wakers.pop() {
        wake(waker);
    }
}

/// Wakes a waker of another task. A panic in the waker's code is caught and
/// reported, not passed on: it must not kill the driver or cut a shutdown
/// short (see "User code run by the wheel" in the module docs).
pub(crate) fn wake(waker: Waker) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(move || waker.wake())) {
        report_panic("waking a task's waker", &*panic);
    }
}

/// Drops a waker of another task, catching and reporting a panic as [`wake`]
/// does.
pub(crate) fn drop_waker(waker: Waker) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(move || drop(waker))) {
        report_panic("dropping a task's waker", &*panic);
    }
}

/// The address of a waker's vtable, to compare.
fn vtable_addr(waker: &Waker) -> usize {
    std::ptr::from_ref(waker.vtable()) as usize
}

fn report_panic(what: &str, panic: &(dyn Any + Send)) {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string payload>");
    tracing::error!(
        panic = message,
        "tokio-wheel: a panic in {what} was caught; the wheel carries on"
    );
}

/// Buffers and state a firing pass keeps from one pass to the next.
#[derive(Default)]
struct Pass {
    shards: Vec<Arc<Shard>>,
    next: Vec<u64>,
    wakers: Vec<Waker>,
    scheduled: Vec<Option<Scheduled>>,
    tasks: Vec<Scheduled>,
    last_lag_warning: Option<Instant>,
    /// The pass under way: its clock reading and tick, the earliest tick a
    /// shard had reached before it, the ticks it fired, whether it noted
    /// its lag.
    now: Option<Instant>,
    now_tick: u64,
    from: u64,
    visited: u64,
    lag_noted: bool,
}

/// The driver task's pass, and its deliveries left before the next yield.
#[derive(Default)]
struct DriverScratch {
    pass: Pass,
    budget: usize,
}

/// Owned by the driver task. If the task ends any way but by deciding to
/// (its runtime shut down, or a bug of ours panicked: wakers' panics are
/// caught), it hands the wheel back: it marks the driver gone and wakes every
/// pending sleep, whose next poll starts a new driver wherever it is polled.
///
/// Pending callbacks cannot run on a runtime that is gone. They stay in the
/// wheel while any handle to it exists: they run if a timer of the wheel
/// starts a driver on another runtime (an unbound wheel), and
/// [`Shared::shutdown`] hands them back. So do callbacks that had fired but
/// were not spawned yet (by its timer's waker, or in the middle of a
/// delivery): they are kept as stranded ([`Shared::strand`]), since a
/// runtime that is stopping drops what is spawned on it. The guard drops their shards' pins,
/// so that a wheel nobody can reach is freed, and the callbacks with it: a
/// warning names how many were pending.
struct DriverGuard {
    shared: Arc<Shared>,
    timer: Arc<TimerWaker>,
    exited: bool,
}

impl DriverGuard {
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
        self.shared.handoff.release();
        // What that waker fired and left to the driver task: the wakers are
        // woken, the callbacks stranded (the runtime is stopping).
        let mut left = Pass::default();
        self.timer.take_left(&mut left);
        drop(Deliveries {
            shared: &self.shared,
            wakers: &mut left.wakers,
            tasks: &mut left.tasks,
        });
        let mut shards = Vec::new();
        self.shared.shards(&mut shards);
        let mut wakers = Vec::new();
        let mut pins = Vec::new();
        let mut stranded = 0;
        for shard in &shards {
            let mut s = shard.lock();
            wakers.extend(s.sleeps.pending_values().cloned());
            stranded += s.pending_tasks();
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
            if let Err(panic) = catch_unwind(AssertUnwindSafe(move || drop(pin))) {
                report_panic("dropping stranded callbacks", &*panic);
            }
        }
    }
}

/// The waker the driver polls its Tokio timer with. When Tokio fires that
/// timer (in the runtime's park, where it wakes its own timers, so before a
/// task that called `tokio::time::advance` resumes), this fires the due
/// ticks at once and wakes their sleeps, instead of waiting for the driver
/// task's next turn, if the wheel holds at most [`INLINE_PENDING`] timers. The callbacks that fired, and any wakers past
/// `max_wakeups_per_tick`, are left to the driver task, which it then wakes
/// to deliver them, plan the next wake-up and arm the timer again. The
/// driver task and this never fire at once ([`PassGate`]).
struct TimerWaker {
    /// Weak: Tokio keeps this waker in its timer entry, which must not keep
    /// the wheel alive.
    shared: Weak<Shared>,
    gate: PassGate,
    /// The driver task's waker, from its last poll.
    task: Mutex<Option<Waker>>,
    /// The pass's buffers, and what it left to the driver task (its wakers
    /// and tasks). Locked only inside a pass, or by the driver task while
    /// it runs, so never contended.
    pass: Mutex<Pass>,
}

impl TimerWaker {
    fn new(shared: &Arc<Shared>) -> Self {
        TimerWaker {
            shared: Arc::downgrade(shared),
            gate: PassGate::new(),
            task: Mutex::new(None),
            pass: Mutex::new(Pass::default()),
        }
    }

    /// Keeps the waker of the driver task's current poll.
    fn set_task(&self, waker: &Waker) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if !task.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }

    fn lock_pass(&self) -> MutexGuard<'_, Pass> {
        self.pass.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves what the last pass left into the driver task's buffers (empty
    /// at the top of its loop), in the order it fired.
    fn take_left(&self, d: &mut Pass) {
        let mut p = self.lock_pass();
        d.wakers.append(&mut p.wakers);
        d.tasks.append(&mut p.tasks);
    }
}

impl std::task::Wake for TimerWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.gate.begin_pass() {
            if let Some(shared) = self.shared.upgrade().filter(|s| !s.is_shut_down()) {
                let mut p = self.lock_pass();
                if shared.pending_at_most(INLINE_PENDING, &mut p.shards) {
                    shared.fire_due(Instant::now(), &mut p);
                    // Wakers first, in firing order, up to the burst cap;
                    // the rest stay in `p` for the driver task.
                    let now = p.wakers.len().min(shared.max_wakeups_per_tick);
                    for waker in p.wakers.drain(..now) {
                        wake(waker);
                    }
                }
                p.shards.clear();
            }
            self.gate.end_pass();
        }
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            wake(task);
        }
    }
}

async fn run(mut guard: DriverGuard, mut timer: Pin<Box<tokio::time::Sleep>>, start: u64) {
    let shared = guard.shared.clone();
    let timer_waker = guard.timer.clone();
    let fire_waker = Waker::from(timer_waker.clone());
    let mut scratch = DriverScratch {
        budget: shared.max_wakeups_per_tick,
        ..DriverScratch::default()
    };
    tracing::debug!(
        tick = ?shared.tick,
        slots = shared.slots,
        start,
        "tokio-wheel: driver started"
    );
    loop {
        if shared.is_shut_down() {
            // What fired before the shutdown is still delivered.
            timer_waker.take_left(&mut scratch.pass);
            shared.deliver(&mut scratch).await;
            shared.handoff.release();
            guard.exit();
            tracing::debug!("tokio-wheel: driver stopped: the wheel was shut down");
            return;
        }
        shared.metrics.wakeups.fetch_add(1, Relaxed);
        let now = Instant::now();
        timer_waker.take_left(&mut scratch.pass);
        scratch.pass.tasks.append(&mut shared.lock_stranded());
        // Outside every lock: a woken task may run (and drop timers) at once.
        shared.deliver(&mut scratch).await;
        shared.begin_pass(now, &mut scratch.pass);
        // Each tick delivered before the next is fired, so that a mass expiry
        // reaches its tasks tick by tick.
        while shared.fire_next_tick(&mut scratch.pass) {
            shared.deliver(&mut scratch).await;
        }
        let next = shared.end_pass(&mut scratch.pass);
        let Some(next) = shared.publish(next, &scratch) else {
            guard.exit();
            tracing::debug!("tokio-wheel: nothing pending; driver parked until the next timer");
            return;
        };
        // Let go of the shards while asleep, so unused ones can be freed.
        scratch.pass.shards.clear();
        let wake_at = shared
            .clock
            .instant_of(next)
            .unwrap_or_else(|| now + FAR_FUTURE);
        timer.as_mut().reset(wake_at);
        tracing::trace!(next, "tokio-wheel: driver sleeping until its next due tick");
        let mut notified = pin!(shared.notify.notified());
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
