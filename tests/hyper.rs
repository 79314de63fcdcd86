//! `tokio_wheel::hyper::HyperTimer` under a real hyper 1 HTTP/1 server on
//! 127.0.0.1: the header-read timeout cuts off a slow client on the wheel's
//! timer, never early, and normal requests are served.
#![cfg(feature = "hyper")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_wheel::hyper::HyperTimer;
use tokio_wheel::Wheel;

const HEADER_READ_TIMEOUT: Duration = Duration::from_millis(300);

async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"hello"))))
}

/// A server on the wheel's timer; each connection's outcome is sent on the
/// channel (`Err` carries whether hyper reports a timeout).
async fn serve(wheel: &Wheel) -> (SocketAddr, mpsc::UnboundedReceiver<Result<(), bool>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let wheel = wheel.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let timer = HyperTimer::new(&wheel);
            let tx = tx.clone();
            tokio::spawn(async move {
                let served = http1::Builder::new()
                    .timer(timer)
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(tcp), service_fn(hello))
                    .await;
                let _ = tx.send(served.map_err(|e| e.is_timeout()));
            });
        }
    });
    (addr, rx)
}

/// Reads until the server closes, or fails after `limit`.
async fn read_until_closed(tcp: &mut TcpStream, limit: Duration) -> (Vec<u8>, Instant) {
    let mut got = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buf = [0; 1024];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server did not close within {limit:?}");
    (got, Instant::now())
}

#[tokio::test]
async fn half_a_header_is_cut_off_after_the_header_read_timeout() {
    let wheel = Wheel::new();
    let (addr, mut outcomes) = serve(&wheel).await;

    // Before the connect: the server's timer cannot start earlier.
    let sent = Instant::now();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let (got, closed) = read_until_closed(&mut tcp, Duration::from_secs(10)).await;
    let elapsed = closed - sent;
    // hyper 1 closes the connection without a response on this timeout.
    assert!(
        got.is_empty(),
        "unexpected response: {:?}",
        String::from_utf8_lossy(&got)
    );
    // Never early, and not far late.
    assert!(elapsed >= HEADER_READ_TIMEOUT, "cut off early: {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "cut off late: {elapsed:?}"
    );
    assert_eq!(outcomes.recv().await, Some(Err(true)), "not a timeout");

    let stats = wheel.stats();
    assert!(stats.registered > 0, "the wheel saw no timer: {stats:?}");
    assert!(stats.fired > 0, "the wheel fired no timer: {stats:?}");
}

#[tokio::test]
async fn a_normal_client_gets_200_and_keeps_the_connection() {
    let wheel = Wheel::new();
    let (addr, mut outcomes) = serve(&wheel).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();

    // Two requests on one kept-alive connection.
    let mut idle_from = Instant::now();
    for _ in 0..2 {
        // Before the last request: the server's timer for the next header
        // starts after its response, so never before this.
        idle_from = Instant::now();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0; 4096];
        let mut got = Vec::new();
        while !got.ends_with(b"hello") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(got).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    }

    // Then silent: the next request's header never comes, and the
    // connection is closed after the header-read timeout.
    let (got, closed) = read_until_closed(&mut tcp, Duration::from_secs(10)).await;
    assert!(got.is_empty());
    let elapsed = closed - idle_from;
    assert!(elapsed >= HEADER_READ_TIMEOUT, "cut off early: {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "cut off late: {elapsed:?}"
    );
    assert_eq!(outcomes.recv().await, Some(Err(true)));
}

#[tokio::test]
async fn a_client_that_closes_is_not_a_timeout() {
    let wheel = Wheel::new();
    let (addr, mut outcomes) = serve(&wheel).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (got, _) = read_until_closed(&mut tcp, Duration::from_secs(10)).await;
    let text = String::from_utf8(got).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("hello"), "{text}");
    assert_eq!(outcomes.recv().await, Some(Ok(())));
    // The header timer was cancelled, not fired.
    assert_eq!(wheel.stats().fired, 0);
}

/// With paused time, hyper reads the clock through the timer's `now`, so
/// the header-read timeout follows Tokio's clock: deterministic to the tick.
#[tokio::test(start_paused = true)]
async fn paused_time_drives_the_header_read_timeout() {
    let wheel = Wheel::builder()
        .tick(Duration::from_millis(10))
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(1024);
    // Tokio's clock an hour ahead of the system's: a timer reading the
    // system clock would time out at once.
    tokio::time::advance(Duration::from_secs(3600)).await;
    let start = tokio::time::Instant::now();
    let conn = tokio::spawn(
        http1::Builder::new()
            .timer(HyperTimer::new(&wheel))
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(TokioIo::new(server), service_fn(hello)),
    );
    let mut client = client;
    client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let err = conn.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err}");
    let elapsed = start.elapsed();
    assert!(elapsed >= HEADER_READ_TIMEOUT, "early: {elapsed:?}");
    assert!(
        elapsed <= HEADER_READ_TIMEOUT + Duration::from_millis(10),
        "more than a tick late: {elapsed:?}"
    );
}
