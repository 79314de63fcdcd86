//! A snapshot of a wheel's counters.

use std::time::Duration;

/// Counters of one wheel since it was built, read by
/// [`Wheel::stats`](crate::Wheel::stats).
///
/// Kept under the shard locks that the timers take anyway, and in relaxed
/// atomics in the driver, so they cost next to nothing to maintain. A
/// snapshot sums the shards one after another, so under concurrent use it is
/// not one instant's picture; each field is exact on its own once quiet.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let wheel = tokio_wheel::Wheel::new();
/// wheel.sleep(Duration::from_millis(30)).await;
/// let stats = wheel.stats();
/// assert_eq!((stats.registered, stats.fired, stats.pending), (1, 1, 0));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Timers registered and neither fired nor cancelled.
    pub pending: usize,
    /// Timers ever registered: a timer counts once from its first pending
    /// poll, however often it is reset (a never-polled or instantly due timer
    /// never is). A completed sleep that is reset and polled again is a new
    /// timer.
    pub registered: u64,
    /// Timers fired by the wheel: their deadline came.
    pub fired: u64,
    /// Times a timer's entry fired and its poll found the deadline ahead,
    /// so it was linked again for it: the `Sleep` was reset to a later
    /// deadline after its entry fired and before the poll (a `select!` loop
    /// that handles a frame first), a reset to a later deadline raced the
    /// driver as it reached the entry (see
    /// [`Sleep::reset`](crate::Sleep::reset)), or the deadline lies at or
    /// before the wheel's origin and the wheel's clock ran ahead of the
    /// runtime's (see [`Builder::build`](crate::Builder::build)). Counted
    /// neither in `registered` nor in `fired`.
    pub rearmed: u64,
    /// Times the driver reached a timer's entry after its deadline had been
    /// pushed back, and filed it again for the new deadline without waking
    /// its task (see [`Sleep::reset`](crate::Sleep::reset)): about once per
    /// wait of an idle timeout that is reset on every frame, however many
    /// frames there were.
    pub refiled: u64,
    /// Registered timers dropped before they fired.
    pub cancelled: u64,
    /// Times a timer moved down a level of the wheel as its deadline came
    /// near (see [`Builder::slots`](crate::Builder::slots)): at most
    /// `levels - 1` per deadline a timer is filed for (a deadline pushed
    /// back is filed again, see `refiled`), and none for a timer due in the
    /// wheel's current or next revolution (`tick * slots` each). A timer's
    /// slot reached and filed again further out counts here too.
    pub cascades: u64,
    /// Times the driver task woke up (started, timed or notified).
    pub driver_wakeups: u64,
    /// Times a driver task was started: the first registration after the
    /// wheel went idle starts one, and it stops when nothing is pending.
    pub driver_starts: u64,
    /// Ticks the driver visited because something might be due in them, or
    /// to move the timers of the next revolution down to the lowest level
    /// ahead of time (see [`Builder::slots`](crate::Builder::slots)).
    pub ticks: u64,
    /// Ticks the driver passed over without visiting, because it knew them
    /// empty: the saving over a wheel that ticks every tick.
    pub ticks_skipped: u64,
    /// The most timers woken (and callbacks started) for one tick.
    pub max_batch: u64,
    /// How late the driver ran the last tick it fired: from the tick's instant
    /// to the driver's clock reading (taken as its pass began, or again as
    /// the tick fired if it waited for a cascade in steps). Normally under a
    /// millisecond or two (the Tokio timer it sleeps on); more means the
    /// runtime is busy.
    pub last_lag: Duration,
    /// The largest such lag seen.
    pub max_lag: Duration,
}
