//! The `Wheel` handle.

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::clock::deadline_after;
use crate::driver::{self, Shards, WheelCore};
use crate::error::Rejected;
use crate::{Interval, Sleep, Stats, Timeout, TimerHandle, TimerTask};

/// A hashed timing wheel: a cheap, coarse timer for huge numbers of timeouts.
///
/// `Wheel` is a handle: clones share one wheel, and it is `Send + Sync`.
/// Timers fire on multiples of the wheel's [`resolution`](Wheel::resolution)
/// (its tick): at the first tick at or after their deadline, never before it. Registering and cancelling cost a few
/// uncontended operations, far less than `tokio::time`, which is what the
/// wheel is for: many timeouts, nearly all cancelled before they fire.
///
/// The wheel's driver is a task on a Tokio runtime: started on the runtime
/// where a timer is polled when none runs, stopped as soon as nothing is
/// pending. It sleeps on Tokio's own timer, so `tokio::time::pause`,
/// `advance` and `start_paused` drive the wheel deterministically in tests.
/// A wheel reads the Tokio clock of the runtime it is used on, and its timers
/// fire by the clock of the runtime its driver runs on (as a
/// `tokio::time::Sleep` fires by its own runtime's): share one wheel between
/// runtimes only if they share a clock (no paused time).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::builder()
///     .tick(Duration::from_millis(10))
///     .slots(512)
///     .build()?;
///
/// wheel.sleep(Duration::from_millis(30)).await;
///
/// let slow = wheel.sleep(Duration::from_secs(60));
/// let res = wheel.timeout(Duration::from_secs(5), slow).await;
/// assert!(res.is_err());
/// assert_eq!(wheel.pending(), 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Wheel {
    shards: Arc<Shards>,
}

/// A sleep's deadline as given.
pub(crate) enum When {
    After(Duration),
    At(Instant),
}

impl Wheel {
    pub(crate) fn from_shards(shards: Shards) -> Wheel {
        Wheel {
            shards: Arc::new(shards),
        }
    }

    /// How many shards the wheel has (a power of two).
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// A future that completes `duration` from now, at the wheel's next tick
    /// at or after that instant. Durations too long to add to the clock
    /// (`Duration::MAX`) are taken as about 30 years: pending, never an
    /// overflow.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// wheel.sleep(Duration::from_millis(25)).await; // done at the 30 ms tick
    /// # }
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        self.new_sleep(When::After(duration), false)
    }

    /// A future that completes at the wheel's first tick at or after
    /// `deadline`. A deadline already passed completes without touching the
    /// wheel: on the first poll, or, on a live clock within a millisecond of
    /// the deadline, on the poll after one `Pending`, as `tokio::time`'s does
    /// (see "The first poll" in [`Sleep`]'s docs). A deadline more than about 292 years from
    /// the wheel's start (or before it), which the wheel cannot hold, waits on
    /// Tokio's own timer instead: exact, and never early.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let at = Instant::now() + Duration::from_millis(40);
    /// wheel.sleep_until(at).await;
    /// assert!(Instant::now() >= at);
    /// # }
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.new_sleep(When::At(deadline), false)
    }

    /// A sleep in this thread's shard: see [`sleep_on`](Self::sleep_on).
    fn new_sleep(&self, when: When, reserved: bool) -> Sleep {
        Wheel::sleep_on(self.local_shard().clone(), when, reserved)
    }

    /// The shard this thread registers in.
    #[inline]
    pub(crate) fn local_shard(&self) -> &Arc<driver::Shard> {
        self.shards.local()
    }

    /// A `Sleep` on `shard` (of any wheel): what every constructor comes
    /// to, the free functions' included, which find the shard without a
    /// `Wheel` (see `default.rs`). The deadline becomes an offset from the
    /// wheel's origin with one clock conversion. A duration reads the clock
    /// here, and the sleep remembers whether its deadline was still ahead,
    /// so that its first poll need not read it again. A deadline the wheel
    /// cannot hold exactly (about 292 years from its origin, or a clock that
    /// far along) goes to Tokio's timer: saturating it would make it fire
    /// early once the clock saturates too.
    pub(crate) fn sleep_on(shard: Arc<driver::Shard>, when: When, reserved: bool) -> Sleep {
        let clock = &shard.core.clock;
        let exact = match when {
            When::After(d) => {
                let t = Instant::now();
                let now = clock.offset_of(t);
                match clock.offset_after(now, d) {
                    Some(deadline) => Ok((deadline, deadline > now)),
                    None => Err(deadline_after(t, d)),
                }
            }
            When::At(t) => clock.exact_offset_of(t).map(|o| (o, false)).ok_or(t),
        };
        match exact {
            Ok((deadline, future)) => Sleep::new(shard, deadline, reserved, future),
            Err(at) => Sleep::off_wheel(shard, at, reserved),
        }
    }

    /// Like [`sleep`](Wheel::sleep), but refused if the wheel is at its
    /// [`max_pending`](crate::Builder::max_pending) bound or shut down. The `Sleep`
    /// holds its place under the bound from now until it completes or is
    /// dropped.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::Rejected> {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().max_pending(100).build().unwrap();
    /// wheel.try_sleep(Duration::from_millis(10))?.await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Rejected`] naming the bound, or saying the wheel is shut down.
    pub fn try_sleep(&self, duration: Duration) -> Result<Sleep, Rejected> {
        self.try_new_sleep(When::After(duration))
    }

    /// Like [`sleep_until`](Wheel::sleep_until), but refused at the bound or
    /// after shutdown; see [`try_sleep`](Wheel::try_sleep).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().max_pending(1).build().unwrap();
    /// let at = Instant::now() + Duration::from_millis(20);
    /// let first = wheel.try_sleep_until(at).unwrap();
    /// let refused = wheel.try_sleep_until(at).unwrap_err();
    /// assert_eq!(refused.max_pending(), Some(1));
    /// first.await;
    /// assert_eq!(Instant::now(), at);
    /// wheel.try_sleep_until(at).unwrap().await; // its place is free again
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Rejected`] naming the bound, or saying the wheel is shut down.
    pub fn try_sleep_until(&self, deadline: Instant) -> Result<Sleep, Rejected> {
        self.try_new_sleep(When::At(deadline))
    }

    fn try_new_sleep(&self, when: When) -> Result<Sleep, Rejected> {
        self.core()
            .admit()
            .map_err(|reason| Rejected::new(reason, None))?;
        Ok(self.new_sleep(when, true))
    }

    /// Requires `future` to complete within `duration`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let res = wheel.timeout(Duration::from_millis(10), std::future::pending::<()>()).await;
    /// assert!(res.is_err());
    /// # }
    /// ```
    pub fn timeout<F: IntoFuture>(&self, duration: Duration, future: F) -> Timeout<F::IntoFuture> {
        Timeout::new(future.into_future(), self.sleep(duration))
    }

    /// Requires `future` to complete before `deadline`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(wheel.timeout_at(at, async { 1 }).await, Ok(1));
    /// # }
    /// ```
    pub fn timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Timeout<F::IntoFuture> {
        Timeout::new(future.into_future(), self.sleep_until(deadline))
    }

    /// Like [`timeout`](Wheel::timeout), but refused at the bound or after
    /// shutdown; see [`try_sleep`](Wheel::try_sleep).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().max_pending(1).build().unwrap();
    /// let first = wheel.try_timeout(Duration::from_secs(5), async { 1 }).unwrap();
    /// let second = wheel.try_timeout(Duration::from_secs(5), async { 2 });
    /// assert_eq!(second.err().and_then(|e| e.max_pending()), Some(1));
    /// assert_eq!(first.await, Ok(1));
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Rejected`] naming the bound, or saying the wheel is shut down.
    pub fn try_timeout<F: IntoFuture>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, Rejected> {
        let delay = self.try_sleep(duration)?;
        Ok(Timeout::new(future.into_future(), delay))
    }

    /// Like [`timeout_at`](Wheel::timeout_at), but refused at the bound or
    /// after shutdown; see [`try_sleep`](Wheel::try_sleep).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let at = Instant::now() + Duration::from_millis(100);
    /// let never = std::future::pending::<()>();
    /// assert!(wheel.try_timeout_at(at, never).unwrap().await.is_err());
    /// assert_eq!(Instant::now(), at);
    ///
    /// wheel.shutdown();
    /// let refused = wheel.try_timeout_at(at, std::future::ready(1));
    /// assert!(refused.unwrap_err().is_shutdown());
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Rejected`] naming the bound, or saying the wheel is shut down.
    pub fn try_timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Result<Timeout<F::IntoFuture>, Rejected> {
        let delay = self.try_sleep_until(deadline)?;
        Ok(Timeout::new(future.into_future(), delay))
    }

    /// An [`Interval`] that ticks now and then every `period`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let start = Instant::now();
    /// let mut every = wheel.interval(Duration::from_millis(100));
    /// every.tick().await; // at once
    /// every.tick().await;
    /// every.tick().await;
    /// assert_eq!(start.elapsed(), Duration::from_millis(200));
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `period` is zero, as `tokio::time::interval` does.
    #[track_caller]
    pub fn interval(&self, period: Duration) -> Interval {
        self.interval_at(Instant::now(), period)
    }

    /// An [`Interval`] whose first tick is at `start`, then every `period`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let start = Instant::now() + Duration::from_millis(500);
    /// let mut every = wheel.interval_at(start, Duration::from_millis(100));
    /// assert_eq!(every.tick().await, start);
    /// assert_eq!(every.tick().await, start + Duration::from_millis(100));
    /// assert_eq!(Instant::now(), start + Duration::from_millis(100));
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `period` is zero, as `tokio::time::interval_at` does.
    #[track_caller]
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        Interval::new(self.sleep_until(start), period)
    }

    /// Runs `task` once `delay` has passed: at the first tick at or after its
    /// deadline, as a task of its own on the runtime that runs the wheel's
    /// driver (so a slow or panicking callback delays and kills nothing else).
    ///
    /// The returned [`TimerHandle`] can cancel it. Dropping the handle does
    /// not: the callback is fire and forget, unlike a [`Sleep`]. Callbacks
    /// may schedule again from inside (heartbeats, retries), any distance
    /// ahead.
    /// A pending callback keeps the wheel alive: it runs even once every
    /// `Wheel` clone and handle is dropped. If the runtime that runs the
    /// driver shuts down first, it cannot run there: a warning says how many
    /// were pending; they stay in the wheel while any handle to it exists,
    /// run if a timer of the wheel starts a driver on another runtime, and
    /// [`shutdown`](Wheel::shutdown) hands them back.
    ///
    /// The closure runs inside a Tokio task, so like any async code it must
    /// not block: hand blocking work (a synchronous retry over the network,
    /// say) to `tokio::task::spawn_blocking` from inside it. A closure that
    /// blocks holds up its worker thread, and Tokio's own timers with it: a
    /// 100 ms `tokio::time::sleep` was measured taking 820 ms while a task on
    /// a four-worker runtime blocked for 800 ms, and 100.7 ms when that work
    /// went through `spawn_blocking`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::Rejected> {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let (tx, rx) = oneshot::channel();
    /// let handle = wheel.schedule(Duration::from_secs(2), move || {
    ///     let _ = tx.send("heartbeat");
    /// })?;
    /// assert_eq!(rx.await.unwrap(), "heartbeat");
    /// assert!(handle.is_expired());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Rejected`], with the task inside, if the wheel is at its
    /// [`max_pending`](crate::Builder::max_pending) bound or shut down, or if its
    /// driver must be started and there is no runtime to start it on.
    pub fn schedule<F>(&self, delay: Duration, task: F) -> Result<TimerHandle, Rejected>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_at(deadline_after(Instant::now(), delay), task)
    }

    /// Runs `task` at the first tick at or after `deadline`; see
    /// [`schedule`](Wheel::schedule). A deadline already passed runs at the
    /// next tick.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::Rejected> {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new(); // a 10 ms tick
    /// let at = Instant::now() + Duration::from_millis(25);
    /// let (tx, rx) = oneshot::channel();
    /// let handle = wheel.schedule_at(at, move || {
    ///     let _ = tx.send(Instant::now());
    /// })?;
    /// assert_eq!(handle.deadline(), at);
    /// let ran_at = rx.await.unwrap();
    /// assert_eq!(ran_at, at + Duration::from_millis(5)); // the 30 ms tick
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`schedule`](Wheel::schedule).
    pub fn schedule_at<F>(&self, deadline: Instant, task: F) -> Result<TimerHandle, Rejected>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_task(TimerTask::call(deadline, task))
    }

    /// Spawns `future` once `delay` has passed; see
    /// [`schedule`](Wheel::schedule).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::Rejected> {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let (tx, rx) = tokio::sync::oneshot::channel();
    /// wheel.schedule_future(Duration::from_millis(500), async move {
    ///     let _ = tx.send("retried");
    /// })?;
    /// assert_eq!(rx.await.unwrap(), "retried");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`schedule`](Wheel::schedule).
    pub fn schedule_future<F>(&self, delay: Duration, future: F) -> Result<TimerHandle, Rejected>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.schedule_future_at(deadline_after(Instant::now(), delay), future)
    }

    /// Spawns `future` at the first tick at or after `deadline`; see
    /// [`schedule`](Wheel::schedule).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::Rejected> {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// let (tx, rx) = oneshot::channel();
    /// let w = wheel.clone();
    /// wheel.schedule_future_at(at, async move {
    ///     w.sleep(Duration::from_millis(100)).await; // a future may wait
    ///     let _ = tx.send(Instant::now());
    /// })?;
    /// assert_eq!(rx.await.unwrap(), at + Duration::from_millis(100));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`schedule`](Wheel::schedule).
    pub fn schedule_future_at<F>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Result<TimerHandle, Rejected>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.schedule_task(TimerTask::future(deadline, future))
    }

    fn schedule_task(&self, task: TimerTask) -> Result<TimerHandle, Rejected> {
        let deadline = task.deadline();
        let entry = driver::schedule_callback(&self.shards, task)?;
        Ok(TimerHandle::new(entry, deadline))
    }

    /// Stops the wheel and hands back the callbacks that have not run, in
    /// deadline order, for the caller to run, persist or log (Netty's
    /// `stop()`). Their [`TimerHandle`]s report cancelled.
    ///
    /// After shutdown, [`schedule`](Wheel::schedule) and the `try_` calls are
    /// refused with [`Rejected`]. Sleeps, timeouts and intervals, pending or
    /// new, go over to Tokio's own timer on their next poll: they complete at
    /// their deadlines, never early and never hanging, at `tokio::time`'s
    /// cost. The driver stops.
    ///
    /// Callbacks that fired before the shutdown are still delivered: spawned
    /// on the driver's runtime, they run there. If that runtime then stops
    /// and drops some of them unrun, the wheel keeps those (with a warning),
    /// and a later call hands them back; otherwise a later call returns
    /// nothing. So a graceful stop that calls `shutdown` and then drops the
    /// runtime calls `shutdown` once more afterwards to account for every
    /// callback.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let handle = wheel.schedule(Duration::from_secs(30), || println!("retry")).unwrap();
    /// let unrun = wheel.shutdown();
    /// assert_eq!(unrun.len(), 1);
    /// assert!(handle.is_cancelled());
    /// assert!(wheel.schedule(Duration::from_secs(1), || ()).unwrap_err().is_shutdown());
    /// wheel.sleep(Duration::from_millis(10)).await; // still works, on tokio::time
    /// # }
    /// ```
    pub fn shutdown(&self) -> Vec<TimerTask> {
        self.core().shutdown()
    }

    /// Whether [`shutdown`](Wheel::shutdown) has been called, on this handle
    /// or any clone.
    ///
    /// ```
    /// let wheel = tokio_wheel::Wheel::new();
    /// let clone = wheel.clone();
    /// assert!(!wheel.is_shutdown());
    /// clone.shutdown();
    /// assert!(wheel.is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.core().is_shut_down()
    }

    /// Timers registered and not yet fired or cancelled: sleeps from their
    /// first pending poll until they fire or are dropped, callbacks from
    /// [`schedule`](Wheel::schedule) until they run or are cancelled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use futures::FutureExt;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut sleep = wheel.sleep(Duration::from_secs(5));
    /// assert!((&mut sleep).now_or_never().is_none()); // polled once: registered
    /// assert_eq!(wheel.pending(), 1);
    /// drop(sleep);
    /// assert_eq!(wheel.pending(), 0);
    /// # }
    /// ```
    pub fn pending(&self) -> usize {
        self.shards.pending()
    }

    /// The tick: the granularity at which timers fire.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), tokio_wheel::error::BuildError> {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().tick(Duration::from_millis(50)).build()?;
    /// assert_eq!(wheel.resolution(), Duration::from_millis(50));
    /// let start = Instant::now();
    /// wheel.sleep(Duration::from_millis(1)).await;
    /// assert_eq!(start.elapsed(), wheel.resolution()); // the next tick
    /// # Ok(())
    /// # }
    /// ```
    pub fn resolution(&self) -> Duration {
        self.core().tick
    }

    /// The ticks of a revolution of the wheel's lowest level (level 0), as
    /// set by [`Builder::slots`](crate::Builder::slots) after rounding up to
    /// a power of two: timers due in the revolution (`resolution() *
    /// slots()`) that the wheel's position is in, or in the next one, sit
    /// there until they fire and never move. The coarser levels above have
    /// 512 slots (level 1, a revolution each) and 64 slots (each level above
    /// it).
    ///
    /// ```
    /// # fn main() -> Result<(), tokio_wheel::error::BuildError> {
    /// let wheel = tokio_wheel::Wheel::builder().slots(500).build()?;
    /// assert_eq!(wheel.slots(), 512);
    /// assert_eq!(tokio_wheel::Wheel::new().slots(), 64); // the default
    /// # Ok(())
    /// # }
    /// ```
    pub fn slots(&self) -> usize {
        self.core().slots
    }

    /// A snapshot of the wheel's counters; see [`Stats`] for each.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// wheel.sleep(Duration::from_millis(20)).await;
    /// let never = std::future::pending::<()>();
    /// let _ = wheel.timeout(Duration::from_secs(5), async { 1 }).await; // ready first
    /// let _ = wheel.timeout(Duration::from_millis(50), never).await;
    /// let handle = wheel.schedule(Duration::from_secs(60), || ()).unwrap();
    /// handle.cancel();
    ///
    /// let stats = wheel.stats();
    /// assert_eq!(stats.registered, 3); // not the timeout whose future was ready
    /// assert_eq!((stats.fired, stats.cancelled, stats.pending), (2, 1, 0));
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        self.core().stats()
    }

    /// What the wheel's shards share.
    pub(crate) fn core(&self) -> &Arc<WheelCore> {
        self.shards.core()
    }
}

impl fmt::Debug for Wheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("tick", &self.resolution())
            .field("slots", &self.slots())
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Wheel;

    /// A pending callback keeps its wheel alive after every handle is gone,
    /// and no reference cycle outlives it: once it ran and the driver
    /// stopped, the wheel's shards and shared state are freed.
    #[tokio::test(start_paused = true)]
    async fn a_forgotten_callback_keeps_the_wheel_only_while_pending() {
        let wheel = Wheel::builder().shards(1).build().unwrap();
        let shard = Arc::downgrade(wheel.shards.get(0));
        let shared = Arc::downgrade(&wheel.shards.get(0).core);
        let (tx, rx) = tokio::sync::oneshot::channel();
        drop(wheel.schedule(Duration::from_millis(50), move || {
            let _ = tx.send(());
        }));
        drop(wheel);
        assert!(shard.upgrade().is_some(), "the pending callback's shard");
        rx.await.expect("the callback ran");
        for _ in 0..100 {
            if shared.strong_count() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(shard.strong_count(), 0, "the shard leaked");
        assert_eq!(shared.strong_count(), 0, "the wheel leaked");
    }

    /// A cancelled callback releases the shard at once.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_callback_releases_its_shard() {
        let wheel = Wheel::builder().shards(1).build().unwrap();
        let shard = Arc::downgrade(wheel.shards.get(0));
        let handle = wheel.schedule(Duration::from_secs(60), || ()).unwrap();
        drop(wheel);
        assert!(handle.cancel());
        drop(handle);
        for _ in 0..100 {
            if shard.strong_count() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(shard.strong_count(), 0, "the shard leaked");
    }
}
