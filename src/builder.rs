//! Configuration of a [`Wheel`].

use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;

use crate::driver::Shared;
use crate::error::BuildError;
use crate::Wheel;

/// The default tick: 10 ms.
pub(crate) const DEFAULT_TICK: Duration = Duration::from_millis(10);
/// The default number of slots: 512 (a 5.12 s ring at the default tick).
pub(crate) const DEFAULT_SLOTS: usize = 512;
/// The shortest tick: the resolution of the Tokio timer that drives the wheel.
pub(crate) const MIN_TICK: Duration = Duration::from_millis(1);
/// The most slots a wheel may have.
pub(crate) const MAX_SLOTS: usize = 1 << 30;
/// The most shards a wheel may have.
pub(crate) const MAX_SHARDS: usize = 1 << 10;

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
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder with the defaults: a 10 ms tick, 512 slots, and a shard
    /// count fitted to the machine.
    pub fn new() -> Self {
        Builder {
            tick: DEFAULT_TICK,
            slots: DEFAULT_SLOTS,
            shards: None,
            runtime: None,
        }
    }

    /// The resolution: timers fire at the first multiple of it at or after
    /// their deadline, never before. At least 1 ms, the resolution of the
    /// Tokio timer that drives the wheel (whose own latency of about a
    /// millisecond comes on top); default 10 ms.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// How many slots the ring has, rounded up to a power of two; 1 to 2^30,
    /// default 512.
    ///
    /// Timers further out than `tick * slots` are fine: they stay in their
    /// slot until the ring comes round to their tick. More slots make each
    /// tick's list shorter when many long timers are pending.
    pub fn slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// How many independently locked shards the wheel has, rounded up to a
    /// power of two; 1 to 1024. Each thread registers its timers in one
    /// shard, so threads rarely contend. Default: twice the machine's
    /// parallelism, rounded up to a power of two, at most 64.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
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
    /// runtime, by another executor. If the bound runtime shuts down, polling
    /// a pending timer panics, as a `tokio::time::Sleep` of that runtime does.
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
    /// 1 ms or over `u64::MAX` nanoseconds, the slot count is 0 or over 2^30,
    /// `tick * slots` overflows a `Duration`, or the shard count is 0 or over
    /// 1024.
    pub fn build(&self) -> Result<Wheel, BuildError> {
        let tick = self.tick;
        if tick < MIN_TICK {
            return Err(BuildError::TickTooShort {
                tick,
                min: MIN_TICK,
            });
        }
        let max_tick = Duration::from_nanos(u64::MAX);
        if tick > max_tick {
            return Err(BuildError::TickTooLong {
                tick,
                max: max_tick,
            });
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(BuildError::Slots {
                slots: self.slots,
                max: MAX_SLOTS,
            });
        }
        let slots = self.slots.next_power_of_two();
        let span = u32::try_from(slots).ok().and_then(|n| tick.checked_mul(n));
        if span.is_none() {
            return Err(BuildError::SpanOverflow { tick, slots });
        }
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
        let shards = Shared::make_shards(Instant::now(), tick, slots, shards, self.runtime.clone());
        Ok(Wheel::from_shards(shards))
    }
}

fn default_shards() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus * 2).next_power_of_two().min(64)
}
