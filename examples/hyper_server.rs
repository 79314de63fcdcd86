//! A hyper 1 HTTP/1 server whose timeouts are on a tokio-wheel `Wheel`:
//! hyper's header-read timeout (through `HyperTimer`), and an idle timeout on
//! each connection's socket (through `io::TimeoutStream`).
//!
//! ```sh
//! cargo run -p examples --example hyper_server --features hyper            # a free port
//! cargo run -p examples --example hyper_server --features hyper -- 8080    # port 8080
//! ```
//!
//! Then `curl http://127.0.0.1:PORT/` answers, and a client that connects
//! and sends nothing (`nc 127.0.0.1 PORT`) is disconnected after 5 s.
//! Ctrl-C prints the wheel's counters and stops.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_wheel::hyper::HyperTimer;
use tokio_wheel::io::TimeoutStream;
use tokio_wheel::Wheel;

/// How long a client may take to send a request's header, on a new
/// connection or between requests on a kept-alive one.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may move no byte at all while it waits, e.g. a
/// client that stops reading its response.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello from tokio-wheel: {} {}\n", req.method(), req.uri());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::args().nth(1) {
        Some(arg) => arg.parse().map_err(|_| format!("not a port: {arg}"))?,
        None => 0,
    };
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!(
        "listening on http://{} (header read timeout {:?}, idle timeout {:?}, keep-alive on); \
         Ctrl-C to stop",
        listener.local_addr()?,
        HEADER_READ_TIMEOUT,
        IDLE_TIMEOUT,
    );

    // One wheel for every connection's timers.
    let wheel = Wheel::new();
    let accept = async {
        loop {
            let (tcp, peer) = listener.accept().await?;
            let stream = TimeoutStream::new(tcp, &wheel).with_idle_timeout(Some(IDLE_TIMEOUT));
            let timer = HyperTimer::new(&wheel);
            tokio::spawn(async move {
                let served = http1::Builder::new()
                    .timer(timer)
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await;
                match served {
                    Ok(()) => println!("{peer}: connection closed"),
                    Err(err) if err.is_timeout() => {
                        println!("{peer}: no request header within {HEADER_READ_TIMEOUT:?}, closed")
                    }
                    Err(err) => println!("{peer}: connection failed: {err}"),
                }
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    };
    tokio::select! {
        res = accept => res?,
        res = tokio::signal::ctrl_c() => res?,
    }
    let stats = wheel.stats();
    println!(
        "stopping: {} timers registered, {} cancelled, {} fired, {} pending",
        stats.registered, stats.cancelled, stats.fired, stats.pending
    );
    Ok(())
}
