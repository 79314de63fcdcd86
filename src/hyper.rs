//! A [`hyper::rt::Timer`] on a wheel, for hyper 1.x
//! servers and clients (feature `hyper`).
//!
//! hyper's own timeouts (`header_read_timeout` of HTTP/1 servers, HTTP/2
//! keep-alive pings) ask the timer given to the connection builder for their
//! sleeps. [`HyperTimer`] hands out the wheel's [`Sleep`], and resets one in
//! place when hyper moves its deadline. [`HyperTimer`]'s own page has a
//! complete server.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//!
//! use hyper::rt::Timer;
//! use tokio::time::Instant;
//! use tokio_wheel::{hyper::HyperTimer, Wheel};
//!
//! let timer = HyperTimer::new(&Wheel::current());
//! // What hyper does for a timeout: asks the timer for a sleep and awaits it.
//! let start = Instant::now();
//! timer.sleep(Duration::from_millis(100)).await;
//! assert!(start.elapsed() >= Duration::from_millis(100)); // never early
//! # }
//! ```

use std::pin::Pin;
use std::time::{Duration, Instant as StdInstant};

use ::hyper::rt;
use tokio::time::Instant;

use crate::{Sleep, Wheel};

/// A [`hyper::rt::Timer`] whose sleeps are timers of a
/// [`Wheel`], at the wheel's resolution: never early, at most one tick late.
///
/// Give it to a connection builder with `.timer(..)`. Its clock is Tokio's
/// ([`now`](rt::Timer::now) reads `tokio::time::Instant::now()`), so hyper's
/// timeouts follow `tokio::time::pause` and `advance` in tests. Clones share
/// the wheel.
///
/// # Examples
///
/// An HTTP/1 server that closes connections which take more than 5 s to send
/// their request header (the first request's, or the next one's on a
/// kept-alive connection):
///
/// ```
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use http_body_util::Full;
/// use hyper::body::{Bytes, Incoming};
/// use hyper::server::conn::http1;
/// use hyper::service::service_fn;
/// use hyper::{Request, Response};
/// use hyper_util::rt::TokioIo;
/// use tokio::net::TcpListener;
/// use tokio_wheel::{hyper::HyperTimer, Wheel};
///
/// async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
///     Ok(Response::new(Full::new(Bytes::from("hello\n"))))
/// }
///
/// let wheel = Wheel::new();
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let server = tokio::spawn(async move {
///     loop {
///         let (tcp, _) = listener.accept().await?;
///         let timer = HyperTimer::new(&wheel);
///         tokio::spawn(async move {
///             let served = http1::Builder::new()
///                 .timer(timer)
///                 .header_read_timeout(Duration::from_secs(5))
///                 .keep_alive(true)
///                 .serve_connection(TokioIo::new(tcp), service_fn(hello))
///                 .await;
///             if let Err(err) = served {
///                 eprintln!("connection closed: {err}");
///             }
///         });
///     }
///     #[allow(unreachable_code)]
///     Ok::<(), std::io::Error>(())
/// });
/// # use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// # let mut client = tokio::net::TcpStream::connect(addr).await?;
/// # client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await?;
/// # let mut response = String::new();
/// # client.read_to_string(&mut response).await?;
/// # assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
/// # assert!(response.ends_with("hello\n"), "{response}");
/// # server.abort();
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HyperTimer {
    wheel: Wheel,
}

impl HyperTimer {
    /// A timer on `wheel`. For the runtime's default wheel, the one the free
    /// functions use: `HyperTimer::new(&Wheel::current())`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use tokio_wheel::{hyper::HyperTimer, Wheel};
    ///
    /// let timer = HyperTimer::new(&Wheel::current());
    /// let mut builder = hyper::server::conn::http1::Builder::new();
    /// builder.timer(timer);
    /// # }
    /// ```
    pub fn new(wheel: &Wheel) -> HyperTimer {
        HyperTimer {
            wheel: wheel.clone(),
        }
    }

    /// The wheel this timer's sleeps are on.
    ///
    /// ```
    /// use tokio_wheel::{hyper::HyperTimer, Wheel};
    ///
    /// let timer = HyperTimer::new(&Wheel::new());
    /// assert_eq!(timer.wheel().pending(), 0);
    /// ```
    pub fn wheel(&self) -> &Wheel {
        &self.wheel
    }
}

impl From<Wheel> for HyperTimer {
    /// ```
    /// use tokio_wheel::{hyper::HyperTimer, Wheel};
    ///
    /// let timer = HyperTimer::from(Wheel::new());
    /// # drop(timer);
    /// ```
    fn from(wheel: Wheel) -> HyperTimer {
        HyperTimer { wheel }
    }
}

impl rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn rt::Sleep>> {
        Box::pin(self.wheel.sleep(duration))
    }

    fn sleep_until(&self, deadline: StdInstant) -> Pin<Box<dyn rt::Sleep>> {
        Box::pin(self.wheel.sleep_until(Instant::from_std(deadline)))
    }

    /// Tokio's clock, which paused time moves.
    fn now(&self) -> StdInstant {
        Instant::now().into_std()
    }

    /// Resets a sleep of the wheel in place (see [`Sleep::reset`]); any
    /// other is replaced with a new one.
    fn reset(&self, sleep: &mut Pin<Box<dyn rt::Sleep>>, new_deadline: StdInstant) {
        let new_deadline = Instant::from_std(new_deadline);
        match sleep.as_mut().downcast_mut_pin::<Sleep>() {
            Some(ours) => ours.get_mut().reset(new_deadline),
            None => *sleep = Box::pin(self.wheel.sleep_until(new_deadline)),
        }
    }
}

/// The wheel's [`Sleep`] is `Send + Sync` and a `Future<Output = ()>`: it is
/// a hyper sleep as it is.
impl rt::Sleep for Sleep {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ::hyper::rt::Timer;
    use tokio::time::Instant;

    use super::HyperTimer;
    use crate::{Sleep, Wheel};

    /// `reset` keeps the wheel's own sleep (no new box) and moves it.
    #[tokio::test(start_paused = true)]
    async fn reset_in_place() {
        let timer = HyperTimer::new(&Wheel::new());
        let mut sleep = timer.sleep(Duration::from_secs(10));
        let before: *const () = std::ptr::from_ref(&*sleep).cast();
        let at = Instant::now() + Duration::from_millis(30);
        timer.reset(&mut sleep, at.into_std());
        let after: *const () = std::ptr::from_ref(&*sleep).cast();
        assert_eq!(before, after, "the box was replaced");
        let ours = sleep.as_mut().downcast_mut_pin::<Sleep>().unwrap();
        assert_eq!(ours.deadline(), at);
        sleep.await;
        assert!(Instant::now() >= at);
    }

    /// A sleep of another timer.
    struct Foreign(std::pin::Pin<Box<tokio::time::Sleep>>);

    impl std::future::Future for Foreign {
        type Output = ();

        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            self.0.as_mut().poll(cx)
        }
    }

    impl ::hyper::rt::Sleep for Foreign {}

    /// `reset` replaces a sleep that is not the wheel's with one that is.
    #[tokio::test(start_paused = true)]
    async fn reset_replaces_a_foreign_sleep() {
        let timer = HyperTimer::new(&Wheel::new());
        let far = tokio::time::sleep(Duration::from_secs(10));
        let mut sleep: std::pin::Pin<Box<dyn ::hyper::rt::Sleep>> =
            Box::pin(Foreign(Box::pin(far)));
        let at = Instant::now() + Duration::from_millis(30);
        timer.reset(&mut sleep, at.into_std());
        let ours = sleep
            .as_mut()
            .downcast_mut_pin::<Sleep>()
            .expect("replaced");
        assert_eq!(ours.deadline(), at);
        sleep.await;
        assert!(Instant::now() >= at);
        assert_eq!(timer.wheel().stats().fired, 1);
    }
}
