//! Callback timers: work the wheel runs at a deadline (Netty's `newTimeout`).

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use tokio::time::Instant;

use crate::driver::Shard;
use crate::wheel::Key;

/// Work handed to the wheel by [`Wheel::schedule`](crate::Wheel::schedule)
/// and friends, as it comes back when it did not run: from
/// [`Wheel::shutdown`](crate::Wheel::shutdown) or in a
/// [`Rejected`](crate::error::Rejected) error.
///
/// Await it (or spawn it) to run it now; drop it to discard it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::new();
/// wheel.schedule(Duration::from_secs(60), || println!("flush")).unwrap();
/// for task in wheel.shutdown() {
///     println!("never ran, due at {:?}", task.deadline());
///     task.await; // prints "flush"
/// }
/// # }
/// ```
pub struct TimerTask {
    deadline: Instant,
    work: Work,
}

enum Work {
    Call(Box<dyn FnOnce() + Send>),
    Future(Pin<Box<dyn Future<Output = ()> + Send>>),
}

impl TimerTask {
    pub(crate) fn call(deadline: Instant, f: impl FnOnce() + Send + 'static) -> Self {
        TimerTask {
            deadline,
            work: Work::Call(Box::new(f)),
        }
    }

    pub(crate) fn future(deadline: Instant, f: impl Future<Output = ()> + Send + 'static) -> Self {
        TimerTask {
            deadline,
            work: Work::Future(Box::pin(f)),
        }
    }

    /// When the task was due.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl IntoFuture for TimerTask {
    type Output = ();
    type IntoFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

    /// A future that runs the task: calls the closure, or is the future.
    fn into_future(self) -> Self::IntoFuture {
        match self.work {
            Work::Call(f) => Box::pin(async move { f() }),
            Work::Future(f) => f,
        }
    }
}

impl fmt::Debug for TimerTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.work {
            Work::Call(_) => "closure",
            Work::Future(_) => "future",
        };
        f.debug_struct("TimerTask")
            .field("deadline", &self.deadline)
            .field("kind", &kind)
            .finish()
    }
}

const PENDING: u8 = 0;
const EXPIRED: u8 = 1;
const CANCELLED: u8 = 2;

/// What a [`TimerHandle`] and the wheel share about one callback. `status`
/// and `key` change only under the lock of the shard that holds the entry;
/// they are atomics so that the handle can read `status` without it.
#[derive(Debug)]
pub(crate) struct TaskState {
    status: AtomicU8,
    /// The entry's key while `status` is `PENDING`.
    key: AtomicU32,
}

impl TaskState {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TaskState {
            status: AtomicU8::new(PENDING),
            key: AtomicU32::new(0),
        })
    }

    /// Under the shard lock, right after the entry was linked.
    pub(crate) fn set_key(&self, key: Key) {
        self.key.store(key, Relaxed);
    }

    /// Under the shard lock.
    pub(crate) fn key(&self) -> Key {
        self.key.load(Relaxed)
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.status.load(Relaxed) == PENDING
    }

    /// Under the shard lock, as the entry fires.
    pub(crate) fn set_expired(&self) {
        self.status.store(EXPIRED, Relaxed);
    }

    /// Under the shard lock, as the entry is removed unfired.
    pub(crate) fn set_cancelled(&self) {
        self.status.store(CANCELLED, Relaxed);
    }
}

/// A callback in a wheel: the work and its shared state.
pub(crate) struct Scheduled {
    pub(crate) state: Arc<TaskState>,
    pub(crate) task: TimerTask,
}

impl fmt::Debug for Scheduled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.task.fmt(f)
    }
}

/// A handle to a callback scheduled on a wheel, like Netty's `Timeout`.
///
/// Dropping it does **not** cancel the callback: like a `JoinHandle`, it is
/// fire and forget. (A [`Sleep`](crate::Sleep), by contrast, is the timer:
/// dropping it cancels.) Clones refer to the same callback.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio_wheel::Wheel;
///
/// let wheel = Wheel::new();
/// let handle = wheel.schedule(Duration::from_secs(10), || println!("too late")).unwrap();
/// assert!(handle.cancel());
/// assert!(handle.is_cancelled() && !handle.is_expired());
/// assert!(!handle.cancel(), "only once");
/// # }
/// ```
#[derive(Clone)]
pub struct TimerHandle {
    shard: Arc<Shard>,
    state: Arc<TaskState>,
    deadline: Instant,
}

impl TimerHandle {
    pub(crate) fn new(shard: Arc<Shard>, state: Arc<TaskState>, deadline: Instant) -> Self {
        TimerHandle {
            shard,
            state,
            deadline,
        }
    }

    /// Cancels the callback if it has not been handed to the runtime yet.
    /// Returns `true` if this call cancelled it, `false` if it had already
    /// run (or started), been cancelled, or been handed back by
    /// [`Wheel::shutdown`](crate::Wheel::shutdown).
    pub fn cancel(&self) -> bool {
        let mut shard = self.shard.lock();
        if !self.state.is_pending() {
            return false;
        }
        let removed = shard.remove_task(self.state.key());
        self.state.set_cancelled();
        let pin = shard.take_pin_if_idle();
        drop(shard);
        self.shard.shared.release(1);
        drop(pin);
        drop(removed);
        true
    }

    /// Whether the wheel has handed the callback to the runtime to run: it
    /// has run, is running, or is about to.
    pub fn is_expired(&self) -> bool {
        self.state.status.load(Relaxed) == EXPIRED
    }

    /// Whether the callback was cancelled, by [`cancel`](Self::cancel) or by
    /// [`Wheel::shutdown`](crate::Wheel::shutdown) (which hands it back).
    pub fn is_cancelled(&self) -> bool {
        self.state.status.load(Relaxed) == CANCELLED
    }

    /// When the callback is due. It runs at the first tick of its wheel at or
    /// after this instant.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match self.state.status.load(Relaxed) {
            PENDING => "pending",
            EXPIRED => "expired",
            _ => "cancelled",
        };
        f.debug_struct("TimerHandle")
            .field("deadline", &self.deadline)
            .field("status", &status)
            .finish()
    }
}
