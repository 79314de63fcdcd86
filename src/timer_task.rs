//! `TimerTask`: the work of a callback timer (Netty's `newTimeout`), as
//! handed to the wheel and as it comes back when it did not run.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// Work handed to the wheel by [`Wheel::schedule`](crate::Wheel::schedule)
/// and friends, as it comes back when it did not run: from
/// [`Wheel::shutdown`](crate::Wheel::shutdown) or in a
/// [`Rejected`](crate::error::Rejected) error.
///
/// Await it (or spawn it) to run it now; drop it to discard it.
///
/// `TimerTask` is `Send + Sync` (so is [`Rejected`](crate::error::Rejected),
/// which carries one), though the closure or future it holds need only be
/// `Send`: nothing reaches the work but the owner, by value, so sharing a
/// `&TimerTask` shares only its deadline.
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
    Call(Owned<Box<dyn FnOnce() + Send>>),
    Future(Owned<Pin<Box<dyn Future<Output = ()> + Send>>>),
}

/// A value reachable only by value: `Sync` whenever it is `Send`, as a
/// `Mutex` is, since no `&Owned` gives access to it. The mutex is never
/// locked (there is no method that could contend for it); it is only
/// std's way, without `unsafe`, to make `Sync` a value that is not.
struct Owned<T>(Mutex<T>);

impl<T> Owned<T> {
    fn new(value: T) -> Self {
        Owned(Mutex::new(value))
    }

    fn into_inner(self) -> T {
        // Never locked, so never poisoned; taken anyway if it were.
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

impl TimerTask {
    pub(crate) fn call(deadline: Instant, f: impl FnOnce() + Send + 'static) -> Self {
        TimerTask {
            deadline,
            work: Work::Call(Owned::new(Box::new(f))),
        }
    }

    pub(crate) fn future(deadline: Instant, f: impl Future<Output = ()> + Send + 'static) -> Self {
        TimerTask {
            deadline,
            work: Work::Future(Owned::new(Box::pin(f))),
        }
    }

    /// When the task was due: the deadline it was scheduled for, not the
    /// wheel's tick.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let at = Instant::now() + Duration::from_millis(1234);
    /// wheel.schedule_at(at, || ()).unwrap();
    /// wheel.schedule(Duration::from_millis(5), || ()).unwrap();
    /// let unrun = wheel.shutdown(); // in deadline order
    /// let deadlines: Vec<_> = unrun.iter().map(|t| t.deadline()).collect();
    /// assert_eq!(deadlines, [Instant::now() + Duration::from_millis(5), at]);
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl IntoFuture for TimerTask {
    type Output = ();
    type IntoFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

    /// A future that runs the task: calls the closure, or is the future.
    /// It is `Send`, to be spawned, but not `Sync`: the closure or future
    /// handed to the wheel need not be, and no poll needs it.
    fn into_future(self) -> Self::IntoFuture {
        match self.work {
            Work::Call(f) => {
                let f = f.into_inner();
                Box::pin(async move { f() })
            }
            Work::Future(f) => f.into_inner(),
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
