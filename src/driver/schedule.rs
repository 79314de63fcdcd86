//! Step (2) of the wake-up protocol, after a registration's critical
//! section: make sure a driver will process the entry's tick, notifying the
//! running driver or starting one (see the driver's module docs).

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::time::Instant;

use super::handoff::Plan;
use super::run::{cancelled_on_the_spot, run, DriverGuard};
use super::{NoDriver, WheelCore};

impl WheelCore {
    /// Makes sure a driver will process `tick`: notifies the running driver
    /// if it plans to wake later, or starts one if none runs (on the bound
    /// runtime, else the current one). Called after every registration that
    /// links an entry, and on every poll of a pending timer.
    ///
    /// Errs, changing nothing but waking timers, if a driver must be started
    /// and cannot be, and with [`NoDriver::ShutDown`] whenever the wheel is
    /// shut down: this is step (2) of "Shutdown" in the module docs, so it is
    /// called after the critical section that linked or changed the entry,
    /// which its caller takes out on that error. Panics (with Tokio's
    /// message) if the runtime has no time driver.
    ///
    /// Inline: its common case (not shut down, a driver planned at or before
    /// `tick`) is two loads ([`Handoff::covers`](super::handoff::Handoff::covers)),
    /// and it is on the path of every poll of a pending timer, the lock-free
    /// one included.
    #[inline]
    pub(super) fn schedule(self: &Arc<Self>, tick: u64) -> Result<(), NoDriver> {
        if self.handoff.covers(tick) {
            return Ok(());
        }
        self.schedule_slow(tick)
    }

    /// [`schedule`](Self::schedule) when the driver must be notified or
    /// started, or the wheel is shut down: the same steps from the start.
    #[inline(never)]
    fn schedule_slow(self: &Arc<Self>, tick: u64) -> Result<(), NoDriver> {
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
        let guard = DriverGuard::new(self);
        // The guard is moved into the future at once: if the runtime drops
        // the task before its first poll, the guard still hands the wheel back.
        let task = handle.spawn(async move { run(guard, timer, starts).await });
        // A runtime that is shutting down cancels a new task on the spot (and
        // the guard has handed the wheel back). Telling the caller breaks what
        // would otherwise be a loop: wake, poll, spawn, cancelled, wake...
        if cancelled_on_the_spot(task) {
            return Err(NoDriver::ShuttingDown);
        }
        Ok(())
    }
}
