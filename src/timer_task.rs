//! `TimerTask`: the work of a callback timer (Netty's `newTimeout`), as
//! handed to the wheel and as it comes back when it did not run.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use tokio::time::Instant;

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
