//! Configuration of a [`Wheel`].

use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::driver::{Config, WheelCore};
use crate::error::BuildError;
use crate::Wheel;

/// The default tick: 10 ms.
pub(crate) const DEFAULT_TICK: Duration = Duration::from_millis(10);
/// The default number of slots of a revolution: 64 (640 ms at the default
/// tick), so that a level-1 slot, which moves down to the lowest level
/// during the revolution before its own, holds at most 640 ms worth of
/// timers (see `Builder::slots`).
pub(crate) const DEFAULT_SLOTS: usize = 64;
/// The shortest tick: the resolution of the Tokio timer that drives the wheel.
pub(crate) const MIN_TICK: Duration = Duration::from_millis(1);
/// The longest tick: `u64::MAX` nanoseconds.
const LONGEST_TICK: Duration = Duration::from_nanos(u64::MAX);
/// The most slots the lowest level may have. Levels above it cover the rest,
/// so more would cost memory (allocated up front, in every shard) and buy
/// little.
pub(crate) const MAX_SLOTS: usize = 1 << 16;
/// The most shards a wheel may have.
pub(crate) const MAX_SHARDS: usize = 1 << 10;
/// The most shards the default shard count gives.
const MAX_DEFAULT_SHARDS: usize = 64;
/// The most slots of a revolution summed over the shards (each shard
/// allocates its own up front, two revolutions of them): 32 MiB of list
/// heads.
pub(crate) const MAX_TOTAL_SLOTS: usize = 1 << 22;

// The default shard count allows every slot count.
const _: () = assert!(MAX_DEFAULT_SHARDS * MAX_SLOTS <= MAX_TOTAL_SLOTS);
// `tick * slots` fits in a `Duration` for every tick and slot count accepted.
const _: () = assert!((LONGEST_TICK.as_secs() + 1)
    .checked_mul(MAX_SLOTS as u64)
    .is_some());

/// Configures and builds a [`Wheel`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::builder()
///     .tick(Duration::from_millis(100))
///     .slots(500) // rounded up to 512
///     .build()?;
/// assert_eq!(wheel.resolution(), Duration::from_millis(100));
/// assert_eq!(wheel.slots(), 512);
/// # Ok::<(), tokio_wheel::error::BuildError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    tick: Duration,
    slots: usize,
    shards: Option<usize>,
    runtime: Option<Handle>,
    max_pending: Option<usize>,
    max_wakeups_per_tick: Option<usize>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder with the defaults: a 10 ms tick, 64 slots, and a shard
    /// count fitted to the machine. The same as [`Wheel::builder`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::Builder;
    ///
    /// let wheel = Builder::new().build()?;
    /// assert_eq!(wheel.resolution(), Duration::from_millis(10));
    /// assert_eq!(wheel.slots(), 64);
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn new() -> Self {
        Builder {
            tick: DEFAULT_TICK,
            slots: DEFAULT_SLOTS,
            shards: None,
            runtime: None,
            max_pending: None,
            max_wakeups_per_tick: None,
        }
    }

    /// The resolution: timers fire at the first multiple of it at or after
    /// their deadline, never before. At least 1 ms, the resolution of the
    /// Tokio timer that drives the wheel (whose own latency of about a
    /// millisecond comes on top); default 10 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::{error::BuildError, Wheel};
    ///
    /// let wheel = Wheel::builder().tick(Duration::from_millis(5)).build()?;
    /// assert_eq!(wheel.resolution(), Duration::from_millis(5));
    ///
    /// // Finer than Tokio's own timer: an error naming the value.
    /// let err = Wheel::builder().tick(Duration::from_micros(100)).build().unwrap_err();
    /// assert!(matches!(err, BuildError::TickTooShort { .. }));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// How many slots the lowest level of the wheel has, rounded up to a
    /// power of two; 1 to 65536 (2^16), default 64.
    ///
    /// The wheel is hierarchical. A *revolution* is `slots` ticks (640 ms at
    /// the defaults), and the lowest level, level 0, has a slot of one tick
    /// for each tick of the revolution the wheel's position is in and of the
    /// next: a timer due in those sits there until it fires and never moves.
    /// Above it come coarser levels: level 1 has 512 slots of a revolution
    /// each (327.68 s at the defaults), and each level above has 64 slots, a
    /// slot of level `L >= 2` spanning `slots * 512 * 64^(L-2)` ticks, as
    /// many levels as it takes to cover every tick a `u64` counts: `2 +
    /// ceil((55 - log2(slots)) / 6)`, 11 at the default 64. A timer sits at
    /// the lowest level whose span
    /// holds its distance from the wheel's position, and moves down at most
    /// `levels - 1` times in its life; it still fires at the first tick at or
    /// after its deadline, however far out that is.
    ///
    /// A revolution's timers move down to level 0 during the revolution
    /// before it, a slot's worth of level 1 (`tick * slots` worth of
    /// deadlines), moved by the driver between ticks, 4096 a shard at a
    /// time, with the shard's lock let go and the runtime given a turn in
    /// between: the ticks of their revolution do not wait for them (a
    /// registration brings the driver back for it). So more slots keep more
    /// timers at level 0, where they never move, but make each of those
    /// moves bigger:
    /// with 100k connections' heartbeats due every 10 s, 512 slots (5.12 s a
    /// level-1 slot) moved ~50k timers at a time and raised a server's p99
    /// request latency around those moves from about 1-2 ms to 5-9 ms,
    /// against 64 slots (`benches/idle_server`, measured when a move was
    /// made in one go, before the first tick of its revolution), for the
    /// same CPU. Every shard allocates its levels up front: about 12 KiB at
    /// the default 64 (mostly the upper levels), 8 bytes more per slot, so
    /// 537 KiB at 65536 (twice that in a shard that has held callbacks,
    /// which get a wheel of their own). So `slots` times the shard count may
    /// be at most 2^22 (see [`shards`](Builder::shards)).
    ///
    /// ```
    /// use tokio_wheel::Wheel;
    ///
    /// // Keeps timers due in this revolution of 512 ticks or the next at
    /// // level 0, for bursts of them.
    /// let wheel = Wheel::builder().slots(500).build()?;
    /// assert_eq!(wheel.slots(), 512); // rounded up to a power of two
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// How many independently locked shards the wheel has, rounded up to a
    /// power of two; 1 to 1024. Each thread registers its timers in one
    /// shard, so threads rarely contend. Default: twice the machine's
    /// parallelism, rounded up to a power of two, at most 64.
    ///
    /// Each shard allocates its own levels up front (about 12 KiB at the
    /// default 64 [`slots`](Builder::slots), most of it the upper levels),
    /// and its lowest level grows with `slots`, so the two, after rounding,
    /// may multiply to at most 2^22 (4,194,304 slots, 32 MiB of list heads):
    /// 1024 shards of 4096 slots, or 64 shards of 65536. The default shard
    /// count allows any slot count.
    ///
    /// ```
    /// use tokio_wheel::Wheel;
    ///
    /// // One lock for every thread: fine for a current-thread runtime.
    /// let wheel = Wheel::builder().shards(1).build()?;
    ///
    /// // 1024 shards of 65536 slots each would allocate too much up front.
    /// assert!(Wheel::builder().shards(1024).slots(65536).build().is_err());
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Bounds the timers pending at once, so a flood of registrations cannot
    /// exhaust memory. At least 1; default: no bound.
    ///
    /// This is Netty's `maxPendingTimeouts`, except for one value: Netty reads
    /// 0 (or less) as "no bound", while here `max_pending(0)` is an error at
    /// [`build`](Builder::build)
    /// ([`BuildError::ZeroMaxPending`])
    /// rather than a wheel that refuses every timer or a silent change of
    /// meaning. For no bound, do not call this.
    ///
    /// At the bound, [`Wheel::schedule`](crate::Wheel::schedule) and friends
    /// and the `try_` constructors ([`Wheel::try_sleep`](crate::Wheel::try_sleep),
    /// [`Wheel::try_timeout`](crate::Wheel::try_timeout), ...) return
    /// [`Rejected`](crate::error::Rejected) naming the bound; a `try_` timer
    /// holds its place from creation until it fires or is dropped. The
    /// infallible [`sleep`](crate::Wheel::sleep) and
    /// [`timeout`](crate::Wheel::timeout) are never refused and never dropped:
    /// they count when they register and may take the wheel past its bound,
    /// after which the fallible calls are refused until enough timers fire or
    /// are cancelled. Places come back as timers fire or are cancelled.
    ///
    /// A bound costs one shared atomic operation per registration and per
    /// release; an unbounded wheel pays nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::builder().max_pending(2).build()?;
    /// let a = wheel.try_sleep(Duration::from_secs(1))?;
    /// let b = wheel.try_sleep(Duration::from_secs(1))?;
    /// assert!(wheel.try_sleep(Duration::from_secs(1)).is_err());
    /// drop(a);
    /// assert!(wheel.try_sleep(Duration::from_secs(1)).is_ok());
    /// # drop(b);
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = Some(max);
        self
    }

    /// Smooths bursts: after waking this many timers (or starting this many
    /// callbacks) the driver yields to the runtime before going on, so that
    /// the poll that delivers a tick's timers does not hold its worker for
    /// long. Nothing is dropped, delayed past later ticks' timers, or fired
    /// early: the rest of the tick follows as soon as the runtime polls the
    /// driver again. At least 1; default: no cap.
    ///
    /// Keep it well under the 256 tasks of a Tokio worker's local run queue.
    /// A larger batch overflows that queue into the runtime's global one, and
    /// the yielded driver, like any task woken meanwhile, then waits behind
    /// every task woken so far. With 100k timers due per tick on two workers
    /// (`cargo run --release -p benches --example compare -- --only 3`), a 1 ms ticker
    /// task waited up to 12-16 ms with no cap and 12-14 ms with a cap of 64,
    /// but 110-570 ms with a cap of 256, 1024 or 4096.
    ///
    /// A small cap trades CPU for the latency of the other tasks. Each yield
    /// lets the worker run the tasks just woken and check the runtime's
    /// global queue, but it also lets the worker park and poll its I/O
    /// driver before the driver task runs again. Two measurements:
    ///
    /// - **A server with a heartbeat per connection.** 100k connections, each
    ///   with a 10 s `interval`, on two workers: each tick wakes about a
    ///   hundred tasks. A cap of 8 lowered the p99 latency of the other
    ///   connections' requests by about a third in six runs, and made no
    ///   clear difference in four later ones. Server CPU changed by -2% to
    ///   +20% from run to run (median +4%).
    /// - **Many short sleeps.** 2000 tasks sleep 50 ms in a loop, about 330
    ///   wake-ups a tick. A cap of 16 made each completed sleep cost 1.4x to
    ///   1.6x the CPU it costs with no cap, and 1.4x tokio's. A cap of 8
    ///   yields twice as often again.
    ///
    /// Hence no cap by default. The free functions' default wheels have
    /// none; build a wheel with a cap for the timers whose bursts you want
    /// smoothed.
    ///
    /// The cap paces live runtimes only. On paused time a tick's batch of at
    /// most 4096 is woken in one go, so that `tokio::time::advance` still
    /// returns with every due timer woken.
    ///
    /// ```
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::builder().max_wakeups_per_tick(64).build()?;
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn max_wakeups_per_tick(mut self, n: usize) -> Self {
        self.max_wakeups_per_tick = Some(n);
        self
    }

    /// Runs the wheel's driver on this runtime, always.
    ///
    /// By default the driver starts on whichever runtime polls a timer while
    /// no driver runs, which suits a wheel used on one runtime, or on
    /// runtimes built one after another. A wheel shared by runtimes that live
    /// side by side should be bound to one that keeps running (a multi-thread
    /// runtime, say): a driver that lands on a current-thread runtime that is
    /// not inside `block_on` does not run, and no timer of the wheel fires
    /// meanwhile. A bound wheel's timers can also be polled outside any
    /// runtime, by another executor; they fire by the bound runtime's clock.
    /// If the bound runtime shuts down, polling a pending timer panics, as a
    /// `tokio::time::Sleep` of that runtime does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let rt = tokio::runtime::Runtime::new()?;
    /// let wheel = Wheel::builder().runtime(rt.handle().clone()).build()?;
    /// // No runtime on this thread: another executor drives the future, the
    /// // wheel's driver runs on `rt`.
    /// futures::executor::block_on(wheel.sleep(Duration::from_millis(20)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Builds the wheel. Its ticks count from the current time of the Tokio
    /// clock (paused or not), so build it on the runtime whose clock it will
    /// use: a wheel built before a paused runtime starts reads ahead of that
    /// runtime's clock, and its timers, while never early, fire late. It can
    /// be built outside any runtime: the driver task starts lazily, on the
    /// first timer that needs it.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the value and the limit if the tick is under
    /// 1 ms or over `u64::MAX` nanoseconds, the slot count is 0 or over 2^16,
    /// the shard count is 0 or over 1024, slots times shards (after rounding)
    /// is over 2^22, or `max_pending` or `max_wakeups_per_tick` is 0.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::{error::BuildError, Wheel};
    ///
    /// // Outside any runtime: the driver starts with the first timer.
    /// let wheel = Wheel::builder().tick(Duration::from_millis(20)).build()?;
    /// assert_eq!(wheel.pending(), 0);
    ///
    /// let err = Wheel::builder().slots(0).build().unwrap_err();
    /// println!("{err}"); // names the value and the limit
    /// assert!(matches!(err, BuildError::Slots { slots: 0, .. }));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn build(&self) -> Result<Wheel, BuildError> {
        let tick = self.tick;
        if tick < MIN_TICK {
            return Err(BuildError::TickTooShort {
                tick,
                min: MIN_TICK,
            });
        }
        if tick > LONGEST_TICK {
            return Err(BuildError::TickTooLong {
                tick,
                max: LONGEST_TICK,
            });
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(BuildError::Slots {
                slots: self.slots,
                max: MAX_SLOTS,
            });
        }
        let slots = self.slots.next_power_of_two();
        let shards = match self.shards {
            Some(n) if n == 0 || n > MAX_SHARDS => {
                return Err(BuildError::Shards {
                    shards: n,
                    max: MAX_SHARDS,
                })
            }
            Some(n) => n.next_power_of_two(),
            None => default_shards(),
        };
        // Both are powers of two of at most 2^16 and 2^10: no overflow.
        if slots * shards > MAX_TOTAL_SLOTS {
            return Err(BuildError::TotalSlots {
                slots,
                shards,
                max: MAX_TOTAL_SLOTS,
            });
        }
        if self.max_pending == Some(0) {
            return Err(BuildError::ZeroMaxPending);
        }
        if self.max_wakeups_per_tick == Some(0) {
            return Err(BuildError::ZeroWakeupsPerTick);
        }
        let shards = WheelCore::new_shards(Config {
            origin: Instant::now(),
            tick,
            slots,
            shards,
            runtime: self.runtime.clone(),
            max_pending: self.max_pending,
            max_wakeups_per_tick: self.max_wakeups_per_tick,
        });
        Ok(Wheel::from_shards(shards))
    }
}

fn default_shards() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus * 2).next_power_of_two().min(MAX_DEFAULT_SHARDS)
}

// Here rather than in `handle.rs`, which then need not know the builder.
impl Wheel {
    /// A wheel with the defaults: 10 ms tick, 64 slots at its lowest level.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// assert_eq!(wheel.resolution(), Duration::from_millis(10));
    /// assert_eq!(wheel.slots(), 64);
    /// ```
    pub fn new() -> Wheel {
        Builder::new()
            .build()
            .expect("the default settings are valid")
    }

    /// A [`Builder`] to configure a wheel.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().tick(Duration::from_millis(1)).build()?;
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel::new()
    }
}
