//! `tokio_wheel::io::TimeoutStream`: read, write and idle timeouts on
//! `tokio::io::duplex` with paused time, and on a real TCP connection.

use std::future::poll_fn;
use std::io::ErrorKind;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{
    duplex, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream,
    ReadBuf,
};
use tokio::time::{advance, Instant};
use tokio_test::task::spawn;
use tokio_wheel::io::TimeoutStream;
use tokio_wheel::Wheel;

const TICK: Duration = Duration::from_millis(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn wheel() -> Wheel {
    Wheel::builder().tick(TICK).build().unwrap()
}

/// `elapsed` is at or after `deadline`, and at most one tick after it.
#[track_caller]
fn within_a_tick(elapsed: Duration, deadline: Duration) {
    assert!(elapsed >= deadline, "early: {elapsed:?} < {deadline:?}");
    assert!(
        elapsed <= deadline + TICK,
        "more than a tick late: {elapsed:?} > {deadline:?} + {TICK:?}"
    );
}

/// Polls one read of `stream` once, so that it starts waiting.
async fn poll_read_once<S: AsyncRead + Unpin>(stream: &mut S) -> Poll<std::io::Result<()>> {
    let mut buf = [0; 8];
    let mut buf = ReadBuf::new(&mut buf);
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *stream).poll_read(cx, &mut buf))).await
}

#[tokio::test(start_paused = true)]
async fn read_timeout_fires_at_the_deadline_and_not_before() {
    let wheel = wheel();
    let (_client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(100)));
    let start = Instant::now();
    let mut read = spawn(async move {
        let mut buf = [0; 8];
        server.read(&mut buf).await
    });
    assert!(read.poll().is_pending());

    advance(ms(99)).await;
    assert!(read.poll().is_pending(), "fired before the deadline");

    // At most one tick late: by then the wheel has woken the task.
    advance(ms(1) + TICK).await;
    assert!(read.is_woken(), "not woken within a tick of the deadline");
    match read.poll() {
        Poll::Ready(Err(err)) => assert_eq!(err.kind(), ErrorKind::TimedOut),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(start.elapsed() <= ms(100) + TICK);
}

#[tokio::test(start_paused = true)]
async fn read_timeout_counts_from_the_wait_and_progress_resets_it() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(100)));
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(ms(60)).await;
        client.write_all(b"x").await.unwrap();
        tokio::time::sleep(ms(80)).await;
        client.write_all(b"y").await.unwrap();
        client
    });
    let mut buf = [0; 8];
    // Two reads that each wait less than the timeout, 140 ms in all.
    assert_eq!(server.read(&mut buf).await.unwrap(), 1);
    assert_eq!(server.read(&mut buf).await.unwrap(), 1);
    assert_eq!(start.elapsed(), ms(140));
    let _client = writer.await.unwrap();
    // Then nothing: the third read fails 100 ms after it began to wait.
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(240));
}

#[tokio::test(start_paused = true)]
async fn stream_stays_usable_after_a_timeout() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(100)));
    let mut buf = [0; 5];
    for round in 1..=3 {
        let start = Instant::now();
        let err = server.read_exact(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut, "round {round}");
        within_a_tick(start.elapsed(), ms(100));
    }
    client.write_all(b"hello").await.unwrap();
    server.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"hello");
}

/// Bytes that arrive after the timer fired but before the read is polled
/// are returned, not replaced by the timeout.
#[tokio::test(start_paused = true)]
async fn data_that_arrived_is_read_even_past_the_deadline() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(100)));
    let mut read = spawn(async move {
        let mut server = server;
        let mut buf = [0; 5];
        let res = server.read_exact(&mut buf).await.map(|_| buf);
        (server, res)
    });
    assert!(read.poll().is_pending());
    advance(ms(100) + TICK).await;
    assert!(read.is_woken(), "the timer should have fired");
    client.write_all(b"hello").await.unwrap();
    let Poll::Ready((mut server, res)) = read.poll() else {
        panic!("the read should complete");
    };
    assert_eq!(&res.unwrap(), b"hello");

    // Written before a read that then waited and timed out: still there.
    let mut buf = [0; 3];
    let err = server.read_exact(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    client.write_all(b"abc").await.unwrap();
    tokio::time::sleep(ms(500)).await;
    server.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"abc");
}

#[tokio::test(start_paused = true)]
async fn write_timeout_with_a_full_buffer() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_write_timeout(Some(ms(100)));
    let block = [7; 64];
    server.write_all(&block).await.unwrap();

    // The peer reads nothing: the buffer is full, the write waits.
    let start = Instant::now();
    let mut write = spawn(async move {
        let res = server.write_all(b"more").await;
        (server, res)
    });
    assert!(write.poll().is_pending());
    advance(ms(99)).await;
    assert!(write.poll().is_pending(), "fired before the deadline");
    advance(ms(1) + TICK).await;
    let Poll::Ready((mut server, res)) = write.poll() else {
        panic!("not timed out within a tick of the deadline");
    };
    assert_eq!(res.unwrap_err().kind(), ErrorKind::TimedOut);
    assert!(start.elapsed() <= ms(100) + TICK);

    // Nothing written was lost, and the stream still writes.
    let mut got = [0; 64];
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(got, block);
    server.write_all(b"more").await.unwrap();
    let mut got = [0; 4];
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"more");
}

#[tokio::test(start_paused = true)]
async fn vectored_writes_are_forwarded_and_timed() {
    let wheel = wheel();
    let (mut client, server) = duplex(8);
    let mut server = TimeoutStream::new(server, &wheel).with_write_timeout(Some(ms(100)));
    use tokio::io::AsyncWrite;
    assert_eq!(
        AsyncWrite::is_write_vectored(&server),
        AsyncWrite::is_write_vectored(server.get_ref())
    );
    let bufs = [
        std::io::IoSlice::new(b"abcd"),
        std::io::IoSlice::new(b"efgh"),
    ];
    let mut written = 0;
    while written < 8 {
        written += server.write_vectored(&bufs).await.unwrap();
    }
    let start = Instant::now();
    let err = server.write_vectored(&bufs).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(100));
    let mut got = [0; 8];
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"abcdefgh");
}

#[tokio::test(start_paused = true)]
async fn write_timeout_times_flush_and_shutdown_too() {
    let wheel = wheel();
    let (_client, server) = duplex(4);
    // A buffered writer: its flush is what waits on the full pipe.
    let server = tokio::io::BufWriter::new(server);
    let mut server = TimeoutStream::new(server, &wheel).with_write_timeout(Some(ms(100)));
    // Buffered: the write completes, the flush cannot.
    server.write_all(b"0123456789").await.unwrap();
    let start = Instant::now();
    let err = server.flush().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(100));
    let start = Instant::now();
    let err = server.shutdown().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(100));
}

#[tokio::test(start_paused = true)]
async fn idle_timeout_without_traffic() {
    let wheel = wheel();
    let (_client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_idle_timeout(Some(ms(100)));
    let start = Instant::now();
    let mut buf = [0; 8];
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(100));
}

/// A write that moves bytes pushes back the idle timeout of a read that
/// waits in another task; flushes that move nothing do not.
#[tokio::test(start_paused = true)]
async fn idle_timeout_is_reset_by_traffic_in_either_direction() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let server = TimeoutStream::new(server, &wheel)
        .with_idle_timeout(Some(ms(100)))
        .with_read_timeout(Some(ms(1000)));
    let (mut rd, mut wr) = tokio::io::split(server);
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        // At 30 ms, bytes go out: the reader's idle time starts over.
        tokio::time::sleep(ms(30)).await;
        wr.write_all(b"ping").await.unwrap();
        // Flushes move no bytes: they do not count.
        for _ in 0..3 {
            tokio::time::sleep(ms(30)).await;
            wr.flush().await.unwrap();
        }
        wr
    });
    let mut buf = [0; 8];
    let err = rd.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(130));
    let _wr = writer.await.unwrap();
    client.read_exact(&mut buf[..4]).await.unwrap();
    assert_eq!(&buf[..4], b"ping");
}

/// Reads that keep completing keep the stream from going idle, however long
/// it lives; once the peer stops, the idle timeout fires.
#[tokio::test(start_paused = true)]
async fn idle_timeout_spans_many_reads() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_idle_timeout(Some(ms(100)));
    let writer = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(ms(60)).await;
            client.write_all(b"x").await.unwrap();
        }
        client
    });
    let mut buf = [0; 1];
    for _ in 0..20 {
        server.read_exact(&mut buf).await.unwrap();
    }
    let last = Instant::now();
    let err = server.read_exact(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(last.elapsed(), ms(100));
    drop(writer.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn changing_a_timeout_while_a_read_waits() {
    let wheel = wheel();
    let (_client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(10_000)));
    let start = Instant::now();
    assert!(poll_read_once(&mut server).await.is_pending());
    advance(ms(30)).await;
    // Shorter: counted from when the read began to wait.
    server.set_read_timeout(Some(ms(100)));
    assert_eq!(server.read_timeout(), Some(ms(100)));
    let mut buf = [0; 8];
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(100));

    // Off: the read waits for as long as it takes, and the timer is gone.
    assert!(poll_read_once(&mut server).await.is_pending());
    assert_eq!(wheel.pending(), 1);
    server.set_read_timeout(None);
    assert_eq!(wheel.pending(), 0);
    let res = tokio::time::timeout(ms(5_000), server.read(&mut buf)).await;
    assert!(res.is_err(), "a read without timeout failed: {res:?}");
}

/// The pinned setters restart the count of a wait from the change, as
/// tokio-io-timeout's do; the others count from when the wait began (above).
#[tokio::test(start_paused = true)]
async fn changing_a_timeout_of_a_pinned_stream_restarts_the_count() {
    let wheel = wheel();
    let mut buf = [0; 8];

    // Read: shorter, from the change.
    let (_client, server) = duplex(64);
    let mut server =
        Box::pin(TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(10_000))));
    assert!(poll_read_once(&mut server).await.is_pending());
    advance(ms(30)).await;
    server.as_mut().set_read_timeout_pinned(Some(ms(100)));
    let changed = Instant::now();
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(changed.elapsed(), ms(100));

    // The same value again still restarts the count.
    assert!(poll_read_once(&mut server).await.is_pending());
    advance(ms(80)).await;
    server.as_mut().set_read_timeout_pinned(Some(ms(100)));
    let changed = Instant::now();
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(changed.elapsed(), ms(100));

    // Write, into a full buffer: longer, from the change.
    let (_client, server) = duplex(4);
    let mut server = Box::pin(TimeoutStream::new(server, &wheel).with_write_timeout(Some(ms(100))));
    server.write_all(b"full").await.unwrap();
    let wait = poll_fn(|cx| {
        Poll::Ready(tokio::io::AsyncWrite::poll_write(
            server.as_mut(),
            cx,
            b"more",
        ))
    })
    .await;
    assert!(wait.is_pending());
    advance(ms(60)).await;
    server.as_mut().set_write_timeout_pinned(Some(ms(200)));
    let changed = Instant::now();
    let err = server.write_all(b"more").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(changed.elapsed(), ms(200));

    // Idle: from the change too.
    let (_client, server) = duplex(64);
    let mut server = Box::pin(TimeoutStream::new(server, &wheel).with_idle_timeout(Some(ms(500))));
    assert!(poll_read_once(&mut server).await.is_pending());
    advance(ms(400)).await;
    server.as_mut().set_idle_timeout_pinned(Some(ms(300)));
    let changed = Instant::now();
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(changed.elapsed(), ms(300));
}

/// `AsyncSeek` is passed through, untimed, as tokio-io-timeout does.
#[tokio::test(start_paused = true)]
async fn seeks_are_passed_through() {
    use std::io::{Cursor, SeekFrom};
    use tokio::io::AsyncSeekExt;

    let wheel = wheel();
    let inner = Cursor::new(b"hello world".to_vec());
    let mut stream = TimeoutStream::new(inner, &wheel).with_read_timeout(Some(ms(100)));
    assert_eq!(stream.seek(SeekFrom::Start(6)).await.unwrap(), 6);
    let mut word = String::new();
    stream.read_to_string(&mut word).await.unwrap();
    assert_eq!(word, "world");
    assert_eq!(stream.seek(SeekFrom::Current(-11)).await.unwrap(), 0);
    assert_eq!(stream.seek(SeekFrom::End(-5)).await.unwrap(), 6);
    assert_eq!(stream.get_ref().position(), 6);
    // A seek before the start fails as the inner stream's does.
    let err = stream.seek(SeekFrom::Current(-7)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(wheel.stats().registered, 0, "a seek arms no timer");
}

#[tokio::test(start_paused = true)]
async fn no_timeout_set_waits_forever() {
    let wheel = wheel();
    let (_client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel);
    let mut buf = [0; 8];
    let res = tokio::time::timeout(Duration::from_secs(3600), server.read(&mut buf)).await;
    assert!(res.is_err());
    assert_eq!(wheel.stats().registered, 0, "no timer without a timeout");
}

/// One `Sleep` per direction, re-armed: a thousand waits register one timer.
#[tokio::test(start_paused = true)]
async fn one_timer_per_direction_reused() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel).with_read_timeout(Some(ms(1000)));
    let writer = tokio::spawn(async move {
        for _ in 0..1000 {
            tokio::time::sleep(ms(1)).await;
            client.write_all(b"x").await.unwrap();
        }
        client
    });
    let mut buf = [0; 1];
    for _ in 0..1000 {
        server.read_exact(&mut buf).await.unwrap();
    }
    drop(writer.await.unwrap());
    let stats = wheel.stats();
    assert_eq!(stats.registered, 1, "{stats:?}");
    assert_eq!(stats.fired, 0, "{stats:?}");
}

#[tokio::test(start_paused = true)]
async fn buf_read_is_timed_as_a_read() {
    let wheel = wheel();
    let (mut client, server) = duplex(64);
    let mut server =
        TimeoutStream::new(BufReader::new(server), &wheel).with_read_timeout(Some(ms(100)));
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(ms(60)).await;
        client.write_all(b"first\nsecond").await.unwrap();
        client
    });
    let mut line = String::new();
    server.read_line(&mut line).await.unwrap();
    assert_eq!(line, "first\n");
    assert_eq!(start.elapsed(), ms(60));
    // "second" has no end of line: `fill_buf` waits, and times out.
    assert_eq!(server.fill_buf().await.unwrap(), b"second");
    Pin::new(&mut server).consume(6);
    let err = server.fill_buf().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    within_a_tick(start.elapsed(), ms(160));
    let mut client = writer.await.unwrap();
    client.write_all(b"third\n").await.unwrap();
    line.clear();
    server.read_line(&mut line).await.unwrap();
    assert_eq!(line, "third\n");
}

#[test]
fn send_sync_unpin() {
    fn check<T: Send + Sync + Unpin>() {}
    check::<TimeoutStream<DuplexStream>>();
    check::<TimeoutStream<BufReader<tokio::net::TcpStream>>>();
}

/// A real socket, wall clock: never early, loosely on time.
#[tokio::test]
async fn tcp_read_timeout() {
    let wheel = Wheel::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    let mut server = TimeoutStream::new(server, &wheel)
        .with_read_timeout(Some(ms(200)))
        .with_write_timeout(Some(ms(200)));
    assert!(tokio::io::AsyncWrite::is_write_vectored(&server));

    client.write_all(b"ping").await.unwrap();
    let mut buf = [0; 4];
    server.read_exact(&mut buf).await.unwrap();
    server.write_all(b"pong").await.unwrap();
    client.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong");

    let start = std::time::Instant::now();
    let err = server.read(&mut buf).await.unwrap_err();
    let elapsed = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::TimedOut);
    assert!(elapsed >= ms(200), "early: {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "far too late: {elapsed:?}"
    );

    // Still connected.
    client.write_all(b"more").await.unwrap();
    server.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"more");
}

/// After a read timeout nothing waits on the stream: a task busy elsewhere
/// for longer than the idle timeout does not make its next read fail at
/// once as idle.
#[tokio::test(start_paused = true)]
async fn a_read_after_a_read_timeout_and_a_pause_is_not_idle_at_once() {
    let wheel = Wheel::builder().tick(ms(10)).build().unwrap();
    let (_client, server) = duplex(64);
    let mut server = TimeoutStream::new(server, &wheel)
        .with_read_timeout(Some(ms(50)))
        .with_idle_timeout(Some(ms(100)));
    let mut buf = [0u8; 4];
    let err = server.read(&mut buf).await.unwrap_err();
    assert_eq!(err.to_string(), "read timed out");
    // Busy elsewhere.
    tokio::time::sleep(ms(200)).await;
    let start = Instant::now();
    let err = server.read(&mut buf).await.unwrap_err();
    assert!(
        start.elapsed() >= ms(50),
        "the read failed after waiting {:?}: {err}",
        start.elapsed()
    );
}
