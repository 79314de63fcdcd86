//! Periodic ticks on a wheel: the shape of `tokio::time::Interval`.

use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::time::{Instant, MissedTickBehavior};

use crate::clock::{deadline_after, TickClock};
use crate::Sleep;

/// How long after its instant a tick may be delivered before it counts as
/// missed, beyond one tick of the timer delivering it (rounding up to the
/// wheel's tick is normal, not missing): the slack Tokio allows its own 1 ms
/// timer.
const MISSED_SLACK: Duration = Duration::from_nanos(MISSED_SLACK_NANOS);
const MISSED_SLACK_NANOS: u64 = 5_000_000;

/// [`MISSED_SLACK`] beyond one tick of `resolution`.
fn missed_after(resolution: Duration) -> Duration {
    resolution.saturating_add(MISSED_SLACK)
}

/// The next tick after one due at `due` and delivered (late) at `now`, for
/// each of tokio's `MissedTickBehavior`s (re-exported by the crate, so code
/// that names tokio's type keeps compiling after the switch).
fn next_after_miss(
    behavior: MissedTickBehavior,
    due: Instant,
    now: Instant,
    period: Duration,
) -> Instant {
    match behavior {
        MissedTickBehavior::Burst => deadline_after(due, period),
        MissedTickBehavior::Delay => deadline_after(now, period),
        MissedTickBehavior::Skip => {
            let behind = (now - due).as_nanos() % period.as_nanos();
            // `behind` < `period`, which is a `Duration`, so it fits.
            let behind = Duration::from_nanos(u64::try_from(behind).unwrap_or(u64::MAX));
            deadline_after(now, period - behind)
        }
    }
}

/// An interval's rule for its next tick: `period` after the last one's
/// instant, unless the last was missed, then as its `MissedTickBehavior`
/// says. A tick counts as missed when it is delivered more than one tick of
/// the timer delivering it (the wheel's; Tokio's 1 ms once Tokio's timer
/// took over, after a shutdown or for a deadline beyond the wheel's range)
/// plus 5 ms after its instant: a wheel rounds every deadline up to its next
/// tick, and that is not a miss.
///
/// 16 bytes, so that an [`Interval`] is 56 (tokio's is 32, with its 112-byte
/// `Sleep` boxed apart): the period is kept as its parts, because a
/// `Duration`'s padding would leave the behavior a word of its own, and the
/// slack is not kept at all: the `Sleep` knows its timer's tick.
#[derive(Clone, Copy)]
pub(crate) struct Schedule {
    /// The period's whole seconds, and its nanoseconds under a second.
    secs: u64,
    nanos: u32,
    behavior: MissedTickBehavior,
}

impl Schedule {
    /// Every `period`.
    fn new(period: Duration) -> Schedule {
        Schedule {
            secs: period.as_secs(),
            nanos: period.subsec_nanos(),
            behavior: MissedTickBehavior::default(),
        }
    }

    fn period(&self) -> Duration {
        // `nanos` < 10^9: no carry, no panic.
        Duration::new(self.secs, self.nanos)
    }

    /// The tick after one due at `due` and delivered at `now` by a timer
    /// whose tick is `resolution`.
    pub(crate) fn next(&self, due: Instant, now: Instant, resolution: Duration) -> Instant {
        if now.saturating_duration_since(due) > missed_after(resolution) {
            next_after_miss(self.behavior, due, now, self.period())
        } else {
            deadline_after(due, self.period())
        }
    }

    /// [`next`](Self::next) for a tick delivered on time by the wheel of
    /// `clock`, in its offsets (`due` exact, `now` a reading), without
    /// building an `Instant`: `None` if the tick was missed or the next one
    /// cannot be held exactly, for the caller to use `next`.
    pub(crate) fn next_on_time(&self, due: i64, now: i64, clock: &TickClock) -> Option<i64> {
        let slack = clock.tick_nanos().saturating_add(MISSED_SLACK_NANOS);
        let slack = i64::try_from(slack).unwrap_or(i64::MAX);
        if now.saturating_sub(due) > slack {
            return None;
        }
        clock.offset_after(due, self.period())
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schedule")
            .field("period", &self.period())
            .field("behavior", &self.behavior)
            .finish()
    }
}

/// Ticks every `period`, on a wheel: made by
/// [`Wheel::interval`](crate::Wheel::interval),
/// [`Wheel::interval_at`](crate::Wheel::interval_at), or the free functions
/// [`interval`](fn@crate::interval) and [`interval_at`](crate::interval_at).
///
/// Each tick completes at the first tick of the wheel at or after its
/// instant, never before, and yields that instant (the schedule's, not the
/// moment it was delivered). A period shorter than the wheel's tick delivers
/// ticks in bursts; use `tokio::time::interval` for fine periods.
///
/// It is `Unpin` and a [`Stream`] of tick instants.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use futures::StreamExt;
///
/// let wheel = tokio_wheel::Wheel::new();
/// let start = tokio::time::Instant::now();
/// let ticks: Vec<_> = wheel.interval(Duration::from_secs(1)).take(3).collect().await;
/// assert_eq!(ticks, [start, start + Duration::from_secs(1), start + Duration::from_secs(2)]);
/// # }
/// ```
#[derive(Debug)]
pub struct Interval {
    delay: Sleep,
    schedule: Schedule,
}

impl Interval {
    #[track_caller]
    pub(crate) fn new(delay: Sleep, period: Duration) -> Interval {
        assert!(period > Duration::ZERO, "`period` must be non-zero.");
        Interval {
            delay,
            schedule: Schedule::new(period),
        }
    }

    /// Completes at the next tick and returns its instant. The first tick is
    /// due at once (at `start`, for [`interval_at`](crate::interval_at)): as
    /// with `tokio::time::Interval`, its first poll completes with paused
    /// time, and on a live clock returns `Pending` once, having woken the
    /// task, and completes on the next poll (see "The first poll" in
    /// [`Sleep`]'s docs), so that a `select!` branch that is ready at once
    /// wins the first round against it.
    ///
    /// Cancel safe: dropping the future before it completes loses no tick.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let start = Instant::now();
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(50));
    /// assert_eq!(interval.tick().await, start);
    /// assert_eq!(interval.tick().await, start + Duration::from_millis(50));
    /// # }
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick; see [`tick`](Interval::tick). When it returns
    /// `Pending`, the waker of `cx` is woken at the next tick. For types that
    /// implement `Future` or `Stream` by hand around an interval.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::task::Poll;
    /// use std::time::Duration;
    ///
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(50));
    /// interval.tick().await;
    /// // Not due yet: pending, with the task's waker registered.
    /// poll_fn(|cx| {
    ///     assert!(interval.poll_tick(cx).is_pending());
    ///     Poll::Ready(())
    /// })
    /// .await;
    /// // Due 50 ms later.
    /// poll_fn(|cx| interval.poll_tick(cx)).await;
    /// # }
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        ready!(self.delay.poll_periodic(cx));
        Poll::Ready(self.delay.next_period(&self.schedule))
    }

    /// Starts the schedule over: the next tick is one `period` from now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(100));
    /// interval.tick().await;
    /// tokio::time::sleep(Duration::from_millis(30)).await;
    /// interval.reset();
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now + Duration::from_millis(100));
    /// # }
    /// ```
    pub fn reset(&mut self) {
        self.reset_after(self.schedule.period());
    }

    /// Starts the schedule over: the next tick is now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let mut interval = tokio_wheel::interval(Duration::from_secs(10));
    /// interval.tick().await;
    /// interval.reset_immediately(); // e.g. a peer asked for a heartbeat now
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now);
    /// assert_eq!(interval.tick().await, now + Duration::from_secs(10));
    /// # }
    /// ```
    pub fn reset_immediately(&mut self) {
        self.delay.reset(Instant::now());
    }

    /// Starts the schedule over: the next tick is `after` from now, then every
    /// `period` after it (as `tokio::time::Interval::reset_after`). A duration
    /// too long to add to the clock is taken as about 30 years.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(100));
    /// interval.tick().await;
    /// interval.reset_after(Duration::from_millis(30));
    /// let now = Instant::now();
    /// assert_eq!(interval.tick().await, now + Duration::from_millis(30));
    /// assert_eq!(interval.tick().await, now + Duration::from_millis(130));
    /// # }
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        let now = Instant::now();
        self.delay
            .reset_after_reading(deadline_after(now, after), now);
    }

    /// Starts the schedule over: the next tick is at `deadline`, then every
    /// `period` after it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(100));
    /// interval.tick().await;
    /// let at = Instant::now() + Duration::from_millis(250);
    /// interval.reset_at(at);
    /// assert_eq!(interval.tick().await, at);
    /// assert_eq!(interval.tick().await, at + Duration::from_millis(100));
    /// # }
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.delay.reset(deadline);
    }

    /// The period between ticks.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let interval = tokio_wheel::interval(Duration::from_secs(1));
    /// assert_eq!(interval.period(), Duration::from_secs(1));
    /// # }
    /// ```
    pub fn period(&self) -> Duration {
        self.schedule.period()
    }

    /// What the interval does when ticks are missed: [`Burst`] unless
    /// [set](Interval::set_missed_tick_behavior) otherwise.
    ///
    /// [`Burst`]: MissedTickBehavior::Burst
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::MissedTickBehavior;
    ///
    /// let interval = tokio_wheel::interval(Duration::from_secs(1));
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// # }
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.schedule.behavior
    }

    /// Sets what the interval does when ticks are missed (a tick is missed
    /// when it is delivered more than one wheel tick plus 5 ms late, or, once
    /// Tokio's timer took over, after a shutdown or for a deadline beyond the
    /// wheel's range, 1 ms plus 5 ms):
    /// `Burst` catches up at once, `Delay` restarts the schedule from the late
    /// tick, `Skip` goes on with the next tick still ahead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    /// use tokio_wheel::MissedTickBehavior;
    ///
    /// let start = Instant::now();
    /// let mut interval = tokio_wheel::interval(Duration::from_millis(100));
    /// interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// interval.tick().await;
    /// // Busy for 250 ms: the ticks due at 100 and 200 ms are missed.
    /// tokio::time::sleep(Duration::from_millis(250)).await;
    /// assert_eq!(interval.tick().await, start + Duration::from_millis(100)); // at once
    /// // Delay: the next one is a period after that late tick, not at 200 ms.
    /// assert_eq!(interval.tick().await, start + Duration::from_millis(350));
    /// # }
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.schedule.behavior = behavior;
    }
}

impl Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::Interval;

    /// A `Sleep` (40 bytes) and its 16-byte schedule; tokio's `Interval` is
    /// 32 bytes with its 112-byte `Sleep` boxed apart. It was 88 while the
    /// schedule kept its slack and a whole `Duration`, and 64 with a
    /// 48-byte `Sleep`.
    #[test]
    fn size_of_interval() {
        assert_eq!(std::mem::size_of::<Interval>(), 56);
    }
}
