//! The `Sleep` future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::task::coop;
use tokio::time::Instant;

use crate::clock::MAX_TICK;
use crate::driver::{self, NoDriver, Shard};
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
/// last is the one woken; a poll with the same waker before the entry's tick
/// has fired takes no lock. Dropping a registered `Sleep` removes its entry at
/// once (O(1)): the overwhelmingly common fate of a timeout costs one lock of
/// the shard it registered in, not a wait for the driver.
///
/// `Sleep` is `Unpin`: no `Box::pin` or `pin!` is needed to poll it by
/// reference, e.g. `(&mut sleep).await` or in `tokio::select!`.
///
/// # Cooperative scheduling
///
/// Like `tokio::time::Sleep`, a `Sleep` takes part in Tokio's cooperative
/// budget (`tokio::task::coop`): completing takes a unit, and a poll made
/// when the task has none left yields. A loop of sleeps that are already due
/// (`sleep(Duration::ZERO)`, a deadline in the past, an interval catching up)
/// thus lets other tasks run every 128 completions instead of holding its
/// thread.
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

/// Where a `Sleep` waits. Variants of 24, 8 and 8 bytes that the compiler
/// packs into 24 (each box fits beside the shard pointer), so a `Sleep` is
/// 32 bytes; `size_of_sleep` checks it.
enum Inner {
    Wheel(OnWheel),
    /// The wheel cannot hold the deadline exactly (see
    /// `TickClock::offset_of`); Tokio's timer takes over at the first poll.
    OffWheel(Box<OffWheel>),
    /// The wheel was shut down, or could not hold the deadline; Tokio's timer
    /// took over.
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

/// A deadline the wheel cannot hold: about 292 years or more from its
/// origin (or a clock that far along). Saturating it would keep it pending
/// only until the clock saturates too, and then fire it early.
struct OffWheel {
    /// For the runtime to make the Tokio timer in, and to come back to the
    /// wheel if a reset brings the deadline within its range.
    shard: Arc<Shard>,
    at: Instant,
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
    /// tick `early` ticks before the deadline's: 0 but after a reset that
    /// left it where it was (see [`Sleep::reset`]); at a later one only if
    /// the wheel's clock ran ahead of the runtime's (see `register`), so the
    /// deadline's tick minus `early` is never after the entry's. `waker`: the
    /// registered waker's identity (`Shard::waker_id`; 0: unknown), so that a
    /// poll with the same waker before the entry's tick has fired needs no
    /// lock. Every transition that leaves the entry where it is keeps
    /// `early`.
    Registered { key: Key, early: u16, waker: usize },
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

    /// A sleep due at `at`, which the wheel cannot hold (see [`OffWheel`]).
    /// `reserved`: the place the caller took under the bound, given back
    /// here since the sleep will not be in the wheel.
    pub(crate) fn off_wheel(shard: Arc<Shard>, at: Instant, reserved: bool) -> Sleep {
        if reserved {
            shard.shared.release(1);
        }
        Sleep {
            deadline: 0,
            inner: Inner::OffWheel(Box::new(OffWheel { shard, at })),
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
            Inner::OffWheel(o) => o.at,
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
            Inner::OffWheel(_) => return false,
            Inner::Tokio(sleep) => return sleep.is_elapsed(),
        };
        match w.state {
            State::Idle { .. } => false,
            State::Elapsed => true,
            State::Registered { key, .. } => {
                let fired = w.shard.lock().sleeps.is_fired(key);
                fired && self.deadline <= w.now()
            }
        }
    }

    /// Moves the deadline, whether or not the `Sleep` has completed. A
    /// completed `Sleep` that is reset becomes pending again.
    ///
    /// A registered `Sleep` keeps the registered waker: the task waiting on
    /// it is woken for the new deadline even if it does not poll in between.
    ///
    /// - Earlier: its entry moves to the new deadline's tick, in O(1) under
    ///   its shard's lock. A deadline that has already passed completes on
    ///   the next poll.
    /// - Later, the idle-timeout case: while its entry is further from firing
    ///   than the distance it would move, it stays where it is and the reset
    ///   touches nothing but the `Sleep` (one clock read); otherwise it moves,
    ///   under the lock. A timeout pushed back on every frame thus moves its
    ///   entry about once per half its period, and the task is never woken
    ///   before it expires as long as resets keep coming. If they stop for
    ///   more than half the remaining time, the entry fires where it was
    ///   left: the task is woken, its poll finds the deadline not passed and
    ///   re-arms the entry (never early).
    /// - Within the same tick: nothing moves.
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
                if let Some(new) = w.shard.shared.clock.exact_offset_of(deadline) {
                    let old = std::mem::replace(&mut self.deadline, new);
                    w.reset(old, new);
                    return;
                }
                // The wheel cannot hold the new deadline: leave it. The task
                // that registered (maybe not this one) is woken to poll again
                // and wait on Tokio's timer.
                w.unregister_and_wake();
                let shard = w.shard.clone();
                self.inner = Inner::OffWheel(Box::new(OffWheel {
                    shard,
                    at: deadline,
                }));
            }
            Inner::OffWheel(o) => match o.shard.shared.clock.exact_offset_of(deadline) {
                Some(new) => {
                    self.deadline = new;
                    let shard = o.shard.clone();
                    self.inner = Inner::Wheel(OnWheel {
                        shard,
                        state: State::Idle {
                            reserved: false,
                            future: false,
                        },
                    });
                }
                None => o.at = deadline,
            },
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
            State::Registered { key, early, waker } => {
                let filed = self.tick_of(deadline).saturating_sub(u64::from(early));
                // Lock-free: see "Polling without the lock" in the driver's
                // docs. `schedule` still reads the shut-down flag.
                if self.shard.is_waker(waker, cx.waker()) && !self.shard.may_have_fired(filed) {
                    return self.schedule(filed, deadline);
                }
                self.poll_registered(deadline, key, early, cx)
            }
        }
    }

    /// The deadline moved from `old` to `new`.
    fn reset(&mut self, old: i64, new: i64) {
        let (key, early, waker) = match self.state {
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
            State::Registered { key, early, waker } => (key, early, waker),
        };
        if self.shard.shared.is_shut_down() {
            // The next poll goes over to Tokio's timer. Shutdown's scan of
            // this shard may come after this unregistration and miss the
            // entry, so wake its task here (it may be another than this).
            self.unregister_and_wake();
            return;
        }
        let new_tick = self.tick_of(new);
        let old_tick = self.tick_of(old);
        if new_tick == old_tick {
            // Same tick: the entry stays (an idle timeout reset several
            // times within one tick costs nothing more).
            return;
        }
        let filed = old_tick.saturating_sub(u64::from(early));
        if new_tick > old_tick {
            // Later: leave the entry where it is while it is further from
            // firing than the distance it would move, touching nothing but
            // this `Sleep` (an idle timeout pushed back on every frame moves
            // its entry about once per half its period). If it does come to
            // fire first (no reset for that long), its task is woken and the
            // poll re-arms the entry for the deadline.
            let now = self.shard.shared.clock.floor_offset(self.now());
            let distance = new_tick - filed;
            if filed.saturating_sub(now) > distance {
                if let Ok(early) = u16::try_from(distance) {
                    self.state = State::Registered { key, early, waker };
                    return;
                }
            }
        }
        let mut shard = self.shard.lock();
        if shard.sleeps.is_fired(key) {
            // It fired for the old deadline and no poll has seen it yet. The
            // next poll completes, if the new deadline has passed, or re-arms
            // the entry; it must take the lock to see that (the lock-free
            // check would take the new deadline's tick, not yet fired, for
            // the entry's).
            drop(shard);
            self.state = registered_as(key, 0);
            return;
        }
        // Moved in O(1), under the lock: the task is not woken at the old
        // tick, and the entry is linked at its deadline's tick again. A
        // deadline moved earlier may have passed already (one clock read,
        // only on this path): then it fires now and the next poll completes,
        // as with `tokio::time`, rather than at the driver's next pass.
        let due_now = if new_tick < old_tick && new <= self.now() {
            Some(shard.sleeps.fire_now(key))
        } else {
            shard.sleeps.reschedule(key, new_tick)
        };
        drop(shard);
        match due_now {
            Some(waker) => {
                // The new deadline has passed: the entry fired here,
                // not in the driver, so the next poll takes the lock to see
                // it (and completes, or re-arms if the wheel ran ahead of the
                // clock).
                self.shard.shared.release(1);
                self.state = registered_as(key, 0);
                // Maybe another task's waker: its panic stays with the wheel.
                driver::wake(waker);
            }
            // After the critical section: step (2) of "Shutdown" in the
            // driver's docs. The entry was linked before it too, but taking
            // it out below may come before shutdown's scan.
            None => {
                // Linked at the new deadline's tick, with the same waker.
                self.state = State::Registered {
                    key,
                    early: 0,
                    waker,
                };
                match self.shard.shared.schedule(new_tick) {
                    Ok(()) => {}
                    Err(NoDriver::ShutDown) => self.unregister_and_wake(),
                    Err(why) => {
                        self.unregister();
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
        let id = self.shard.waker_id(&waker);
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
        self.state = registered_as(key, id);
        // Reads the shut-down flag after the link: see `schedule`.
        self.schedule(tick, deadline)
    }

    /// A poll that takes the lock: the entry may have fired, or the waker
    /// changed. `early` as in `State::Registered`.
    fn poll_registered(
        &mut self,
        deadline: i64,
        key: Key,
        early: u16,
        cx: &mut Context<'_>,
    ) -> Step {
        if self.shard.shared.is_shut_down() {
            self.unregister();
            return self.fall_back(deadline);
        }
        let mut new_waker = None;
        loop {
            let mut shard = self.shard.lock();
            let Some(registered) = shard.sleeps.value_mut(key) else {
                // Fired (and its place under the bound given back). Only this
                // `Sleep` touches a fired entry. Done if the deadline has
                // passed by the clock, under this same lock.
                if deadline <= self.now() {
                    let removed = shard.sleeps.remove(key);
                    // The last of a fired burst gives its slab back here: the
                    // driver's pass ran while fired entries still held it.
                    shard.shrink_if_empty();
                    drop(shard);
                    debug_assert!(removed.is_none(), "completing a pending entry");
                    self.state = State::Elapsed;
                    return Step::Ready;
                }
                drop(shard);
                return self.rearm(deadline, key, cx);
            };
            if registered.will_wake(cx.waker()) {
                break;
            }
            match new_waker.take() {
                Some(waker) => {
                    let old = std::mem::replace(registered, waker);
                    drop(shard);
                    // The entry has not moved: keep `early`, or the
                    // lock-free poll would look for it at the deadline's
                    // tick while a reset left it earlier, and miss its fire.
                    self.state = State::Registered {
                        key,
                        early,
                        waker: self.shard.waker_id(cx.waker()),
                    };
                    // Another task's waker, maybe.
                    driver::drop_waker(old);
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
        // its runtime while this timer waited. It also reads the shut-down
        // flag after the waker swap: a shutdown that scanned this shard
        // before it woke the old waker, not this one (see `schedule`).
        let filed = self.tick_of(deadline).saturating_sub(u64::from(early));
        self.schedule(filed, deadline)
    }

    /// The entry fired, but the deadline has not passed by the clock: a reset
    /// moved it later after the entry fired, or the wheel's clock runs ahead
    /// of the runtime's (see `register`). Re-arm it.
    fn rearm(&mut self, deadline: i64, key: Key, cx: &mut Context<'_>) -> Step {
        let waker = cx.waker().clone();
        let id = self.shard.waker_id(&waker);
        let mut shard = self.shard.lock();
        let earliest = shard.sleeps.elapsed().saturating_add(1).min(MAX_TICK);
        let tick = self.tick_of(deadline).max(earliest);
        shard
            .sleeps
            .rearm(key, tick, waker)
            .unwrap_or_else(|_| unreachable!("the tick is after elapsed"));
        drop(shard);
        self.state = registered_as(key, id);
        self.shard.shared.charge();
        // Reads the shut-down flag after the re-arm: see `schedule`.
        self.schedule(tick, deadline)
    }

    /// Tells the driver about `tick`, returning `Pending`. If no driver can be
    /// had: after a shutdown, goes over to Tokio's timer; otherwise
    /// unregisters and panics with a message naming the cause.
    ///
    /// Every poll that links an entry or changes it (registration, re-arm,
    /// waker swap) ends here, after its critical section, and
    /// `Shared::schedule` reads the shut-down flag first: so either
    /// shutdown's scan of the shard saw the entry as it is now (and woke its
    /// waker), or the flag is seen here and the poll goes over to Tokio's
    /// timer itself. Checking the flag only before the lock would let a
    /// shutdown scan the shard in between and never wake the entry.
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
        if let Some(waker) = self.take_entry() {
            // Dropped outside the lock: it may be the last reference to a
            // task whose other timers lock this shard as they drop. It may be
            // another task's, whose code must not unwind through the wheel.
            driver::drop_waker(waker);
        }
    }

    /// [`unregister`](Self::unregister), waking the task that registered:
    /// for a reset that takes the entry out while that task waits on it.
    fn unregister_and_wake(&mut self) {
        if let Some(waker) = self.take_entry() {
            driver::wake(waker);
        }
    }

    /// `unregister`, returning the waker of a pending entry.
    fn take_entry(&mut self) -> Option<std::task::Waker> {
        match self.state {
            State::Registered { key, .. } => {
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
                waker
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
                None
            }
            State::Idle { .. } | State::Elapsed => None,
        }
    }

    /// The wheel is shut down: Tokio's own timer for the same deadline, for
    /// the caller to poll from now on.
    fn fall_back(&self, deadline: i64) -> Step {
        let at = self.shard.shared.clock.instant_at(deadline);
        Step::FallBack(tokio_sleep(&self.shard, at))
    }
}

/// The state of a `Sleep` registered under `key`, at its deadline's tick,
/// with the waker of `id` (`Shard::waker_id`; 0: unknown, take the lock).
fn registered_as(key: Key, id: usize) -> State {
    State::Registered {
        key,
        early: 0,
        waker: id,
    }
}

/// Tokio's timer for `at`, made in the wheel's runtime if it is bound to one.
fn tokio_sleep(shard: &Shard, at: Instant) -> Pin<Box<tokio::time::Sleep>> {
    let sleep = match shard.shared.runtime() {
        Some(handle) => {
            let _in_runtime = handle.enter();
            tokio::time::sleep_until(at)
        }
        None => tokio::time::sleep_until(at),
    };
    Box::pin(sleep)
}

impl Drop for OnWheel {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl Future for Sleep {
    type Output = ();

    /// Takes part in Tokio's cooperative budget where `tokio::time::Sleep`
    /// does: a poll on the wheel that completes takes a unit, and a poll
    /// made when the task has none left is `Pending` (the task yields, to be
    /// polled again soon). A sleep on Tokio's timer leaves the unit to it.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_timer(false, cx)
    }
}

impl Sleep {
    /// [`poll`](Future::poll); `free_if_used_up`: if the task has no budget
    /// left, poll outside the budget rather than yield (a `Timeout` whose
    /// future used up the budget).
    ///
    /// The budget is read first and a unit taken only on completion: a poll
    /// that registers (a timeout's, nearly always) reads it once and writes
    /// nothing, where taking a unit and giving it back would write twice.
    pub(crate) fn poll_timer(&mut self, free_if_used_up: bool, cx: &mut Context<'_>) -> Poll<()> {
        if !coop::has_budget_remaining() {
            return self.poll_without_budget(free_if_used_up, cx);
        }
        let w = match &mut self.inner {
            Inner::Tokio(sleep) => return sleep.as_mut().poll(cx),
            Inner::OffWheel(o) => {
                let sleep = tokio_sleep(&o.shard, o.at);
                return self.poll_fall_back(sleep, cx);
            }
            Inner::Wheel(w) => w,
        };
        match w.poll(self.deadline, cx) {
            Step::Ready => {
                // There was a unit left when the poll began, and nothing
                // since has used the budget.
                if let Poll::Ready(unit) = coop::poll_proceed(cx) {
                    unit.made_progress();
                }
                Poll::Ready(())
            }
            Step::Pending => Poll::Pending,
            // Tokio's timer takes its unit itself.
            Step::FallBack(sleep) => self.poll_fall_back(sleep, cx),
        }
    }

    /// [`poll_timer`](Self::poll_timer) when the task has no budget left.
    #[cold]
    #[inline(never)]
    fn poll_without_budget(&mut self, free: bool, cx: &mut Context<'_>) -> Poll<()> {
        if !free {
            // `Pending`, and Tokio wakes the task once it has yielded.
            drop(ready!(coop::poll_proceed(cx)));
            // A unit left after all (not expected: the same budget was just
            // read as used up) is given back, and the poll goes on below.
        }
        // The budget is unlimited inside.
        Pin::new(&mut coop::unconstrained(self)).poll(cx)
    }

    /// Goes over to Tokio's timer `sleep` (the wheel's side unregistered, or
    /// never registered) and polls it.
    fn poll_fall_back(
        &mut self,
        mut sleep: Pin<Box<tokio::time::Sleep>>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let poll = sleep.as_mut().poll(cx);
        self.inner = Inner::Tokio(sleep);
        poll
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
            Inner::OffWheel(_) => "idle (beyond the wheel's range: on tokio::time when polled)",
            Inner::Tokio(_) => "on tokio::time (wheel shut down, or beyond its range)",
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

    /// Under a third of tokio's `Sleep` (112), and half of the bytes a
    /// pending timer costs in all (the wheel's entry is 32): keep it so. It
    /// was 24 before it kept its waker's identity, which lets a poll with the
    /// same waker skip the shard's lock.
    #[test]
    fn size_of_sleep() {
        assert_eq!(std::mem::size_of::<Sleep>(), 32);
    }
}
