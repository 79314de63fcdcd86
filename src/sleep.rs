//! The `Sleep` future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;

use crate::clock::MAX_TICK;
use crate::driver::Shard;
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
/// # Panics
///
/// Polling panics if the wheel's driver must be started (it stops whenever
/// nothing is pending) and cannot be: there is no Tokio runtime on this thread
/// and the wheel is not bound to one ([`Builder::runtime`](crate::Builder::runtime)),
/// the runtime is shutting down, or it was built without time enabled.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    shard: Arc<Shard>,
    deadline: Instant,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not in the wheel: never polled, reset, or due at the first poll.
    Idle,
    /// In the wheel under `key`, linked at (or fired from) `tick`. The
    /// deadline may have been moved later since: the entry then fires early
    /// for it and the next poll re-arms it (see [`Sleep::reset`]).
    Registered { key: Key, tick: u64 },
    /// Completed.
    Elapsed,
}

impl Sleep {
    pub(crate) fn new(shard: Arc<Shard>, deadline: Instant) -> Sleep {
        Sleep {
            shard,
            deadline,
            state: State::Idle,
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
        self.deadline
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
        match self.state {
            State::Idle => false,
            State::Elapsed => true,
            State::Registered { key, .. } => {
                let fired = self.shard.lock().is_fired(key);
                fired && self.deadline <= Instant::now()
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
        self.deadline = deadline;
        match self.state {
            State::Idle => {}
            State::Elapsed => self.state = State::Idle,
            State::Registered { key, tick } => {
                let new_tick = self.shard.shared.clock.ceil(deadline);
                if new_tick >= tick {
                    return;
                }
                let mut wheel = self.shard.lock();
                if wheel.is_fired(key) {
                    // Already woken; the poll that follows decides.
                    return;
                }
                let due_now = wheel.reschedule(key, new_tick);
                drop(wheel);
                match due_now {
                    Some(waker) => waker.wake(),
                    None => {
                        self.state = State::Registered {
                            key,
                            tick: new_tick,
                        };
                        self.schedule(key, new_tick);
                    }
                }
            }
        }
    }

    /// First poll that is not yet due: link an entry.
    fn register(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.deadline <= Instant::now() {
            self.state = State::Elapsed;
            return Poll::Ready(());
        }
        let tick = self.shard.shared.clock.ceil(self.deadline);
        let waker = cx.waker().clone();
        let inserted = self.shard.lock().insert(tick, waker);
        let (key, tick) = match inserted {
            Ok(key) => (key, tick),
            Err(waker) => {
                // The wheel has passed that tick. Normally the deadline has
                // passed since our clock read too; but if the wheel's clock
                // runs ahead of this one (a wheel built before a paused
                // runtime's clock started), trust our clock: wait for the next
                // tick, and `complete` checks the clock again then.
                if self.deadline <= Instant::now() {
                    drop(waker);
                    self.state = State::Elapsed;
                    return Poll::Ready(());
                }
                let mut wheel = self.shard.lock();
                let next = wheel.elapsed().saturating_add(1).min(MAX_TICK);
                let key = wheel
                    .insert(next, waker)
                    .unwrap_or_else(|_| unreachable!("the tick after elapsed is accepted"));
                (key, next)
            }
        };
        self.state = State::Registered { key, tick };
        self.schedule(key, tick);
        Poll::Pending
    }

    fn poll_registered(&mut self, key: Key, tick: u64, cx: &mut Context<'_>) -> Poll<()> {
        let mut new_waker = None;
        loop {
            let mut wheel = self.shard.lock();
            let Some(registered) = wheel.value_mut(key) else {
                drop(wheel);
                return self.complete(key, cx);
            };
            if registered.will_wake(cx.waker()) {
                break;
            }
            match new_waker.take() {
                Some(waker) => {
                    let old = std::mem::replace(registered, waker);
                    drop(wheel);
                    drop(old);
                    break;
                }
                // Cloned outside the lock, then try again.
                None => {
                    drop(wheel);
                    new_waker = Some(cx.waker().clone());
                }
            }
        }
        // Cheap when a driver runs; starts one if the last was stopped with
        // its runtime while this timer waited.
        self.schedule(key, tick);
        Poll::Pending
    }

    /// The entry has fired. Only this `Sleep` touches a fired entry, so it
    /// stays as it is between locks. Completes if the deadline has passed by
    /// the clock; otherwise the entry fired for an earlier deadline (moved
    /// later by `reset`) or by a clock running ahead: re-arm it.
    fn complete(&mut self, key: Key, cx: &mut Context<'_>) -> Poll<()> {
        if self.deadline <= Instant::now() {
            let removed = self.shard.lock().remove(key);
            debug_assert!(removed.is_none(), "completing a pending entry");
            self.state = State::Elapsed;
            return Poll::Ready(());
        }
        let waker = cx.waker().clone();
        let mut wheel = self.shard.lock();
        let earliest = wheel.elapsed().saturating_add(1).min(MAX_TICK);
        let tick = self.shard.shared.clock.ceil(self.deadline).max(earliest);
        wheel
            .rearm(key, tick, waker)
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        drop(wheel);
        self.state = State::Registered { key, tick };
        self.schedule(key, tick);
        Poll::Pending
    }

    /// Tells the driver about `tick`; if no driver can be had, unregisters
    /// and panics with a message naming the cause.
    fn schedule(&mut self, key: Key, tick: u64) {
        if let Err(why) = self.shard.shared.schedule(tick) {
            let removed = self.shard.lock().remove(key);
            drop(removed);
            self.state = State::Idle;
            panic!("{}", why.message());
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match this.state {
            State::Elapsed => Poll::Ready(()),
            State::Idle => this.register(cx),
            State::Registered { key, tick } => this.poll_registered(key, tick, cx),
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let State::Registered { key, .. } = self.state {
            let mut wheel = self.shard.lock();
            let waker = wheel.remove(key);
            wheel.shrink_if_empty();
            drop(wheel);
            // Dropped outside the lock: it may be the last reference to a
            // task whose other timers lock this shard as they drop.
            drop(waker);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Idle => "idle",
            State::Registered { .. } => "registered",
            State::Elapsed => "elapsed",
        };
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("state", &state)
            .finish()
    }
}
