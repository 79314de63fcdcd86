//! Read, write and idle timeouts for byte streams, on a wheel.
//!
//! [`TimeoutStream`] wraps an [`AsyncRead`] + [`AsyncWrite`] stream (a
//! `TcpStream`, a TLS stream, one end of a `tokio::io::duplex`) so that a
//! read or write that waits too long fails with
//! [`io::ErrorKind::TimedOut`], as the timeouts a server keeps per
//! connection: one per direction plus one for the connection as a whole,
//! pushed back on every frame and almost never firing.
//!
//! # Examples
//!
//! A connection loop that answers each line, and drops a client that stays
//! silent for 30 s:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> std::io::Result<()> {
//! use std::io::ErrorKind;
//! use std::time::Duration;
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//! use tokio::time::Instant;
//! use tokio_wheel::{io::TimeoutStream, Wheel};
//!
//! let (mut client, server) = tokio::io::duplex(1024);
//! let stream = TimeoutStream::new(server, &Wheel::current())
//!     .with_idle_timeout(Some(Duration::from_secs(30)))
//!     .with_write_timeout(Some(Duration::from_secs(5)));
//! let serve = tokio::spawn(async move {
//!     let mut conn = BufReader::new(stream);
//!     let mut line = String::new();
//!     loop {
//!         line.clear();
//!         match conn.read_line(&mut line).await {
//!             Ok(0) => return Ok(()), // the client hung up
//!             Ok(_) => conn.write_all(line.to_uppercase().as_bytes()).await?,
//!             // `TimedOut` once the client has been silent for 30 s.
//!             Err(e) => return Err(e),
//!         }
//!     }
//! });
//!
//! client.write_all(b"ping\n").await?;
//! let mut reply = [0; 5];
//! tokio::io::AsyncReadExt::read_exact(&mut client, &mut reply).await?;
//! assert_eq!(&reply, b"PING\n");
//!
//! // Then the client says nothing: 30 s later the server gives up on it.
//! let silent = Instant::now();
//! let err = serve.await.unwrap().unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::TimedOut);
//! assert!(silent.elapsed() >= Duration::from_secs(30));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::io::{self, IoSlice, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::clock::deadline_after;
use crate::{Sleep, Wheel};

pin_project! {
    /// A stream whose reads and writes fail with
    /// [`TimedOut`](io::ErrorKind::TimedOut) when they wait too long.
    ///
    /// Three timeouts, each `None` (off) unless set:
    ///
    /// - **read**: a read (`poll_read`, `poll_fill_buf`) that the inner
    ///   stream keeps pending for longer than this fails. The time counts
    ///   from the poll that first returned `Pending`, and starts over once a
    ///   read completes.
    /// - **write**: likewise for `poll_write`, `poll_write_vectored`,
    ///   `poll_flush` and `poll_shutdown`.
    /// - **idle**: a read or write fails once no byte has moved in either
    ///   direction for this long while something waited on the stream: it
    ///   counts from the last byte read or written, or, when nothing waited
    ///   since then, from the first poll that waits again (a task busy
    ///   elsewhere does not make its peer idle). A write that completes
    ///   pushes back a read that waits, and the other way round. `consume`
    ///   of buffered bytes counts as a read.
    ///
    /// Each direction reuses one [`Sleep`] of the wheel for the whole life
    /// of the stream, re-armed with [`Sleep::reset`] (cheap when it moves the
    /// deadline later): no allocation and no lock per operation.
    ///
    /// Like the wheel's other timers, a timeout fails its operation no
    /// earlier than its deadline and at most one tick of the wheel after it.
    /// An operation that the inner stream completes is returned as it is,
    /// even past a deadline: no data is dropped. After a timeout error the
    /// stream stays usable, and the next read or write that waits starts a
    /// new timeout.
    ///
    /// The timers are polled by the task that polls the stream. When the
    /// halves are used from two tasks (`tokio::io::split`), each direction's
    /// timer wakes the task of that direction.
    ///
    /// `TimeoutStream<S>` is `Unpin` when `S` is, and implements
    /// [`AsyncBufRead`] and [`AsyncSeek`] when `S` does. Seeks are passed
    /// through untimed, as tokio-io-timeout's are.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::io::ErrorKind;
    /// use std::time::Duration;
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    /// use tokio_wheel::{io::TimeoutStream, Wheel};
    ///
    /// let wheel = Wheel::new();
    /// let (client, server) = tokio::io::duplex(1024);
    /// let mut server = TimeoutStream::new(server, &wheel)
    ///     .with_read_timeout(Some(Duration::from_secs(5)))
    ///     .with_idle_timeout(Some(Duration::from_secs(60)));
    ///
    /// // The client says nothing: the read fails after 5 s.
    /// let mut buf = [0; 5];
    /// let err = server.read_exact(&mut buf).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TimedOut);
    ///
    /// // The stream is still usable.
    /// let mut client = client;
    /// client.write_all(b"hello").await.unwrap();
    /// server.read_exact(&mut buf).await.unwrap();
    /// assert_eq!(&buf, b"hello");
    /// # }
    /// ```
    ///
    /// On the runtime's default wheel, the one the free functions use:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    /// use tokio_wheel::{io::TimeoutStream, Wheel};
    ///
    /// let stream = TimeoutStream::new(stream, &Wheel::current())
    ///     .with_write_timeout(Some(Duration::from_secs(10)));
    /// # drop(stream);
    /// # }
    /// ```
    pub struct TimeoutStream<S> {
        #[pin]
        stream: S,
        timers: Timers,
    }
}

/// The timers of a [`TimeoutStream`], apart from the pinned stream.
struct Timers {
    wheel: Wheel,
    read: Side,
    write: Side,
    idle: Option<Duration>,
    /// When the current idle stretch began: the first wait after bytes last
    /// moved, or the last move of bytes while something waited. `None` while
    /// nothing waits.
    idle_from: Option<Instant>,
}

/// One direction's timeout and timer.
struct Side {
    timeout: Option<Duration>,
    /// Made on the first wait that needs it, then re-armed in place.
    sleep: Option<Sleep>,
    /// `Some` while an operation of this direction waits with a timer armed:
    /// when it first returned `Pending`.
    waiting_since: Option<Instant>,
    /// The armed deadline is the idle timeout's, not this side's own.
    on_idle: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
}

impl Side {
    const fn new() -> Side {
        Side {
            timeout: None,
            sleep: None,
            waiting_since: None,
            on_idle: false,
        }
    }

    /// Sets this waiting side's timer to the earlier of its own deadline and
    /// the idle one; with neither, it stops waiting.
    fn arm(&mut self, wheel: &Wheel, idle: Option<Duration>, idle_from: Option<Instant>) {
        let Some(since) = self.waiting_since else {
            return;
        };
        let own = self.timeout.map(|t| deadline_after(since, t));
        let idle = idle.zip(idle_from).map(|(t, from)| deadline_after(from, t));
        let (deadline, on_idle) = match (own, idle) {
            (Some(own), Some(idle)) if idle < own => (idle, true),
            (Some(own), _) => (own, false),
            (None, Some(idle)) => (idle, true),
            (None, None) => {
                // Both turned off while waiting: cancel the timer at once.
                self.waiting_since = None;
                self.sleep = None;
                return;
            }
        };
        self.on_idle = on_idle;
        match &mut self.sleep {
            Some(sleep) => sleep.reset(deadline),
            None => self.sleep = Some(wheel.sleep_until(deadline)),
        }
    }
}

impl Timers {
    fn new(wheel: &Wheel) -> Timers {
        Timers {
            wheel: wheel.clone(),
            read: Side::new(),
            write: Side::new(),
            idle: None,
            idle_from: None,
        }
    }

    /// The fields apart: the side of `dir`, the other side, and the rest.
    fn split(&mut self, dir: Dir) -> (&mut Side, &mut Side, &Wheel, &mut Option<Instant>) {
        let Timers {
            wheel,
            read,
            write,
            idle_from,
            ..
        } = self;
        match dir {
            Dir::Read => (read, write, wheel, idle_from),
            Dir::Write => (write, read, wheel, idle_from),
        }
    }

    /// The inner stream returned `Pending` for an operation of `dir`: arm
    /// the side's timer if it is not, and poll it. `Ready` is the timeout.
    fn poll_pending(&mut self, dir: Dir, cx: &mut Context<'_>) -> Poll<io::Error> {
        let idle = self.idle;
        let (side, other, wheel, idle_from) = self.split(dir);
        if side.waiting_since.is_none() {
            if side.timeout.is_none() && idle.is_none() {
                return Poll::Pending;
            }
            let now = Instant::now();
            side.waiting_since = Some(now);
            let from = *idle_from.get_or_insert(now);
            side.arm(wheel, idle, Some(from));
        }
        let Some(sleep) = side.sleep.as_mut() else {
            return Poll::Pending;
        };
        if Pin::new(sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        side.waiting_since = None;
        let on_idle = side.on_idle;
        if on_idle || other.waiting_since.is_none() {
            // The next wait starts a new idle stretch (as in `done`): after a
            // read or write timeout nothing may be waiting, and a task busy
            // elsewhere meanwhile does not make its peer idle.
            *idle_from = None;
        }
        Poll::Ready(timed_out(dir, on_idle))
    }

    /// An operation of `dir` completed; `moved`: it moved bytes.
    fn done(&mut self, dir: Dir, moved: bool) {
        let idle = self.idle;
        let (side, other, wheel, idle_from) = self.split(dir);
        side.waiting_since = None;
        if other.waiting_since.is_none() {
            // Nothing waits: the next wait starts the idle count.
            *idle_from = None;
        } else if moved && idle.is_some() {
            // The other side waits, maybe in another task: its idle count
            // starts over now. A later deadline: the reset is cheap.
            let now = Instant::now();
            *idle_from = Some(now);
            if other.on_idle {
                other.arm(wheel, idle, Some(now));
            }
        }
    }

    /// [`done`](Self::done) or [`poll_pending`](Self::poll_pending),
    /// after an operation of `dir` returned `poll`.
    fn after<T>(
        &mut self,
        dir: Dir,
        poll: Poll<io::Result<T>>,
        moved: impl FnOnce(&T) -> bool,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match poll {
            Poll::Ready(res) => {
                let moved = res.as_ref().is_ok_and(moved);
                self.done(dir, moved);
                Poll::Ready(res)
            }
            Poll::Pending => self.poll_pending(dir, cx).map(Err),
        }
    }

    /// A timeout changed: a side that waits takes the new values, counted
    /// from when it began waiting (or from the change, if `set` restarted
    /// its count).
    fn rearm(&mut self) {
        let idle = self.idle;
        let (read, write, wheel, idle_from) = self.split(Dir::Read);
        read.arm(wheel, idle, *idle_from);
        write.arm(wheel, idle, *idle_from);
        if self.read.waiting_since.is_none() && self.write.waiting_since.is_none() {
            self.idle_from = None;
        }
    }

    /// Sets a timeout. `restart`: a wait it applies to counts from now, not
    /// from when it began (the pinned setters, as tokio-io-timeout's).
    fn set(&mut self, which: Which, timeout: Option<Duration>, restart: bool) {
        let count = match which {
            Which::Read => {
                self.read.timeout = timeout;
                &mut self.read.waiting_since
            }
            Which::Write => {
                self.write.timeout = timeout;
                &mut self.write.waiting_since
            }
            Which::Idle => {
                self.idle = timeout;
                &mut self.idle_from
            }
        };
        if restart {
            if let Some(since) = count {
                // `Some` only while something waits on a timer.
                *since = Instant::now();
            }
        }
        self.rearm();
    }
}

#[derive(Clone, Copy)]
enum Which {
    Read,
    Write,
    Idle,
}

fn timed_out(dir: Dir, idle: bool) -> io::Error {
    let msg = match (dir, idle) {
        (_, true) => "stream idle for longer than its idle timeout",
        (Dir::Read, false) => "read timed out",
        (Dir::Write, false) => "write timed out",
    };
    io::Error::new(io::ErrorKind::TimedOut, msg)
}

impl<S> TimeoutStream<S> {
    /// Wraps `stream`, with its timers on `wheel`. No timeout is set: set
    /// them with the `with_` or `set_` methods.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio_wheel::{io::TimeoutStream, Wheel};
    ///
    /// let wheel = Wheel::new();
    /// let (stream, _peer) = tokio::io::duplex(64);
    /// let stream = TimeoutStream::new(stream, &wheel);
    /// assert_eq!(stream.read_timeout(), None);
    /// assert_eq!(stream.write_timeout(), None);
    /// assert_eq!(stream.idle_timeout(), None);
    /// # }
    /// ```
    pub fn new(stream: S, wheel: &Wheel) -> TimeoutStream<S> {
        TimeoutStream {
            stream,
            timers: Timers::new(wheel),
        }
    }

    /// The read timeout; `None` when reads may wait forever.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_read_timeout(Some(Duration::from_secs(5)));
    /// assert_eq!(stream.read_timeout(), Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn read_timeout(&self) -> Option<Duration> {
        self.timers.read.timeout
    }

    /// The write timeout; `None` when writes may wait forever.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_write_timeout(Some(Duration::from_secs(5)));
    /// assert_eq!(stream.write_timeout(), Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn write_timeout(&self) -> Option<Duration> {
        self.timers.write.timeout
    }

    /// The idle timeout; `None` when the stream may stay idle forever.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_idle_timeout(Some(Duration::from_secs(60)));
    /// assert_eq!(stream.idle_timeout(), Some(Duration::from_secs(60)));
    /// # }
    /// ```
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.timers.idle
    }

    /// Sets the read timeout, builder style. See
    /// [`set_read_timeout`](Self::set_read_timeout).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_read_timeout(Some(Duration::from_secs(5)));
    /// # drop(stream);
    /// # }
    /// ```
    #[must_use = "the stream is returned with the timeout set"]
    pub fn with_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.set_read_timeout(timeout);
        self
    }

    /// Sets the write timeout, builder style. See
    /// [`set_write_timeout`](Self::set_write_timeout).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_write_timeout(Some(Duration::from_secs(5)));
    /// # drop(stream);
    /// # }
    /// ```
    #[must_use = "the stream is returned with the timeout set"]
    pub fn with_write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.set_write_timeout(timeout);
        self
    }

    /// Sets the idle timeout, builder style. See
    /// [`set_idle_timeout`](Self::set_idle_timeout).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel)
    ///     .with_idle_timeout(Some(Duration::from_secs(60)));
    /// # drop(stream);
    /// # }
    /// ```
    #[must_use = "the stream is returned with the timeout set"]
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.set_idle_timeout(timeout);
        self
    }

    /// Sets the read timeout; `None` turns it off. A read already waiting on a
    /// timer takes the new value at once, counted from when it began
    /// waiting; otherwise the value applies from the next poll.
    /// [`set_read_timeout_pinned`](Self::set_read_timeout_pinned) counts it
    /// from the change instead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel);
    /// stream.set_read_timeout(Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.timers.set(Which::Read, timeout, false);
    }

    /// Sets the write timeout; `None` turns it off. A write already waiting on a
    /// timer takes the new value at once, counted from when it began
    /// waiting; otherwise the value applies from the next poll.
    /// [`set_write_timeout_pinned`](Self::set_write_timeout_pinned) counts it
    /// from the change instead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel);
    /// stream.set_write_timeout(Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.timers.set(Which::Write, timeout, false);
    }

    /// Sets the idle timeout; `None` turns it off. A read or write already
    /// waiting on a timer takes the new value at once, counted from the start
    /// of the idle stretch; otherwise the value applies from the next poll.
    /// [`set_idle_timeout_pinned`](Self::set_idle_timeout_pinned) counts it
    /// from the change instead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = tokio_wheel::io::TimeoutStream::new(stream, &wheel);
    /// stream.set_idle_timeout(Some(Duration::from_secs(60)));
    /// # }
    /// ```
    pub fn set_idle_timeout(&mut self, timeout: Option<Duration>) {
        self.timers.set(Which::Idle, timeout, false);
    }

    /// Sets the read timeout of a pinned stream; `None` turns it off. A read
    /// already waiting takes the new value at once, counted from this call,
    /// as `tokio_io_timeout::TimeoutStream::set_read_timeout_pinned` does
    /// (the count restarts even if the value is the same);
    /// [`set_read_timeout`](Self::set_read_timeout) keeps counting from when
    /// the read began to wait. With no read waiting on a timer, the value
    /// applies from the next poll.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = Box::pin(tokio_wheel::io::TimeoutStream::new(stream, &wheel));
    /// stream.as_mut().set_read_timeout_pinned(Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn set_read_timeout_pinned(self: Pin<&mut Self>, timeout: Option<Duration>) {
        self.project().timers.set(Which::Read, timeout, true);
    }

    /// Sets the write timeout of a pinned stream; `None` turns it off. A
    /// write already waiting takes the new value at once, counted from this
    /// call, as `tokio_io_timeout::TimeoutStream::set_write_timeout_pinned`
    /// does; [`set_write_timeout`](Self::set_write_timeout) keeps counting
    /// from when the write began to wait.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = Box::pin(tokio_wheel::io::TimeoutStream::new(stream, &wheel));
    /// stream.as_mut().set_write_timeout_pinned(Some(Duration::from_secs(5)));
    /// # }
    /// ```
    pub fn set_write_timeout_pinned(self: Pin<&mut Self>, timeout: Option<Duration>) {
        self.project().timers.set(Which::Write, timeout, true);
    }

    /// Sets the idle timeout of a pinned stream; `None` turns it off. A read
    /// or write already waiting takes the new value at once, counted from
    /// this call, like the other pinned setters;
    /// [`set_idle_timeout`](Self::set_idle_timeout) keeps counting from the
    /// start of the idle stretch.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let (stream, _peer) = tokio::io::duplex(64);
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = Box::pin(tokio_wheel::io::TimeoutStream::new(stream, &wheel));
    /// stream.as_mut().set_idle_timeout_pinned(Some(Duration::from_secs(60)));
    /// # }
    /// ```
    pub fn set_idle_timeout_pinned(self: Pin<&mut Self>, timeout: Option<Duration>) {
        self.project().timers.set(Which::Idle, timeout, true);
    }

    /// The inner stream.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(std::io::Cursor::new(vec![1, 2]), &wheel);
    /// assert_eq!(stream.get_ref().get_ref(), &[1, 2]);
    /// # }
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The inner stream, mutably. Reading or writing it directly bypasses
    /// the timeouts.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let wheel = tokio_wheel::Wheel::new();
    /// let mut stream = tokio_wheel::io::TimeoutStream::new(std::io::Cursor::new(vec![1, 2]), &wheel);
    /// stream.get_mut().set_position(1);
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The inner stream, pinned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let wheel = tokio_wheel::Wheel::new();
    /// let (stream, _peer) = tokio::io::duplex(64);
    /// let mut stream = Box::pin(tokio_wheel::io::TimeoutStream::new(stream, &wheel));
    /// let _inner: std::pin::Pin<&mut tokio::io::DuplexStream> = stream.as_mut().get_pin_mut();
    /// # }
    /// ```
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
        self.project().stream
    }

    /// The inner stream, without the timeouts. Their timers are cancelled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let wheel = tokio_wheel::Wheel::new();
    /// let stream = tokio_wheel::io::TimeoutStream::new(std::io::Cursor::new(vec![1, 2]), &wheel);
    /// assert_eq!(stream.into_inner().into_inner(), vec![1, 2]);
    /// # }
    /// ```
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: AsyncRead> AsyncRead for TimeoutStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let poll = this.stream.poll_read(cx, buf);
        let filled = buf.filled().len();
        this.timers.after(Dir::Read, poll, |()| filled > before, cx)
    }
}

impl<S: AsyncWrite> AsyncWrite for TimeoutStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let poll = this.stream.poll_write(cx, buf);
        this.timers.after(Dir::Write, poll, |&n| n > 0, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let poll = this.stream.poll_write_vectored(cx, bufs);
        this.timers.after(Dir::Write, poll, |&n| n > 0, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// A flush moves no bytes of its own (callers such as hyper flush on
    /// every wake-up): it is timed as a write, but does not count as activity
    /// for the idle timeout.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let poll = this.stream.poll_flush(cx);
        this.timers.after(Dir::Write, poll, |()| false, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let poll = this.stream.poll_shutdown(cx);
        this.timers.after(Dir::Write, poll, |()| false, cx)
    }
}

impl<S: AsyncBufRead> AsyncBufRead for TimeoutStream<S> {
    /// Timed as a read. Bytes count as activity for the idle timeout when
    /// they are consumed.
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.project();
        match this.stream.poll_fill_buf(cx) {
            Poll::Ready(res) => {
                this.timers.done(Dir::Read, false);
                Poll::Ready(res)
            }
            Poll::Pending => this.timers.poll_pending(Dir::Read, cx).map(Err),
        }
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.project();
        this.stream.consume(amt);
        if amt > 0 {
            this.timers.done(Dir::Read, true);
        }
    }
}

/// Passed through to the inner stream, untimed: a seek is neither a read
/// nor a write, and does not count as activity for the idle timeout.
impl<S: AsyncSeek> AsyncSeek for TimeoutStream<S> {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        self.project().stream.start_seek(position)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        self.project().stream.poll_complete(cx)
    }
}

impl<S: fmt::Debug> fmt::Debug for TimeoutStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutStream")
            .field("stream", &self.stream)
            .field("read_timeout", &self.timers.read.timeout)
            .field("write_timeout", &self.timers.write.timeout)
            .field("idle_timeout", &self.timers.idle)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Side, TimeoutStream};
    use crate::Wheel;

    #[test]
    fn unpin_send_sync() {
        fn check<T: Unpin + Send + Sync>() {}
        check::<TimeoutStream<tokio::io::DuplexStream>>();
    }

    /// A timeout longer than about 30 years waits as long as a wheel sleep
    /// of that duration, clamped to about 30 years as `Wheel::sleep` does,
    /// not for the exact duration (which it did, on its own copy of the
    /// rule).
    #[test]
    fn long_timeouts_are_clamped_as_sleeps_are() {
        let wheel = Wheel::new();
        let since = Instant::now();
        let year = Duration::from_secs(86_400 * 365);
        for timeout in [year * 100, Duration::MAX, year] {
            let mut side = Side::new();
            side.timeout = Some(timeout);
            side.waiting_since = Some(since);
            side.arm(&wheel, None, None);
            let armed = side.sleep.as_ref().expect("armed").deadline();
            assert_eq!(armed, crate::clock::deadline_after(since, timeout));
            assert!(
                armed - since <= year * 30,
                "{timeout:?}: {:?}",
                armed - since
            );
        }
    }
}
