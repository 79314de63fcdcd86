//! The `Wheel` handle.

use std::cell::Cell;
use std::fmt;
use std::future::IntoFuture;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::clock::deadline_after;
use crate::driver::Shard;
use crate::{Builder, Sleep, Stats, Timeout};

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
/// A wheel reads the Tokio clock of the runtime it is used on: share one
/// wheel between runtimes only if they share a clock (no paused time).
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
    inner: Arc<Inner>,
}

struct Inner {
    /// Each its own allocation, so that timers of different threads bump
    /// different reference counts.
    shards: Box<[Arc<Shard>]>,
}

/// Hands each thread a shard index once; threads then keep to their shard.
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

fn thread_index() -> usize {
    THREAD_INDEX
        .try_with(|i| match i.get() {
            Some(i) => i,
            None => {
                let n = NEXT_THREAD.fetch_add(1, Relaxed);
                i.set(Some(n));
                n
            }
        })
        // A thread-local being torn down: any shard will do.
        .unwrap_or(0)
}

impl Wheel {
    /// A wheel with the defaults: 10 ms tick, 512 slots.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// assert_eq!(wheel.resolution(), Duration::from_millis(10));
    /// assert_eq!(wheel.slots(), 512);
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

    /// The default wheel of the current Tokio runtime: the one the free
    /// functions [`sleep`](crate::sleep), [`timeout`](crate::timeout) and
    /// friends use. Each runtime has its own (10 ms tick, 512 slots).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sleep = tokio_wheel::sleep(std::time::Duration::from_secs(1));
    /// let wheel = tokio_wheel::Wheel::current();
    /// assert_eq!(wheel.pending(), 0); // registers on first poll
    /// # drop(sleep);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[track_caller]
    pub fn current() -> Wheel {
        crate::default::with_current(Wheel::clone)
    }

    pub(crate) fn from_shards(shards: Box<[Arc<Shard>]>) -> Wheel {
        Wheel {
            inner: Arc::new(Inner { shards }),
        }
    }

    /// The shard this thread registers in.
    fn local_shard(&self) -> Arc<Shard> {
        let shards = &self.inner.shards;
        shards[thread_index() & (shards.len() - 1)].clone()
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
        self.sleep_until(deadline_after(Instant::now(), duration))
    }

    /// A future that completes at the wheel's first tick at or after
    /// `deadline`. A deadline already passed completes on the first poll
    /// without touching the wheel.
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
        Sleep::new(self.local_shard(), deadline)
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

    /// Timers registered and not yet fired or cancelled. A timer counts from
    /// its first pending poll until it fires or is dropped.
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
        self.inner.shards.iter().map(|s| s.lock().pending()).sum()
    }

    /// The tick: the granularity at which timers fire.
    pub fn resolution(&self) -> Duration {
        self.shared().tick
    }

    /// The number of slots in the ring, after rounding up to a power of two.
    pub fn slots(&self) -> usize {
        self.shared().slots
    }

    /// A snapshot of the wheel's counters.
    pub fn stats(&self) -> Stats {
        let t = self.shared().totals();
        Stats {
            pending: t.pending,
            registered: t.registered,
            fired: t.fired,
            cancelled: t.cancelled,
            driver_wakeups: t.driver_wakeups,
            driver_starts: t.driver_starts,
        }
    }

    fn shared(&self) -> &crate::driver::Shared {
        &self.inner.shards[0].shared
    }

    /// A handle that does not keep the wheel alive.
    pub(crate) fn downgrade(&self) -> WeakWheel {
        WeakWheel(Arc::downgrade(&self.inner))
    }
}

/// A [`Wheel`] that may be gone.
pub(crate) struct WeakWheel(Weak<Inner>);

impl WeakWheel {
    pub(crate) fn upgrade(&self) -> Option<Wheel> {
        self.0.upgrade().map(|inner| Wheel { inner })
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel::new()
    }
}

impl fmt::Debug for Wheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("tick", &self.resolution())
            .field("slots", &self.slots())
            .field("shards", &self.inner.shards.len())
            .finish_non_exhaustive()
    }
}
