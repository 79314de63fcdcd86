//! The `Sleep` future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::task::coop;
use tokio::time::Instant;

use crate::driver::{Shard, SleepEntry, Step};
use crate::interval::Schedule;

/// A future that completes at the first tick of its wheel at or after a
/// deadline.
///
/// Made by [`Wheel::sleep`](crate::Wheel::sleep),
/// [`Wheel::sleep_until`](crate::Wheel::sleep_until) or the free functions
/// [`sleep`](fn@crate::sleep) and [`sleep_until`](crate::sleep_until).
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
/// # The first poll
///
/// A `Sleep` made from an instant that has passed by its first poll
/// (`sleep_until`, `timeout_at`, an [`Interval`](crate::Interval)'s ticks)
/// or with a zero duration (`sleep(Duration::ZERO)`,
/// `timeout(Duration::ZERO, ..)` of a pending future) never registers, and
/// its first poll returns what `tokio::time::Sleep`'s would:
///
/// - On a live clock, if the deadline passed less than a millisecond before
///   that poll, the poll wakes the task and returns `Pending`, and the next
///   poll completes: a yield, with no lock and no wait for a tick. Tokio
///   rounds a deadline up to its next millisecond and fires it at its
///   driver's next turn, so its sleep is pending there too. In a biased
///   `select!`, a branch that is ready at once thus wins the first round
///   against a zero sleep or an interval's first tick listed before it,
///   with either timer. An older deadline completes on the first poll, as
///   tokio's does once its driver has run since it passed.
/// - With paused time, the first poll completes, as tokio's does: its driver
///   has processed every move of the paused clock before the task runs.
///
/// One made with a non-zero duration whose deadline passes between creation
/// and the first poll registers, and completes at its tick.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// // Due at once: one trip through the scheduler on a live clock, then done.
/// tokio_wheel::sleep(Duration::ZERO).await;
/// # }
/// ```
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
    on: SleepOn,
}

/// Where a `Sleep` waits. Variants of 32, 8 and 8 bytes that the compiler
/// packs into 32 (each box fits beside the shard pointer), so a `Sleep` is
/// 40 bytes; `size_of_sleep` checks it.
enum SleepOn {
    Wheel(SleepEntry),
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

impl Sleep {
    /// A sleep due at `deadline`, an offset from the wheel's origin. `future`:
    /// the caller read the clock and it was before `deadline`.
    pub(crate) fn new(shard: Arc<Shard>, deadline: i64, reserved: bool, future: bool) -> Sleep {
        Sleep {
            deadline,
            on: SleepOn::Wheel(SleepEntry::new(shard, reserved, future)),
        }
    }

    /// A sleep due at `at`, which the wheel cannot hold (see [`OffWheel`]).
    /// `reserved`: the place the caller took under the bound, given back
    /// here since the sleep will not be in the wheel.
    pub(crate) fn off_wheel(shard: Arc<Shard>, at: Instant, reserved: bool) -> Sleep {
        if reserved {
            shard.core.release(1);
        }
        Sleep {
            deadline: 0,
            on: SleepOn::OffWheel(Box::new(OffWheel { shard, at })),
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
        match &self.on {
            SleepOn::Wheel(w) => w.core().clock.instant_at(self.deadline),
            SleepOn::OffWheel(o) => o.at,
            SleepOn::Tokio(sleep) => sleep.deadline(),
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
        match &self.on {
            SleepOn::Wheel(w) => w.is_elapsed(self.deadline),
            SleepOn::OffWheel(_) => false,
            SleepOn::Tokio(sleep) => sleep.is_elapsed(),
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
    /// - Later, the idle-timeout case: its entry stays where it is, and the
    ///   wheel's driver, when it gets there, files the entry again for the
    ///   new deadline without waking the task (as `tokio::time`'s driver
    ///   does). The first such reset of a registered `Sleep` takes the lock
    ///   once, to put the deadline in a slot its shard keeps for the entry
    ///   (no allocation of its own: slots come in pages of 16);
    ///   every later one is a single atomic store, with no lock and no clock
    ///   read. A timeout pushed back on every frame thus moves its entry
    ///   about once per wait, in the driver, and its task is woken once, when
    ///   it expires. (Should a reset race the driver as it reaches the entry,
    ///   the task may be woken at the old deadline instead: its poll finds
    ///   the deadline not passed and waits on, never early; `Stats::rearmed`
    ///   counts these.)
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
        self.reset_to(deadline, false);
    }

    /// After an interval's `Sleep` completed: moves it to the next tick as
    /// `schedule` says, returning the instant of the tick it completed. On
    /// the wheel, a tick delivered on time is worked out in the wheel's
    /// offsets, without building an `Instant` for the next deadline and
    /// converting it back; the next poll registers it without reading the
    /// clock again (see [`reset_after_reading`](Self::reset_after_reading)).
    #[inline]
    pub(crate) fn next_period(&mut self, schedule: &Schedule) -> Instant {
        let now = Instant::now();
        if let SleepOn::Wheel(w) = &mut self.on {
            let clock = w.core().clock;
            let reading = clock.offset_of(now);
            if let Some(next) = schedule.next_on_time(self.deadline, reading, &clock) {
                let old = std::mem::replace(&mut self.deadline, next);
                w.reset(old, next, next > reading);
                return clock.instant_at(old);
            }
        }
        let due = self.deadline();
        self.reset_after_reading(schedule.next(due, now, self.resolution()), now);
        due
    }

    /// The tick of the timer this `Sleep` is on: its wheel's, or Tokio's
    /// once Tokio's timer took over.
    fn resolution(&self) -> Duration {
        match &self.on {
            SleepOn::Wheel(w) => w.core().tick,
            SleepOn::OffWheel(off) => off.shard.core.tick,
            SleepOn::Tokio(_) => TOKIO_TICK,
        }
    }

    /// [`reset`](Self::reset), by a caller that read the clock at `now`
    /// (an interval, for its next tick): a deadline after `now` then
    /// registers without reading the clock again, as a `Sleep` made with a
    /// duration does (see `State::Idle` in `entry.rs`).
    pub(crate) fn reset_after_reading(&mut self, deadline: Instant, now: Instant) {
        self.reset_to(deadline, deadline > now);
    }

    /// `future`: the clock was read before `deadline` (as in
    /// [`reset_after_reading`](Self::reset_after_reading)).
    fn reset_to(&mut self, deadline: Instant, future: bool) {
        match &mut self.on {
            SleepOn::Tokio(sleep) => sleep.as_mut().reset(deadline),
            SleepOn::Wheel(w) => {
                if let Some(new) = w.core().clock.exact_offset_of(deadline) {
                    let old = std::mem::replace(&mut self.deadline, new);
                    w.reset(old, new, future);
                    return;
                }
                // The wheel cannot hold the new deadline: leave it. The task
                // that registered (maybe not this one) is woken to poll again
                // and wait on Tokio's timer.
                w.leave();
                let shard = w.shard().clone();
                self.on = SleepOn::OffWheel(Box::new(OffWheel {
                    shard,
                    at: deadline,
                }));
            }
            SleepOn::OffWheel(o) => match o.shard.core.clock.exact_offset_of(deadline) {
                Some(new) => {
                    self.deadline = new;
                    let shard = o.shard.clone();
                    self.on = SleepOn::Wheel(SleepEntry::new(shard, false, future));
                }
                None => o.at = deadline,
            },
        }
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
        self.poll_keeping(free_if_used_up, false, cx)
    }

    /// An interval's poll: [`poll`](Future::poll), but a tick found fired
    /// completes without the shard's lock, and the fired entry stays for
    /// the next tick to link again (see "Completing without the lock" in
    /// `entry.rs`). Inline, as `next_period` is: `Interval::poll_tick` is
    /// in another codegen unit, and a call to each cost a tick 45
    /// instructions.
    #[inline]
    pub(crate) fn poll_periodic(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_keeping(false, true, cx)
    }

    /// [`poll_timer`](Self::poll_timer); `keep`: an interval's poll, which
    /// may complete without its shard's lock, keeping its fired entry for
    /// the next tick (see "Completing without the lock" in `entry.rs`).
    /// Inline: `poll_timer` and `Interval::poll_tick` are each the only
    /// caller with their `keep`.
    #[inline(always)]
    fn poll_keeping(
        &mut self,
        free_if_used_up: bool,
        keep: bool,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        if !coop::has_budget_remaining() {
            return self.poll_without_budget(free_if_used_up, cx);
        }
        let w = match &mut self.on {
            SleepOn::Tokio(sleep) => return sleep.as_mut().poll(cx),
            SleepOn::OffWheel(o) => {
                let sleep = tokio_sleep(o.shard.core.runtime(), o.at);
                return self.poll_fall_back(sleep, cx);
            }
            SleepOn::Wheel(w) => w,
        };
        match w.poll(self.deadline, keep, cx) {
            Step::Due if yields_when_due(w.core().clock.instant_at(self.deadline)) => {
                // Done in the wheel; complete on the next poll, as tokio's
                // would at its driver's next turn.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Step::Ready | Step::Due => {
                // There was a unit left when the poll began, and nothing
                // since has used the budget.
                if let Poll::Ready(unit) = coop::poll_proceed(cx) {
                    unit.made_progress();
                }
                Poll::Ready(())
            }
            Step::Pending => Poll::Pending,
            // Tokio's timer takes its unit itself.
            Step::FallBack(at) => {
                let sleep = tokio_sleep(w.core().runtime(), at);
                self.poll_fall_back(sleep, cx)
            }
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
        self.on = SleepOn::Tokio(sleep);
        poll
    }
}

/// The resolution of Tokio's timer, which rounds deadlines up to it.
const TOKIO_TICK: Duration = Duration::from_millis(1);

/// Whether a `Sleep` found due at its first poll (see "The first poll" in
/// its docs) yields once instead of completing: on a live clock, when its
/// deadline passed less than [`TOKIO_TICK`] ago.
///
/// `tokio::time::Sleep` completes its first poll only if Tokio's driver has
/// already processed the deadline's millisecond (rounded up); otherwise it
/// fires the timer at its next turn. The driver processes the clock when a
/// worker parks, so on a live clock a deadline of the current millisecond is
/// never processed yet, and an older one is as soon as the driver has run
/// since (which this cannot see: it takes the usual case). With paused
/// time, the driver processes every move of the clock before the task runs
/// again, so a due first poll completes.
///
/// On a live clock, `tokio::time::Instant::now` is the system's monotonic
/// clock itself, so it falls between two reads of that clock; a paused
/// clock stands still (or moves by `advance` and auto-advance), so it does
/// not, but by a coincidence of nanoseconds. A clock resumed after a pause
/// runs at an offset from the system's and is taken for paused: its due
/// sleeps complete at the first poll.
#[cold]
#[inline(never)]
fn yields_when_due(deadline: Instant) -> bool {
    let before = std::time::Instant::now();
    let now = Instant::now();
    let after = std::time::Instant::now();
    let live = (before..=after).contains(&now.into_std());
    // Outside a runtime (a wheel bound to one, polled elsewhere) there is no
    // Tokio timer to behave like: complete.
    live && now.saturating_duration_since(deadline) < TOKIO_TICK && Handle::try_current().is_ok()
}

/// Tokio's timer for `at`, made in the wheel's runtime if it is bound to one.
fn tokio_sleep(runtime: Option<&Handle>, at: Instant) -> Pin<Box<tokio::time::Sleep>> {
    let sleep = match runtime {
        Some(handle) => {
            let _in_runtime = handle.enter();
            tokio::time::sleep_until(at)
        }
        None => tokio::time::sleep_until(at),
    };
    Box::pin(sleep)
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.on {
            SleepOn::Wheel(w) => w.describe(),
            SleepOn::OffWheel(_) => "idle (beyond the wheel's range: on tokio::time when polled)",
            SleepOn::Tokio(_) => "on tokio::time (wheel shut down, or beyond its range)",
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

    /// Under half of tokio's `Sleep` (112): keep it so. It was 24 before it
    /// kept its waker's identity, which lets a poll with the same waker skip
    /// the shard's lock, and 32 before a `Sleep` whose deadline was pushed
    /// back kept that identity and the last `filed` of its slot itself (the
    /// slot no longer keeps the identity: 16 bytes smaller), which spares
    /// its poll on every frame the load of a line outside the task; and 48
    /// while it kept that `filed` whole, not as three bytes below its
    /// deadline's tick (see `Filed` in `driver/entry.rs`).
    #[test]
    fn size_of_sleep() {
        assert_eq!(std::mem::size_of::<Sleep>(), 40);
    }
}
