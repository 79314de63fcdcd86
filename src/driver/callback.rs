//! A callback's life in the wheel: linked by [`schedule`], fired by the
//! firing pass (and spawned by the driver), or taken out by the one cancel
//! operation ([`CallbackEntry::cancel`]), or handed back by shutdown.
//!
//! # Pending callbacks keep their shard alive
//!
//! Only handles (`Wheel`, `Sleep`, `TimerHandle`) and the driver's pass hold
//! a shard; `WheelCore::shards` is weak. A callback is fire and forget, so a
//! shard that holds pending callbacks holds a strong reference to itself (its
//! `pin`), set when its first callback is linked and dropped when its last
//! one fires, is cancelled or is handed back. This cycle exists only while a
//! callback is pending, and a driver exists then, so it is always broken; if
//! the runtime stops the driver (see `DriverGuard`) the pins are dropped
//! too, with a warning, since no driver is left to run the callbacks.
//!
//! # Fired, then run
//!
//! A callback that fires is spawned as a [`Spawned`] task, which holds it
//! until the task's first poll. A runtime that stops drops its tasks unrun;
//! a [`Spawned`] dropped that way hands its callback back to the wheel's
//! stranded list ([`WheelCore::strand_dropped`]), like the callbacks a driver
//! dropped mid-delivery ([`WheelCore::strand`]). The next driver spawns what
//! is stranded, and shutdown hands it back: both take it under the stranded
//! list's lock, so exactly one of them does. A callback is *fired* from its
//! tick until its task first runs (no longer cancellable, not yet expired),
//! and *expired* from then on: `TimerHandle::is_expired` means it has run or
//! is running.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use super::shard::{Shard, ShardState, Shards};
use super::{NoDriver, WheelCore};
use crate::clock::MAX_TICK;
use crate::error::{RejectReason, Rejected};
use crate::sync::MutexGuard;
use crate::timer_task::TimerTask;
use crate::wheel::{stays, Key, TimerWheel};

const PENDING: u8 = 0;
const EXPIRED: u8 = 1;
const CANCELLED: u8 = 2;
/// Fired and handed to the runtime, not run yet: no longer cancellable, and
/// not expired until its task first runs ("Fired, then run").
const FIRED: u8 = 3;

/// What a `TimerHandle` and the wheel share about one callback. `status`
/// and `key` change only under the lock of the shard that holds the entry;
/// they are atomics so that the handle can read `status` without it.
#[derive(Debug)]
pub(crate) struct CallbackState {
    status: AtomicU8,
    /// The entry's key while `status` is `PENDING`.
    key: AtomicU32,
}

impl CallbackState {
    fn new() -> Arc<Self> {
        Arc::new(CallbackState {
            status: AtomicU8::new(PENDING),
            key: AtomicU32::new(0),
        })
    }

    /// Under the shard lock.
    fn key(&self) -> Key {
        self.key.load(Relaxed)
    }

    fn is_pending(&self) -> bool {
        self.status.load(Relaxed) == PENDING
    }

    /// Whether the callback's task has started: it has run or is running.
    pub(super) fn is_expired(&self) -> bool {
        self.status.load(Relaxed) == EXPIRED
    }

    /// Whether it fired and waits for its task to run.
    #[cfg(test)]
    pub(super) fn is_fired(&self) -> bool {
        self.status.load(Relaxed) == FIRED
    }

    /// The status in a word, from one read: for `Debug`.
    fn name(&self) -> &'static str {
        match self.status.load(Relaxed) {
            PENDING => "pending",
            FIRED => "fired",
            EXPIRED => "expired",
            _ => "cancelled",
        }
    }

    /// Whether it was cancelled, or handed back by shutdown.
    fn is_cancelled(&self) -> bool {
        self.status.load(Relaxed) == CANCELLED
    }

    /// Under the shard lock, as the entry fires.
    fn set_fired(&self) {
        self.status.store(FIRED, Relaxed);
    }

    /// As the callback's task first runs: it is the task's from now on.
    fn set_expired(&self) {
        self.status.store(EXPIRED, Relaxed);
    }

    /// Under the shard lock, as the entry is removed unfired.
    fn set_cancelled(&self) {
        self.status.store(CANCELLED, Relaxed);
    }
}

/// A callback in a wheel: the work and its shared state.
pub(crate) struct Callback {
    state: Arc<CallbackState>,
    pub(super) task: TimerTask,
}

impl Callback {
    /// A callback not yet linked, and the state its handle shares.
    pub(super) fn new(task: TimerTask) -> (Callback, Arc<CallbackState>) {
        let state = CallbackState::new();
        let callback = Callback {
            state: state.clone(),
            task,
        };
        (callback, state)
    }
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.task.fmt(f)
    }
}

/// A scheduled callback, as its `TimerHandle` knows it.
#[derive(Debug, Clone)]
pub(crate) struct CallbackEntry {
    shard: Arc<Shard>,
    state: Arc<CallbackState>,
}

/// What [`CallbackEntry::cancel`] came to.
#[derive(Debug)]
pub(crate) enum Cancel {
    /// It had fired, been cancelled, or been handed back by shutdown.
    NotPending,
    /// This call took it out of the wheel; here is its work.
    Cancelled(Option<TimerTask>),
}

/// Links `task` in this thread's shard and makes sure a driver will run it:
/// `Wheel::schedule` and friends. Refused (handing the task back) after
/// shutdown, at `Builder::max_pending`, or when no driver can be started.
pub(crate) fn schedule(shards: &Shards, task: TimerTask) -> Result<CallbackEntry, Rejected> {
    let core = shards.core();
    if let Err(reason) = core.admit() {
        return Err(Rejected::new(reason, Some(task)));
    }
    let shard = shards.local().clone();
    let tick = core.clock.ceil(task.deadline());
    let (callback, state) = Callback::new(task);
    let due_by = shard.lock().insert_callback(&shard, tick, callback);
    let entry = CallbackEntry { shard, state };
    // Step (2) of "Shutdown" in the driver's docs, after the critical
    // section that linked the entry.
    let Err(why) = core.schedule(due_by) else {
        return Ok(entry);
    };
    let reason = match why {
        NoDriver::ShutDown => RejectReason::ShutDown,
        other => RejectReason::NoDriver(other.message()),
    };
    match entry.cancel() {
        // Shutdown got here first and hands the task back itself.
        Cancel::NotPending => Ok(entry),
        Cancel::Cancelled(task) => Err(Rejected::new(reason, task)),
    }
}

impl CallbackEntry {
    /// Takes the callback out of the wheel if it is still pending there.
    /// The one cancel operation: `TimerHandle::cancel`, and `schedule` when
    /// it cannot get a driver.
    pub(crate) fn cancel(&self) -> Cancel {
        let mut shard = self.shard.lock();
        if !self.state.is_pending() {
            return Cancel::NotPending;
        }
        let removed = shard.remove_callback(self.state.key());
        self.state.set_cancelled();
        let pin = shard.take_pin_if_idle();
        drop(shard);
        self.shard.core.release(1);
        // Outside the lock: dropping the last pin frees the shard.
        drop(pin);
        Cancel::Cancelled(removed.map(|c| c.task))
    }

    /// Whether the callback's task has started: it has run or is running.
    pub(crate) fn is_expired(&self) -> bool {
        self.state.is_expired()
    }

    /// The status in a word (`pending`, `fired`, `expired`, `cancelled`),
    /// from one read of it.
    pub(crate) fn status_name(&self) -> &'static str {
        self.state.name()
    }

    /// Whether it was cancelled, or handed back by shutdown.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }
}

impl ShardState {
    /// Links a callback at `tick`, or at the next tick if that one has
    /// passed; returns the tick the driver must fire by for it
    /// (`TimerWheel::due_by`: the tick it is linked at, or the revolution
    /// before). `shard` is the shard this state belongs to: it stays alive
    /// while the callback is pending.
    pub(super) fn insert_callback(
        &mut self,
        shard: &Arc<Shard>,
        tick: u64,
        callback: Callback,
    ) -> u64 {
        if self.pin.is_none() {
            self.pin = Some(shard.clone());
        }
        let elapsed = self.sleeps.elapsed();
        let slots = self.sleeps.slots();
        let callbacks = self
            .callbacks
            .get_or_insert_with(|| Box::new(TimerWheel::new(slots, elapsed)));
        let tick = tick.max(elapsed.saturating_add(1)).min(MAX_TICK);
        let state = callback.state.clone();
        let key = callbacks
            .insert(tick, Some(callback))
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        // Under the lock, right after the entry was linked.
        state.key.store(key, Relaxed);
        callbacks.due_by(tick)
    }

    /// Removes a pending callback.
    fn remove_callback(&mut self, key: Key) -> Option<Callback> {
        self.callbacks
            .as_mut()
            .and_then(|t| t.remove(key))
            .flatten()
    }

    /// The shard's pin, once no callback is pending in it: for the caller to
    /// drop after unlocking. Called after every removal of callbacks.
    #[must_use = "drop the pin after unlocking the shard"]
    pub(super) fn take_pin_if_idle(&mut self) -> Option<Arc<Shard>> {
        if self.pending_callbacks() > 0 {
            return None;
        }
        self.pin.take()
    }

    /// Callbacks linked and not fired or cancelled.
    pub(super) fn pending_callbacks(&self) -> usize {
        self.callbacks.as_ref().map_or(0, |t| t.pending())
    }

    /// Fires the callbacks due at `tick`: marked fired and removed (nothing
    /// else owns their entries), to `out`, to be spawned. `scratch` is empty
    /// before and after. Links at most `*budget` cascaded entries again;
    /// `false` if that left the firing unfinished (`TimerWheel::fire_within`).
    pub(super) fn fire_callbacks(
        &mut self,
        tick: u64,
        budget: &mut usize,
        scratch: &mut Vec<Option<Callback>>,
        out: &mut Vec<Callback>,
    ) -> bool {
        let Some(wheel) = &mut self.callbacks else {
            return true;
        };
        if wheel.fire_within(tick, budget, scratch, stays).is_none() {
            return false;
        }
        for c in scratch.drain(..).flatten() {
            // Expired once its task first runs (`Spawned`).
            c.state.set_fired();
            wheel.remove(c.state.key());
            out.push(c);
        }
        true
    }

    /// Cancels every pending callback, handing its task to `out`; returns
    /// how many.
    pub(super) fn drain_callbacks(&mut self, out: &mut Vec<TimerTask>) -> usize {
        let Some(wheel) = &mut self.callbacks else {
            return 0;
        };
        let mut drained = Vec::new();
        wheel.drain_pending(&mut drained);
        let drained: Vec<Callback> = drained.into_iter().flatten().collect();
        for c in &drained {
            c.state.set_cancelled();
        }
        let n = drained.len();
        out.extend(drained.into_iter().map(|c| c.task));
        n
    }
}

impl WheelCore {
    /// Keeps callbacks that fired but cannot be spawned (the driver's
    /// runtime is stopping), for the next driver or `shutdown`.
    pub(super) fn strand(&self, callbacks: &mut Vec<Callback>) {
        if !callbacks.is_empty() {
            let n = callbacks.len();
            let mut stranded = self.lock_stranded();
            stranded.append(callbacks);
            self.warn_stranded(stranded, n, "fired as the driver's runtime stopped");
        }
    }

    /// Keeps a fired callback whose task the runtime dropped before it ran
    /// ([`Spawned`]), for the next driver or `shutdown`, and notifies the
    /// driver, should one run (on another runtime), to run it now. Warns
    /// once per batch: when the stranded list was empty.
    fn strand_dropped(&self, callback: Callback) {
        let mut stranded = self.lock_stranded();
        let first = stranded.is_empty();
        stranded.push(callback);
        if first {
            self.warn_stranded(stranded, 1, "were dropped unrun by their stopping runtime");
        } else {
            drop(stranded);
        }
        self.notify.notify_one();
    }

    /// Warns of `n` callbacks just stranded, saying who will take them.
    /// Whether the wheel is shut down is read under the stranded list's lock,
    /// which shutdown's hand-back takes after setting its flag: a callback
    /// stranded after that hand-back sees the flag, and since no driver
    /// starts again, only a later `shutdown` call can take it.
    fn warn_stranded(&self, stranded: MutexGuard<'_, Vec<Callback>>, n: usize, what: &str) {
        let late = self.is_shut_down();
        drop(stranded);
        if late {
            tracing::warn!(
                stranded = n,
                "tokio-wheel: callbacks {what} after `Wheel::shutdown`; call `Wheel::shutdown` \
                 again to take them back"
            );
        } else {
            tracing::warn!(
                stranded = n,
                "tokio-wheel: callbacks {what}; they run on the next driver of this wheel, or \
                 `Wheel::shutdown` hands them back"
            );
        }
    }

    /// Moves the stranded callbacks to `out`, for a new driver to spawn.
    pub(super) fn take_stranded(&self, out: &mut Vec<Callback>) {
        out.append(&mut self.lock_stranded());
    }

    /// Shutdown's hand-back of the stranded callbacks, as cancelled.
    pub(super) fn hand_back_stranded(&self, out: &mut Vec<TimerTask>) {
        for c in self.lock_stranded().drain(..) {
            c.state.set_cancelled();
            out.push(c.task);
        }
    }
}

/// The future the driver spawns for a fired callback ("Fired, then run").
pub(super) struct Spawned {
    /// The callback, until the first poll takes it; then `None`.
    held: Option<Held>,
    /// The callback's future, from the first poll on.
    running: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

struct Held {
    /// Weak: a callback in flight does not keep its wheel alive. If every
    /// handle to the wheel is gone, nothing could run a stranded callback.
    core: Weak<WheelCore>,
    callback: Callback,
}

impl Spawned {
    pub(super) fn new(core: &Arc<WheelCore>, callback: Callback) -> Self {
        Spawned {
            held: Some(Held {
                core: Arc::downgrade(core),
                callback,
            }),
            running: None,
        }
    }
}

impl Future for Spawned {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(held) = self.held.take() {
            // From here on the callback is the task's: dropped or panicking,
            // it is not handed back (it may have run in part).
            held.callback.state.set_expired();
            self.running = Some(held.callback.task.into_future());
        }
        match &mut self.running {
            Some(running) => running.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            match held.core.upgrade() {
                Some(core) => core.strand_dropped(held.callback),
                // The wheel is gone: dropped unrun, with it.
                None => drop(held.callback),
            }
        }
    }
}
