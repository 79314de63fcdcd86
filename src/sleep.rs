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
    /// The deadline as nanoseconds from the wheel's origin (see
    /// `TickClock::offset_of`): half the size of an `Instant`.
    deadline: i64,
    inner: Inner,
}

/// Where a `Sleep` waits. Two variants of 16 and 8 bytes that the compiler
/// packs into 16 (the `Tokio` box fits beside the shard pointer), so a
/// `Sleep` is 24 bytes; `size_of_sleep` checks it.
enum Inner {
    Wheel(OnWheel),
    /// The wheel was shut down; Tokio's timer took over.
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

/// A `Sleep` on its wheel: the shard it registers in and its state there.
/// Dropping it cancels the entry.
struct OnWheel {
    shard: Arc<Shard>,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Not in the wheel: never polled, reset, or due at the first poll.
    /// `reserved`: holds a place under `Builder::max_pending` (made by a
    /// `try_` constructor), which the entry takes over on registration.
    /// `future`: the clock, read when the `Sleep` was made, was before the
    /// deadline, so the first poll registers without reading it again.
    Idle { reserved: bool, future: bool },
    /// In the wheel under `key`. The entry is linked at (or fired from) the
    /// deadline's tick, or an earlier one if the deadline was moved later
    /// since: the entry then fires early for it and the next poll re-arms it
    /// (see [`Sleep::reset`]).
    Registered { key: Key },
    /// Completed.
    Elapsed,
}

/// What a poll on the wheel came to.
enum Step {
    Ready,
    Pending,
    /// The wheel is shut down: continue on this Tokio timer.
    FallBack(Pin<Box<tokio::time::Sleep>>),
}

impl Sleep {
    /// A sleep due at `deadline`, an offset from the wheel's origin. `future`:
    /// the caller read the clock and it was before `deadline`.
    pub(crate) fn new(shard: Arc<Shard>, deadline: i64, reserved: bool, future: bool) -> Sleep {
        Sleep {
            deadline,
            inner: Inner::Wheel(OnWheel {
                shard,
                state: State::Idle { reserved, future },
            }),
        }
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
        match &self.inner {
            Inner::Wheel(w) => w.shard.shared.clock.instant_at(self.deadline),
            Inner::Tokio(sleep) => sleep.deadline(),
        }
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
        let w = match &self.inner {
            Inner::Wheel(w) => w,
            Inner::Tokio(sleep) => return sleep.is_elapsed(),
        };
        match w.state {
            State::Idle { .. } => false,
            State::Elapsed => true,
            State::Registered { key } => {
                let fired = w.shard.lock().sleeps.is_fired(key);
                fired && self.deadline <= w.now()
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
        match &mut self.inner {
            Inner::Tokio(sleep) => sleep.as_mut().reset(deadline),
            Inner::Wheel(w) => {
                let new = w.shard.shared.clock.offset_of(deadline);
                let old = std::mem::replace(&mut self.deadline, new);
                w.reset(old, new);
            }
        }
    }
}

impl OnWheel {
    /// The clock, in the same units as a deadline.
    fn now(&self) -> i64 {
        self.shard.shared.clock.offset_of(Instant::now())
    }

    fn tick_of(&self, deadline: i64) -> u64 {
        self.shard.shared.clock.ceil_offset(deadline)
    }

    fn poll(&mut self, deadline: i64, cx: &mut Context<'_>) -> Step {
        match self.state {
            State::Elapsed => Step::Ready,
            State::Idle { reserved, future } => self.register(deadline, reserved, future, cx),
            State::Registered { key } => self.poll_registered(deadline, key, cx),
        }
    }

    /// The deadline moved from `old` to `new`.
    fn reset(&mut self, old: i64, new: i64) {
        let key = match self.state {
            State::Idle { reserved, .. } => {
                // The clock read at creation says nothing of the new deadline.
                self.state = State::Idle {
                    reserved,
                    future: false,
                };
                return;
            }
            State::Elapsed => {
                self.state = State::Idle {
                    reserved: false,
                    future: false,
                };
                return;
            }
            State::Registered { key } => key,
        };
        if self.shard.shared.is_shut_down() {
            // The next poll goes over to Tokio's timer.
            self.unregister();
            return;
        }
        // The entry is linked at or before the old deadline's tick (later
        // only if the wheel's clock ran ahead, and then no earlier tick can
        // fire). So a deadline no earlier than that tick needs no move: the
        // entry fires first and the next poll re-arms it.
        let new_tick = self.tick_of(new);
        if new_tick >= self.tick_of(old) {
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
    fn register(
        &mut self,
        deadline: i64,
        reserved: bool,
        future: bool,
        cx: &mut Context<'_>,
    ) -> Step {
        if self.shard.shared.is_shut_down() {
            self.unregister();
            return self.fall_back(deadline);
        }
        // A sleep made with a duration was checked against the clock when it
        // was made; one that fell due since then is linked all the same and
        // completes at the driver's next pass, never early (as tokio::time
        // does). That saves a clock read on every registration.
        if !future && deadline <= self.now() {
            self.unregister();
            self.state = State::Elapsed;
            return Step::Ready;
        }
        let tick = self.tick_of(deadline);
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
                if deadline <= self.now() {
                    drop(waker);
                    self.unregister();
                    self.state = State::Elapsed;
                    return Step::Ready;
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
        self.state = State::Registered { key };
        self.schedule(tick, deadline)
    }

    fn poll_registered(&mut self, deadline: i64, key: Key, cx: &mut Context<'_>) -> Step {
        if self.shard.shared.is_shut_down() {
            self.unregister();
            return self.fall_back(deadline);
        }
        let mut new_waker = None;
        loop {
            let mut shard = self.shard.lock();
            let Some(registered) = shard.sleeps.value_mut(key) else {
                drop(shard);
                return self.complete(deadline, key, cx);
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
        // its runtime while this timer waited. The entry's tick may be
        // earlier than the deadline's (see `State::Registered`), but a
        // running driver never plans past a pending entry, and a new one
        // makes its first pass at once.
        self.schedule(self.tick_of(deadline), deadline)
    }

    /// The entry has fired (and its place under the bound was given back).
    /// Only this `Sleep` touches a fired entry, so it stays as it is between
    /// locks. Completes if the deadline has passed by the clock; otherwise the
    /// entry fired for an earlier deadline (moved later by `reset`) or by a
    /// clock running ahead: re-arm it.
    fn complete(&mut self, deadline: i64, key: Key, cx: &mut Context<'_>) -> Step {
        if deadline <= self.now() {
            let mut shard = self.shard.lock();
            let removed = shard.sleeps.remove(key);
            // The last of a fired burst gives its slab back here: the driver's
            // pass ran while fired entries still held it.
            shard.shrink_if_empty();
            drop(shard);
            debug_assert!(removed.is_none(), "completing a pending entry");
            self.state = State::Elapsed;
            return Step::Ready;
        }
        let waker = cx.waker().clone();
        let mut shard = self.shard.lock();
        let earliest = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
        let tick = self.tick_of(deadline).max(earliest);
        shard
            .sleeps
            .rearm(key, tick, waker)
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        drop(shard);
        self.shard.shared.charge();
        self.schedule(tick, deadline)
    }

    /// Tells the driver about `tick`, returning `Pending`. If no driver can be
    /// had: after a shutdown, goes over to Tokio's timer; otherwise
    /// unregisters and panics with a message naming the cause.
    fn schedule(&mut self, tick: u64, deadline: i64) -> Step {
        match self.shard.shared.schedule(tick) {
            Ok(()) => Step::Pending,
            Err(NoDriver::ShutDown) => {
                self.unregister();
                self.fall_back(deadline)
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
        match self.state {
            State::Registered { key } => {
                self.state = State::Idle {
                    reserved: false,
                    future: false,
                };
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
            State::Idle {
                reserved: true,
                future,
            } => {
                self.state = State::Idle {
                    reserved: false,
                    future,
                };
                self.shard.shared.release(1);
            }
            State::Idle { .. } | State::Elapsed => {}
        }
    }

    /// The wheel is shut down: Tokio's own timer for the same deadline, for
    /// the caller to poll from now on.
    fn fall_back(&self, deadline: i64) -> Step {
        let at = self.shard.shared.clock.instant_at(deadline);
        let sleep = match self.shard.shared.runtime() {
            Some(handle) => {
                let _in_runtime = handle.enter();
                tokio::time::sleep_until(at)
            }
            None => tokio::time::sleep_until(at),
        };
        Step::FallBack(Box::pin(sleep))
    }
}

impl Drop for OnWheel {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let step = match &mut this.inner {
            Inner::Tokio(sleep) => return sleep.as_mut().poll(cx),
            Inner::Wheel(w) => w.poll(this.deadline, cx),
        };
        match step {
            Step::Ready => Poll::Ready(()),
            Step::Pending => Poll::Pending,
            Step::FallBack(mut sleep) => {
                let poll = sleep.as_mut().poll(cx);
                // Drops the wheel's side, already unregistered.
                this.inner = Inner::Tokio(sleep);
                poll
            }
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.inner {
            Inner::Wheel(w) => match w.state {
                State::Idle { .. } => "idle",
                State::Registered { .. } => "registered",
                State::Elapsed => "elapsed",
            },
            Inner::Tokio(_) => "on tokio::time (wheel shut down)",
        };
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("state", &state)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Sleep;

    /// Half of tokio's `Sleep` and a third of the bytes a pending timer
    /// costs in all (the wheel's entry is 32): keep it so.
    #[test]
    fn size_of_sleep() {
        assert_eq!(std::mem::size_of::<Sleep>(), 24);
    }
}
