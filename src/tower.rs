//! A tower timeout middleware on a wheel (feature `tower`).
//!
//! [`TimeoutLayer`] and [`Timeout`] are drop-ins for `tower::timeout`'s:
//! the same constructors, the same boxed error
//! ([`tower::BoxError`]), and on timeout the very same
//! error type, [`tower::timeout::error::Elapsed`],
//! so code that tells a timeout from other errors with
//! `err.is::<Elapsed>()` (as axum's `HandleErrorLayer` handlers do) keeps
//! working. Only the timer differs: the wheel's, at its resolution.
//!
//! The switch is one line of a `ServiceBuilder`. (`ServiceBuilder::service_fn`
//! and `ServiceExt::oneshot` below need tower's `util` feature; the layer
//! needs only this crate's `tower` feature.)
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), tower::BoxError> {
//! use std::time::Duration;
//!
//! use tower::{ServiceBuilder, ServiceExt};
//! use tokio_wheel::{tower::TimeoutLayer, Wheel};
//!
//! let wheel = Wheel::builder().tick(Duration::from_millis(50)).build()?;
//! let service = ServiceBuilder::new()
//!     // was: .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(10)))
//!     .layer(TimeoutLayer::with_wheel(&wheel, Duration::from_secs(10)))
//!     .service_fn(|name: &'static str| async move {
//!         Ok::<_, std::io::Error>(format!("hello {name}"))
//!     });
//! assert_eq!(service.oneshot("ada").await?, "hello ada");
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use ::tower::timeout::error::Elapsed;
use ::tower::{BoxError, Layer, Service};
use pin_project_lite::pin_project;
use tokio::task::coop;

use crate::{Sleep, Wheel};

/// Applies a [`Timeout`] to the requests of the services it wraps: a
/// drop-in for `tower::timeout::TimeoutLayer`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tower::timeout::error::Elapsed;
/// use tower::{service_fn, Layer, ServiceExt};
/// use tokio_wheel::tower::TimeoutLayer;
///
/// let slow = service_fn(|_req: ()| async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, std::io::Error>("done")
/// });
/// let service = TimeoutLayer::new(Duration::from_secs(1)).layer(slow);
/// let err = service.oneshot(()).await.unwrap_err();
/// assert!(err.is::<Elapsed>());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timeout: Duration,
    wheel: Option<Wheel>,
}

impl TimeoutLayer {
    /// A layer whose timers are on the default wheel of the runtime where
    /// each request is called (see [`Wheel::current`]): like
    /// `tower::timeout::TimeoutLayer::new`, it needs no runtime until then.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::tower::TimeoutLayer;
    ///
    /// let layer = TimeoutLayer::new(Duration::from_secs(30));
    /// assert_eq!(layer.timeout(), Duration::from_secs(30));
    /// ```
    pub const fn new(timeout: Duration) -> TimeoutLayer {
        TimeoutLayer {
            timeout,
            wheel: None,
        }
    }

    /// A layer whose timers are on `wheel`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::{tower::TimeoutLayer, Wheel};
    ///
    /// let wheel = Wheel::new();
    /// let layer = TimeoutLayer::with_wheel(&wheel, Duration::from_secs(30));
    /// # drop(layer);
    /// ```
    pub fn with_wheel(wheel: &Wheel, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer {
            timeout,
            wheel: Some(wheel.clone()),
        }
    }

    /// The timeout applied to each request.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let layer = tokio_wheel::tower::TimeoutLayer::new(Duration::from_secs(30));
    /// assert_eq!(layer.timeout(), Duration::from_secs(30));
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            timeout: self.timeout,
            wheel: self.wheel.clone(),
        }
    }
}

/// A service whose requests fail with
/// [`Elapsed`] when the inner service takes
/// longer than a timeout to answer: a drop-in for `tower::timeout::Timeout`.
///
/// `poll_ready` is the inner service's. The timer starts at
/// [`call`](Service::call), on the wheel given or, without one, on the
/// default wheel of the runtime where `call` runs. The response future fails
/// no earlier than the timeout and at most one tick of the wheel after it.
/// Errors of the inner service are returned boxed, as they are.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tower::{service_fn, ServiceExt};
/// use tokio_wheel::{tower::Timeout, Wheel};
///
/// let wheel = Wheel::new();
/// let echo = service_fn(|req: u32| async move { Ok::<_, std::io::Error>(req) });
/// let service = Timeout::with_wheel(echo, &wheel, Duration::from_secs(1));
/// assert_eq!(service.oneshot(7).await.unwrap(), 7);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    wheel: Option<Wheel>,
}

impl<S> Timeout<S> {
    /// Wraps `inner`, with timers on the default wheel of the runtime where
    /// each request is called.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower::service_fn;
    ///
    /// let echo = service_fn(|req: u32| async move { Ok::<_, std::io::Error>(req) });
    /// let service = tokio_wheel::tower::Timeout::new(echo, Duration::from_secs(1));
    /// # drop(service);
    /// ```
    pub const fn new(inner: S, timeout: Duration) -> Timeout<S> {
        Timeout {
            inner,
            timeout,
            wheel: None,
        }
    }

    /// Wraps `inner`, with timers on `wheel`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower::service_fn;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let echo = service_fn(|req: u32| async move { Ok::<_, std::io::Error>(req) });
    /// let service = tokio_wheel::tower::Timeout::with_wheel(echo, &wheel, Duration::from_secs(1));
    /// # drop(service);
    /// ```
    pub fn with_wheel(inner: S, wheel: &Wheel, timeout: Duration) -> Timeout<S> {
        Timeout {
            inner,
            timeout,
            wheel: Some(wheel.clone()),
        }
    }

    /// The inner service.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let service = tokio_wheel::tower::Timeout::new(5_u8, Duration::from_secs(1));
    /// assert_eq!(*service.get_ref(), 5);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut service = tokio_wheel::tower::Timeout::new(5_u8, Duration::from_secs(1));
    /// *service.get_mut() += 1;
    /// assert_eq!(*service.get_ref(), 6);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, without the timeout.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let service = tokio_wheel::tower::Timeout::new(5_u8, Duration::from_secs(1));
    /// assert_eq!(service.into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The timeout applied to each request.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let service = tokio_wheel::tower::Timeout::new((), Duration::from_secs(1));
    /// assert_eq!(service.timeout(), Duration::from_secs(1));
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl<S, Request> Service<Request> for Timeout<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// # Panics
    ///
    /// Without a wheel given, outside a Tokio runtime (as
    /// `tower::timeout::Timeout` does).
    fn call(&mut self, request: Request) -> Self::Future {
        let response = self.inner.call(request);
        let sleep = match &self.wheel {
            Some(wheel) => wheel.sleep(self.timeout),
            None => crate::sleep(self.timeout),
        };
        ResponseFuture { response, sleep }
    }
}

pin_project! {
    /// The response future of [`Timeout`]: the inner service's response, or
    /// [`Elapsed`] (boxed) if the timeout
    /// passes first.
    ///
    /// Each poll polls the inner future first: a response that is ready is
    /// returned even past the deadline. The timer takes part in Tokio's
    /// cooperative budget as [`Timeout`](crate::Timeout)'s does.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tower::{service_fn, Service};
    /// use tokio_wheel::tower::{ResponseFuture, Timeout};
    ///
    /// let mut service = Timeout::new(
    ///     service_fn(|()| std::future::pending::<Result<(), std::io::Error>>()),
    ///     Duration::from_millis(100),
    /// );
    /// let response: ResponseFuture<_> = service.call(());
    /// assert!(response.await.unwrap_err().is::<tower::timeout::error::Elapsed>());
    /// # }
    /// ```
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        response: F,
        sleep: Sleep,
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(res) = this.response.poll(cx) {
            return Poll::Ready(res.map_err(Into::into));
        }
        // As in `crate::Timeout`: if the response used up the task's budget,
        // the timer is polled outside it, or a response that did so on every
        // poll would never time out.
        match this.sleep.poll_timer(had_budget, cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new().into())),
            Poll::Pending => Poll::Pending,
        }
    }
}
