//! The `Sleep` future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;

use crate::clock::MAX_TICK;
use crate::driver::{NoDriver, Shard};
use crate::wheel::Key;

/// A future that completes at the first tick of its wheel at or after a
/// deadline.
///
/// Made by [`Wheel::sleep`](crate::Wheel::sleep),
/// [`Wheel::sleep_until`](crate::Wheel::sleep_until) or the free functions
/// [`sleep`](crate::sleep) and [`sleep_until`](crate::sleep_until).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// let start = Instant::now();
/// tokio_wheel::sleep(Duration::from_millis(100)).await;
/// assert!(start.elapsed() >= Duration::from_millis(100));
/// # }
/// ```
///
/// # Cost and cancellation
///
/// A `Sleep` takes no lock and no memory in the wheel until it is first
/// polled and not yet due; only then is it registered, with the waker of that
/// poll. A later poll with another waker replaces it, so the task that polled
/// last is the one woken. Dropping a registered `Sleep` removes its entry at
/// once (O(1)): the overwhelmingly common fate of a timeout costs one lock of
/// the shard it registered in, not a wait for the driver.
///
/// `Sleep` is `Unpin`: no `Box::pin` or `pin!` is needed to poll it by
/// reference, e.g. `(&mut sleep).await` or in `tokio::select!`.
///
/// # After [`Wheel::shutdown`](crate::Wheel::shutdown)
///
/// A `Sleep` of a shut-down wheel, pending or new, goes over to Tokio's own
/// timer (`tokio::time::sleep_until` on the same deadline) on its next poll:
/// it neither hangs nor fires early, at `tokio::time`'s cost.
///
/// # Panics
///
/// Polling panics if the wheel's driver must be started (it stops whenever
/// nothing is pending) and cannot be: there is no Tokio runtime on this thread
/// and the wheel is not bound to one ([`Builder::runtime`](crate::Builder::runtime)),
/// the runtime is shutting down, or it was built without time enabled.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    shard: Arc<Shard>,
    /// The deadline as nanoseconds from the wheel's origin (see
    /// `TickClock::offset_of`): half the size of an `Instant`.
    deadline: i64,
    state: State,
}

enum State {
    /// Not in the wheel: never polled, reset, or due at the first poll.
    /// `reserved`: holds a place under `Builder::max_pending` (made by a
    /// `try_` constructor), which the entry takes over on registration.
    Idle { reserved: bool },
    /// In the wheel under `key`, linked at (or fired from) `tick`. The
    /// deadline may have been moved later since: the entry then fires early
    /// for it and the next poll re-arms it (see [`Sleep::reset`]).
    Registered { key: Key, tick: u64 },
    /// Completed.
    Elapsed,
    /// The wheel was shut down; Tokio's timer took over.
    Fallback(Pin<Box<tokio::time::Sleep>>),
}

impl Sleep {
    /// A sleep due at `deadline`, an offset from the wheel's origin.
    pub(crate) fn new(shard: Arc<Shard>, deadline: i64, reserved: bool) -> Sleep {
        Sleep {
            deadline,
            shard,
            state: State::Idle { reserved },
        }
    }

    /// The clock, in the same units as `deadline`.
    fn now(&self) -> i64 {
        self.shard.shared.clock.offset_of(Instant::now())
    }

    fn due_tick(&self) -> u64 {
        self.shard.shared.clock.ceil_offset(self.deadline)
    }

    /// The instant at which this `Sleep` is due. It completes at the first
    /// tick of its wheel at or after this instant.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let sleep = tokio_wheel::sleep_until(at);
    /// assert_eq!(sleep.deadline(), at);
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.shard.shared.clock.instant_at(self.deadline)
    }

    /// Whether the deadline has been reached: the `Sleep` completed, or its
    /// wheel fired it and it will complete on its next poll. A `Sleep` that
    /// was never polled reports `false` even past its deadline.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let mut sleep = tokio_wheel::sleep(Duration::from_millis(10));
    /// assert!(!sleep.is_elapsed());
    /// (&mut sleep).await;
    /// assert!(sleep.is_elapsed());
    /// # }
    /// ```
    pub fn is_elapsed(&self) -> bool {
        match &self.state {
            State::Idle { .. } => false,
            State::Elapsed => true,
            State::Fallback(sleep) => sleep.is_elapsed(),
            State::Registered { key, .. } => {
                let fired = self.shard.lock().sleeps.is_fired(*key);
                fired && self.deadline <= self.now()
            }
        }
    }

    /// Moves the deadline, whether or not the `Sleep` has completed. A
    /// completed `Sleep` that is reset becomes pending again.
    ///
    /// Moving the deadline later takes no lock: the entry stays where it is,
    /// and when it fires the `Sleep` re-arms itself for the new deadline
    /// instead of completing. An idle connection timeout reset on every packet
    /// thus costs a field write per packet and one spurious wake-up per
    /// timeout period. Moving it earlier moves the entry (one lock) and keeps
    /// the registered waker, so a task waiting on this `Sleep` is woken at the
    /// new deadline even if it does not poll in between.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let start = Instant::now();
    /// let mut sleep = tokio_wheel::sleep(Duration::from_millis(50));
    /// (&mut sleep).await;
    /// sleep.reset(Instant::now() + Duration::from_millis(200));
    /// (&mut sleep).await;
    /// assert!(start.elapsed() >= Duration::from_millis(250));
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Moving a registered `Sleep` earlier may need to start the wheel's
    /// driver, and panics where polling would (see the type's docs).
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = self.shard.shared.clock.offset_of(deadline);
        let (key, tick) = match &mut self.state {
            State::Idle { .. } => return,
            State::Elapsed => {
                self.state = State::Idle { reserved: false };
                return;
            }
            State::Fallback(sleep) => {
                sleep.as_mut().reset(deadline);
                return;
            }
            State::Registered { key, tick } => (*key, *tick),
        };
        let shared = &self.shard.shared;
        if shared.is_shut_down() {
            // The next poll goes over to Tokio's timer.
            self.unregister();
            return;
        }
        let new_tick = self.due_tick();
        if new_tick >= tick {
            return;
        }
        let mut shard = self.shard.lock();
        if shard.sleeps.is_fired(key) {
            // Already woken; the poll that follows decides.
            return;
        }
        let due_now = shard.sleeps.reschedule(key, new_tick);
        drop(shard);
        match due_now {
            Some(waker) => {
                self.shard.shared.release(1);
                waker.wake();
            }
            None => {
                self.state = State::Registered {
                    key,
                    tick: new_tick,
                };
                if let Err(why) = self.shard.shared.schedule(new_tick) {
                    self.unregister();
                    if why != NoDriver::ShutDown {
                        panic!("{}", why.message());
                    }
                }
            }
        }
    }

    /// First poll that is not yet due: link an entry.
    fn register(&mut self, reserved: bool, cx: &mut Context<'_>) -> Poll<()> {
        let shared = &self.shard.shared;
        if shared.is_shut_down() {
            self.unregister();
            return self.fall_back(cx);
        }
        if self.deadline <= self.now() {
            self.unregister();
            self.state = State::Elapsed;
            return Poll::Ready(());
        }
        let tick = self.due_tick();
        let waker = cx.waker().clone();
        let inserted = self.shard.lock().sleeps.insert(tick, waker);
        let (key, tick) = match inserted {
            Ok(key) => (key, tick),
            Err(waker) => {
                // The wheel has passed that tick. Normally the deadline has
                // passed since our clock read too; but if the wheel's clock
                // runs ahead of this one (a wheel built before a paused
                // runtime's clock started), trust our clock: wait for the next
                // tick, and `complete` checks the clock again then.
                if self.deadline <= self.now() {
                    drop(waker);
                    self.unregister();
                    self.state = State::Elapsed;
                    return Poll::Ready(());
                }
                let mut shard = self.shard.lock();
                let next = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
                let key = shard
                    .sleeps
                    .insert(next, waker)
                    .unwrap_or_else(|_| unreachable!("the tick after elapsed is accepted"));
                (key, next)
            }
        };
        if !reserved {
            self.shard.shared.charge();
        }
        self.state = State::Registered { key, tick };
        self.schedule(tick, cx)
    }

    fn poll_registered(&mut self, key: Key, tick: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.shard.shared.is_shut_down() {
            self.unregister();
            return self.fall_back(cx);
        }
        let mut new_waker = None;
        loop {
            let mut shard = self.shard.lock();
            let Some(registered) = shard.sleeps.value_mut(key) else {
                drop(shard);
                return self.complete(key, cx);
            };
            if registered.will_wake(cx.waker()) {
                break;
            }
            match new_waker.take() {
                Some(waker) => {
                    let old = std::mem::replace(registered, waker);
                    drop(shard);
                    drop(old);
                    break;
                }
                // Cloned outside the lock, then try again.
                None => {
                    drop(shard);
                    new_waker = Some(cx.waker().clone());
                }
            }
        }
        // Cheap when a driver runs; starts one if the last was stopped with
        // its runtime while this timer waited.
        self.schedule(tick, cx)
    }

    /// The entry has fired (and its place under the bound was given back).
    /// Only this `Sleep` touches a fired entry, so it stays as it is between
    /// locks. Completes if the deadline has passed by the clock; otherwise the
    /// entry fired for an earlier deadline (moved later by `reset`) or by a
    /// clock running ahead: re-arm it.
    fn complete(&mut self, key: Key, cx: &mut Context<'_>) -> Poll<()> {
        if self.deadline <= self.now() {
            let mut shard = self.shard.lock();
            let removed = shard.sleeps.remove(key);
            // The last of a fired burst gives its slab back here: the driver's
            // pass ran while fired entries still held it.
            shard.shrink_if_empty();
            drop(shard);
            debug_assert!(removed.is_none(), "completing a pending entry");
            self.state = State::Elapsed;
            return Poll::Ready(());
        }
        let waker = cx.waker().clone();
        let mut shard = self.shard.lock();
        let earliest = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
        let tick = self.due_tick().max(earliest);
        shard
            .sleeps
            .rearm(key, tick, waker)
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        drop(shard);
        self.shard.shared.charge();
        self.state = State::Registered { key, tick };
        self.schedule(tick, cx)
    }

    /// Tells the driver about `tick`, returning `Pending`. If no driver can be
    /// had: after a shutdown, goes over to Tokio's timer; otherwise
    /// unregisters and panics with a message naming the cause.
    fn schedule(&mut self, tick: u64, cx: &mut Context<'_>) -> Poll<()> {
        match self.shard.shared.schedule(tick) {
            Ok(()) => Poll::Pending,
            Err(NoDriver::ShutDown) => {
                self.unregister();
                self.fall_back(cx)
            }
            Err(why) => {
                self.unregister();
                panic!("{}", why.message());
            }
        }
    }

    /// Takes the entry out of the wheel (or gives back a reserved place),
    /// leaving the `Sleep` idle.
    fn unregister(&mut self) {
        match std::mem::replace(&mut self.state, State::Idle { reserved: false }) {
            State::Registered { key, .. } => {
                let mut shard = self.shard.lock();
                // The driver gives back a large empty slab on its next pass;
                // not done here, on the path of every cancel.
                let waker = shard.sleeps.remove(key);
                drop(shard);
                if waker.is_some() {
                    self.shard.shared.release(1);
                }
                // Dropped outside the lock: it may be the last reference to a
                // task whose other timers lock this shard as they drop.
                drop(waker);
            }
            State::Idle { reserved: true } => self.shard.shared.release(1),
            other => self.state = other,
        }
    }

    /// The wheel is shut down: continue on Tokio's own timer.
    fn fall_back(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let sleep = match self.shard.shared.runtime() {
            Some(handle) => {
                let _in_runtime = handle.enter();
                tokio::time::sleep_until(self.deadline())
            }
            None => tokio::time::sleep_until(self.deadline()),
        };
        let mut sleep = Box::pin(sleep);
        let poll = sleep.as_mut().poll(cx);
        self.state = State::Fallback(sleep);
        poll
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match &mut this.state {
            State::Elapsed => Poll::Ready(()),
            State::Fallback(sleep) => sleep.as_mut().poll(cx),
            State::Idle { reserved } => {
                let reserved = *reserved;
                this.register(reserved, cx)
            }
            State::Registered { key, tick } => {
                let (key, tick) = (*key, *tick);
                this.poll_registered(key, tick, cx)
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Idle { .. } => "idle",
            State::Registered { .. } => "registered",
            State::Elapsed => "elapsed",
            State::Fallback(_) => "on tokio::time (wheel shut down)",
        };
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("state", &state)
            .finish()
    }
}
