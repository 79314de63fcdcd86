//! Errors returned by the wheel.
//!
//! - [`Elapsed`]: a [`Timeout`](crate::Timeout)'s deadline passed first.
//! - [`BuildError`]: a [`Builder`](crate::Builder) setting out of range.
//! - [`Rejected`]: a timer or callback refused at the
//!   [`max_pending`](crate::Builder::max_pending) bound or after
//!   [`shutdown`](crate::Wheel::shutdown); a refused callback comes back.
//! - [`InsertError`]: the same for a value given to an
//!   [`ExpiryQueue`](crate::ExpiryQueue), which comes back.
//! - [`StaleKey`]: an `ExpiryQueue` key whose value is gone.
//! - [`TryCurrentError`]: no Tokio runtime, so no default wheel, for
//!   [`Wheel::try_current`](crate::Wheel::try_current).
//!
//! Each implements [`std::error::Error`] and is `Send + Sync` (an
//! `InsertError<T>` when `T` is), so `?` turns it into a
//! `Box<dyn Error + Send + Sync>` (or an `anyhow::Error`), from a spawned
//! task too:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//! use tokio_wheel::Wheel;
//!
//! async fn run() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
//!     let wheel = Wheel::builder().max_pending(100).build()?; // BuildError
//!     let sleep = wheel.try_sleep(Duration::from_millis(10))?; // Rejected
//!     sleep.await;
//!     Ok(wheel.timeout(Duration::from_secs(1), async { 7 }).await?) // Elapsed
//! }
//! assert_eq!(tokio::spawn(run()).await.unwrap().unwrap(), 7);
//! # }
//! ```

use std::fmt;
use std::time::Duration;

/// The deadline of a [`Timeout`](crate::Timeout) passed before its future
/// completed.
///
/// Converts into [`std::io::Error`] of kind
/// [`TimedOut`](std::io::ErrorKind::TimedOut), so it works with `?` in code
/// that returns I/O errors; the `io::Error` is the same as
/// `tokio::time::error::Elapsed` makes (the bare kind, no inner error).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let never = std::future::pending::<()>();
/// let err = tokio_wheel::timeout(Duration::from_millis(50), never).await.unwrap_err();
/// assert_eq!(err.to_string(), "deadline has elapsed");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed(());

impl Elapsed {
    pub(crate) fn new() -> Self {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> Self {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// A [`Builder`](crate::Builder) setting that cannot make a working wheel.
///
/// Each variant carries the value it was given and the limit it broke, and the
/// message says both.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokio_wheel::{error::BuildError, Wheel};
///
/// let err = Wheel::builder().slots(0).build().unwrap_err();
/// assert!(matches!(err, BuildError::Slots { slots: 0, .. }));
/// assert_eq!(
///     err.to_string(),
///     "slots is 0, but must be between 1 and 65536 (2^16)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The tick is shorter than the 1 ms resolution of the Tokio timer that
    /// drives the wheel (zero included).
    TickTooShort {
        /// The tick that was asked for.
        tick: Duration,
        /// The shortest tick accepted.
        min: Duration,
    },
    /// The tick does not fit in 64 bits of nanoseconds (about 584 years).
    TickTooLong {
        /// The tick that was asked for.
        tick: Duration,
        /// The longest tick accepted.
        max: Duration,
    },
    /// The slot count is zero or above the maximum.
    Slots {
        /// The slot count that was asked for.
        slots: usize,
        /// The largest slot count accepted.
        max: usize,
    },
    /// The slot count times the shard count, after rounding both up to powers
    /// of two, is above the maximum: every shard allocates its slots up front.
    TotalSlots {
        /// The slot count after rounding.
        slots: usize,
        /// The shard count after rounding.
        shards: usize,
        /// The largest product accepted.
        max: usize,
    },
    /// `max_pending` is zero. A wheel that refuses every timer is never what
    /// is meant, and unlike Netty's `maxPendingTimeouts`, 0 does not mean "no
    /// bound": for no bound, leave `max_pending` unset.
    ZeroMaxPending,
    /// `max_wakeups_per_tick` is zero.
    ZeroWakeupsPerTick,
    /// The shard count is zero or above the maximum.
    Shards {
        /// The shard count that was asked for.
        shards: usize,
        /// The largest shard count accepted.
        max: usize,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TickTooShort { tick, min } => write!(
                f,
                "tick is {tick:?}, but must be at least {min:?} \
                 (the resolution of the Tokio timer that drives the wheel)"
            ),
            BuildError::TickTooLong { tick, max } => {
                write!(f, "tick is {tick:?}, but must be at most {max:?}")
            }
            BuildError::Slots { slots, max } => write!(
                f,
                "slots is {slots}, but must be between 1 and {max} (2^{})",
                max.trailing_zeros()
            ),
            BuildError::TotalSlots { slots, shards, max } => write!(
                f,
                "slots times shards is {} ({slots} slots in each of {shards} shards, after \
                 rounding up to powers of two), but must be at most {max} (2^{}): every shard \
                 allocates its slots up front; use fewer slots or fewer shards",
                slots.saturating_mul(*shards),
                max.trailing_zeros()
            ),
            BuildError::ZeroMaxPending => {
                f.write_str("max_pending is 0, but must be at least 1; leave it unset for no bound")
            }
            BuildError::ZeroWakeupsPerTick => {
                f.write_str("max_wakeups_per_tick is 0, but must be at least 1")
            }
            BuildError::Shards { shards, max } => {
                write!(f, "shards is {shards}, but must be between 1 and {max}")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// A wheel refused a new timer.
///
/// A callback that was refused comes back with the error, so nothing given to
/// the wheel is lost: take it with [`into_task`](Rejected::into_task).
///
/// `Send + Sync` like the other errors, though the callback inside need only
/// be `Send` (see [`TimerTask`](crate::TimerTask)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::builder().max_pending(1).build()?;
/// let _first = wheel.schedule(Duration::from_secs(1), || println!("first"))?;
/// let err = wheel.schedule(Duration::from_secs(1), || println!("second")).unwrap_err();
/// assert_eq!(err.max_pending(), Some(1));
/// assert_eq!(
///     err.to_string(),
///     "the wheel already has its maximum of 1 pending timers (Builder::max_pending)"
/// );
/// let task = err.into_task().expect("the refused callback comes back");
/// task.await; // run it here instead: prints "second"
/// # Ok(())
/// # }
/// ```
pub struct Rejected {
    reason: RejectReason,
    task: Option<crate::TimerTask>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RejectReason {
    AtCapacity { max_pending: usize },
    ShutDown,
    NoDriver(&'static str),
}

/// What `Rejected` and `InsertError` say of their reason.
impl RejectReason {
    fn max_pending(self) -> Option<usize> {
        match self {
            RejectReason::AtCapacity { max_pending } => Some(max_pending),
            _ => None,
        }
    }

    fn is_shutdown(self) -> bool {
        self == RejectReason::ShutDown
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RejectReason::AtCapacity { max_pending } => write!(
                f,
                "the wheel already has its maximum of {max_pending} pending timers \
                 (Builder::max_pending)"
            ),
            RejectReason::ShutDown => f.write_str("the wheel has been shut down"),
            RejectReason::NoDriver(why) => f.write_str(why),
        }
    }
}

impl Rejected {
    pub(crate) fn new(reason: RejectReason, task: Option<crate::TimerTask>) -> Self {
        Rejected { reason, task }
    }

    /// The bound the wheel is at, if that is why it refused; `None` after a
    /// shutdown. See the [type's example](Rejected#examples).
    pub fn max_pending(&self) -> Option<usize> {
        self.reason.max_pending()
    }

    /// Whether the wheel refused because it was shut down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::new();
    /// wheel.shutdown();
    /// let err = wheel.try_sleep(Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_shutdown());
    /// assert_eq!(err.max_pending(), None);
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.reason.is_shutdown()
    }

    /// The refused callback, for the caller to run, retry or log. `None` for
    /// a refused [`Sleep`](crate::Sleep) or [`Timeout`](crate::Timeout).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::new();
    /// wheel.shutdown();
    /// let refused = wheel.schedule(Duration::from_secs(1), || println!("retry"));
    /// let task = refused.unwrap_err().into_task().expect("a callback comes back");
    /// task.await; // runs it now: prints "retry"
    ///
    /// let refused = wheel.try_sleep(Duration::from_secs(1)).unwrap_err();
    /// assert!(refused.into_task().is_none()); // a sleep has nothing to give back
    /// # }
    /// ```
    pub fn into_task(self) -> Option<crate::TimerTask> {
        self.task
    }
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("reason", &self.reason)
            .field("task", &self.task)
            .finish()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason, f)
    }
}

impl std::error::Error for Rejected {}

/// An [`ExpiryQueue`](crate::ExpiryQueue) refused a value: its wheel is at
/// its [`max_pending`](crate::Builder::max_pending) bound, or shut down.
///
/// The value comes back with the error: take it with
/// [`into_value`](InsertError::into_value).
///
/// `Send` and `Sync` when `T` is.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::builder().max_pending(1).build()?;
/// let queue = wheel.expiry_queue();
/// queue.try_insert("first", Duration::from_secs(1))?;
/// let err = queue.try_insert("second", Duration::from_secs(1)).unwrap_err();
/// assert_eq!(err.max_pending(), Some(1));
/// assert_eq!(
///     err.to_string(),
///     "the wheel already has its maximum of 1 pending timers (Builder::max_pending)"
/// );
/// assert_eq!(err.into_value(), "second");
/// # Ok(())
/// # }
/// ```
pub struct InsertError<T> {
    reason: RejectReason,
    value: T,
}

impl<T> InsertError<T> {
    pub(crate) fn new(reason: RejectReason, value: T) -> Self {
        InsertError { reason, value }
    }

    /// The bound the wheel is at, if that is why the value was refused;
    /// `None` after a shutdown. See the [type's example](InsertError#examples).
    pub fn max_pending(&self) -> Option<usize> {
        self.reason.max_pending()
    }

    /// Whether the value was refused because the wheel was shut down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::new();
    /// let queue = wheel.expiry_queue();
    /// wheel.shutdown();
    /// let err = queue.try_insert("late", Duration::from_secs(1)).unwrap_err();
    /// assert!(err.is_shutdown());
    /// assert_eq!(err.max_pending(), None);
    /// # }
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.reason.is_shutdown()
    }

    /// The refused value, borrowed: to look at it before deciding.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::builder().max_pending(1).build()?;
    /// let queue = wheel.expiry_queue();
    /// queue.try_insert(String::from("alice"), Duration::from_secs(1))?;
    /// let err = queue.try_insert(String::from("bob"), Duration::from_secs(1)).unwrap_err();
    /// assert_eq!(err.value(), "bob");
    /// # Ok(())
    /// # }
    /// ```
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The refused value, for the caller to keep, retry or drop.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// let wheel = Wheel::new();
    /// let queue = wheel.expiry_queue();
    /// wheel.shutdown();
    /// let session = String::from("alice");
    /// let back = match queue.try_insert(session, Duration::from_secs(30)) {
    ///     Ok(_key) => unreachable!("a shut-down wheel takes nothing"),
    ///     Err(refused) => refused.into_value(),
    /// };
    /// assert_eq!(back, "alice"); // to keep elsewhere
    /// # }
    /// ```
    pub fn into_value(self) -> T {
        self.value
    }
}

/// Leaves the value out, so that any `T` can be printed (as
/// `std::sync::mpsc::SendError` does).
impl<T> fmt::Debug for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InsertError")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason, f)
    }
}

impl<T> std::error::Error for InsertError<T> {}

/// A [`Key`](crate::queue::Key) whose value is no longer in its
/// [`ExpiryQueue`](crate::ExpiryQueue): removed, cleared or handed to a
/// consumer as expired, or the key is from another queue. Keys are
/// generational, so a stale key never reaches a value inserted later.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// let queue = tokio_wheel::Wheel::new().expiry_queue();
/// let key = queue.insert(1, Duration::from_secs(5));
/// assert_eq!(queue.remove(&key), Some(1));
/// let err = queue.reset(&key, Duration::from_secs(5)).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "the key's value is no longer in the queue (removed, cleared or expired), \
///      or the key is from another queue"
/// );
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaleKey(());

impl StaleKey {
    pub(crate) fn new() -> Self {
        StaleKey(())
    }
}

impl fmt::Display for StaleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the key's value is no longer in the queue (removed, cleared or expired), \
             or the key is from another queue",
        )
    }
}

impl std::error::Error for StaleKey {}

/// [`Wheel::try_current`](crate::Wheel::try_current) was called outside the
/// context of a Tokio runtime, so there is no runtime whose default wheel it
/// could return.
///
/// Its [`source`](std::error::Error::source) is Tokio's own
/// [`TryCurrentError`](tokio::runtime::TryCurrentError), which tells a thread
/// that never entered a runtime from one whose thread-locals are being
/// destroyed.
///
/// # Examples
///
/// ```
/// use tokio_wheel::Wheel;
///
/// // No runtime on this thread.
/// let err = Wheel::try_current().unwrap_err();
/// assert!(err.is_missing_context());
/// assert_eq!(
///     err.to_string(),
///     "there is no Tokio runtime here: the default wheel is the current runtime's, \
///      so Wheel::try_current must be called from the context of a Tokio 1.x runtime"
/// );
/// ```
#[derive(Debug)]
pub struct TryCurrentError {
    tokio: tokio::runtime::TryCurrentError,
}

impl TryCurrentError {
    pub(crate) fn new(tokio: tokio::runtime::TryCurrentError) -> Self {
        TryCurrentError { tokio }
    }

    /// Whether the call was made outside any runtime's context (as opposed
    /// to while this thread's thread-locals are being destroyed), as Tokio's
    /// [`is_missing_context`](tokio::runtime::TryCurrentError::is_missing_context).
    /// See the [type's example](TryCurrentError#examples).
    pub fn is_missing_context(&self) -> bool {
        self.tokio.is_missing_context()
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tokio.is_thread_local_destroyed() {
            f.write_str(
                "the Tokio runtime context is gone: this thread's thread-locals are being \
                 destroyed, so Wheel::try_current has no runtime to find the default wheel of",
            )
        } else {
            f.write_str(
                "there is no Tokio runtime here: the default wheel is the current runtime's, \
                 so Wheel::try_current must be called from the context of a Tokio 1.x runtime",
            )
        }
    }
}

impl std::error::Error for TryCurrentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.tokio)
    }
}
