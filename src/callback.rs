//! `TimerHandle`: a callback scheduled on a wheel, to cancel or ask about.

use std::fmt;

use tokio::time::Instant;

use crate::driver::{CallbackEntry, Cancel};

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
    entry: CallbackEntry,
    deadline: Instant,
}

impl TimerHandle {
    pub(crate) fn new(entry: CallbackEntry, deadline: Instant) -> Self {
        TimerHandle { entry, deadline }
    }

    /// Cancels the callback if it has not been handed to the runtime yet.
    /// Returns `true` if this call cancelled it, `false` if it had already
    /// fired (it runs, or waits to: see [`is_expired`](Self::is_expired)),
    /// been cancelled, or been handed back by
    /// [`Wheel::shutdown`](crate::Wheel::shutdown).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let (tx, rx) = oneshot::channel::<()>();
    /// let handle = wheel.schedule(Duration::from_secs(1), move || drop(tx)).unwrap();
    /// assert!(handle.cancel());
    /// assert_eq!(wheel.pending(), 0);
    /// assert!(rx.await.is_err()); // the closure was dropped unrun
    /// assert!(!handle.cancel()); // already cancelled
    /// # }
    /// ```
    pub fn cancel(&self) -> bool {
        match self.entry.cancel() {
            Cancel::NotPending => false,
            // Its work is dropped here, outside every lock.
            Cancel::Cancelled(_) => true,
        }
    }

    /// Whether the callback has run or is running: its task has started.
    ///
    /// A callback that fired is not yet expired while its task waits to run;
    /// if the runtime stops and drops that task unrun, the wheel keeps the
    /// callback: its next driver runs it, or
    /// [`Wheel::shutdown`](crate::Wheel::shutdown) hands it back.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let handle = wheel.schedule(Duration::from_millis(50), || ()).unwrap();
    /// assert!(!handle.is_expired());
    /// tokio::time::sleep(Duration::from_millis(51)).await; // just past its tick
    /// assert!(handle.is_expired()); // its task has run
    /// assert!(!handle.cancel()); // too late
    /// # }
    /// ```
    pub fn is_expired(&self) -> bool {
        self.entry.is_expired()
    }

    /// Whether the callback was cancelled, by [`cancel`](Self::cancel) or by
    /// [`Wheel::shutdown`](crate::Wheel::shutdown) (which hands it back).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let cancelled = wheel.schedule(Duration::from_secs(1), || ()).unwrap();
    /// let handed_back = wheel.schedule(Duration::from_secs(2), || ()).unwrap();
    /// assert!(!cancelled.is_cancelled());
    /// cancelled.cancel();
    /// assert!(cancelled.is_cancelled());
    /// assert_eq!(wheel.shutdown().len(), 1);
    /// assert!(handed_back.is_cancelled() && !handed_back.is_expired());
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.entry.is_cancelled()
    }

    /// When the callback is due. It runs at the first tick of its wheel at or
    /// after this instant.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new(); // a 10 ms tick
    /// let handle = wheel.schedule(Duration::from_millis(25), || ()).unwrap();
    /// assert_eq!(handle.deadline(), Instant::now() + Duration::from_millis(25));
    /// tokio::time::sleep_until(handle.deadline()).await;
    /// assert!(!handle.is_expired()); // its tick is at 30 ms
    /// tokio::time::sleep(Duration::from_millis(6)).await; // just past it
    /// assert!(handle.is_expired());
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One read: three would race a callback that starts in between.
        let status = self.entry.status_name();
        f.debug_struct("TimerHandle")
            .field("deadline", &self.deadline)
            .field("status", &status)
            .finish()
    }
}
