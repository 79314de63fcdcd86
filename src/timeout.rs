//! The `Timeout` future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::task::coop;

use crate::error::Elapsed;
use crate::Sleep;

pin_project! {
    /// A future that resolves to the output of `F`, or to [`Elapsed`] if the
    /// deadline passes first.
    ///
    /// Made by [`Wheel::timeout`](crate::Wheel::timeout),
    /// [`Wheel::timeout_at`](crate::Wheel::timeout_at) or the free functions
    /// [`timeout`](crate::timeout) and [`timeout_at`](crate::timeout_at).
    ///
    /// Each poll polls the inner future first, and the timer only if the inner
    /// future is pending: a future that is ready at once never registers a
    /// timer at all. Dropping the `Timeout` (or calling
    /// [`into_inner`](Timeout::into_inner)) cancels the timer at once. It is
    /// `Unpin` when `F` is.
    ///
    /// # Cooperative scheduling
    ///
    /// As with `tokio::time::timeout`, the timer takes a unit of Tokio's
    /// cooperative budget when it is polled (see [`Sleep`]), and a future that
    /// is ready at once takes none of its own. If the future uses up the
    /// task's budget, the timer is polled outside the budget all the same, so
    /// that a future which does so on every poll still times out.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let (tx, rx) = oneshot::channel::<u32>();
    /// // Nobody sends: the timeout fires.
    /// let res = tokio_wheel::timeout(Duration::from_millis(20), rx).await;
    /// assert!(res.is_err());
    /// drop(tx);
    ///
    /// // A ready future wins without touching the wheel.
    /// let res = tokio_wheel::timeout(Duration::from_millis(20), async { 7 }).await;
    /// assert_eq!(res, Ok(7));
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        value: F,
        delay: Sleep,
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(value: F, delay: Sleep) -> Self {
        Timeout { value, delay }
    }

    /// The inner future.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let (_tx, rx) = oneshot::channel::<u32>();
    /// let t = tokio_wheel::timeout(Duration::from_secs(1), rx);
    /// assert!(t.get_ref().is_empty()); // nothing sent yet
    /// # }
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.value
    }

    /// The inner future, mutably.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::sync::oneshot;
    ///
    /// let (tx, rx) = oneshot::channel::<u32>();
    /// let mut t = tokio_wheel::timeout(Duration::from_secs(1), rx);
    /// drop(tx);
    /// t.get_mut().close(); // a receiver's own methods, through the timeout
    /// assert!(t.await.unwrap().is_err()); // not timed out: the sender is gone
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.value
    }

    /// The inner future, without the timeout. The timer is cancelled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let t = tokio_wheel::timeout(Duration::from_secs(1), async { 5 });
    /// assert_eq!(t.into_inner().await, 5);
    /// # }
    /// ```
    pub fn into_inner(self) -> F {
        self.value
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let me = self.project();
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(v) = me.value.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        // If the future used up the budget, the timer is polled outside it,
        // or a future that did so on every poll would never time out.
        match me.delay.poll_timer(had_budget, cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new())),
            Poll::Pending => Poll::Pending,
        }
    }
}
