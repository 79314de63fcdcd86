//! One variant's run: runtimes, connections, samples at the phase
//! boundaries.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::conn::{client, counted, serve, serve_biased, Phases, Shared, SERVER_POLLS};
use crate::measure::{
    live_bytes, load_average, open_file_limit, rss_bytes, threads_cpu, threads_switches, Hist,
    MachineCpu,
};
use crate::timers::Timers;
use crate::{Config, PADS};
use support::Rng;

/// Spawns one connection's loop (`serve` or `serve_biased`, with the cell's
/// `pad` in words) on `spawn`: one instance for each, so that every
/// connection future has the layout its cell asks for.
macro_rules! spawn_serve {
    ([$($spawn:tt)+] $T:ty, $io:expr, $sh:expr) => {{
        let (io, sh) = ($io, $sh);
        match (sh.cfg.biased, sh.cfg.pad) {
            (false, 0) => drop($($spawn)+(counted(serve::<$T, _, 0>(io, sh)))),
            (false, 16) => drop($($spawn)+(counted(serve::<$T, _, 2>(io, sh)))),
            (false, 32) => drop($($spawn)+(counted(serve::<$T, _, 4>(io, sh)))),
            (false, 48) => drop($($spawn)+(counted(serve::<$T, _, 6>(io, sh)))),
            (true, 0) => drop($($spawn)+(counted(serve_biased::<$T, _, 0>(io, sh)))),
            (true, 16) => drop($($spawn)+(counted(serve_biased::<$T, _, 2>(io, sh)))),
            (true, 32) => drop($($spawn)+(counted(serve_biased::<$T, _, 4>(io, sh)))),
            (true, 48) => drop($($spawn)+(counted(serve_biased::<$T, _, 6>(io, sh)))),
            (_, pad) => unreachable!("pad {pad}: the cell's parser takes {PADS:?} only"),
        }
    }};
}

/// What one variant measured.
#[derive(Default)]
pub struct Report {
    pub connections: usize,
    pub setup: Duration,
    pub window: Duration,
    pub round: Duration,
    pub cpu: [Duration; 3],
    pub cli_cpu: Duration,
    pub polls: [u64; 3],
    /// Times the server's threads were switched in over the window.
    pub switches: u64,
    pub heap_per_conn: f64,
    pub heap_conn: isize,
    pub heap_end: isize,
    pub rss_conn: u64,
    pub rss_end: u64,
    pub latency: [[Option<f64>; 2]; 2],
    /// Request latency p50 and p99 over the whole window.
    pub latency_all: [Option<f64>; 2],
    /// Frames per second the load generator was set to send.
    pub frames_planned: f64,
    /// CPU the rest of the machine used during the window (other
    /// processes, steal), per second of window.
    pub others_cpu: Duration,
    pub requests_answered: u64,
    pub request_timeouts: u64,
    pub heartbeat_gap: [Option<f64>; 2],
    /// Frames the server received: whole window, quiet part, expiry round.
    pub frames: [u64; 3],
    /// The 1-minute load average of the machine at the end of the window.
    pub load_average: f64,
    pub heartbeats_sent: u64,
    pub silent: usize,
    pub drops: u64,
    pub early: u64,
    pub late: u64,
    pub wrong: u64,
    pub silent_dropped: u64,
    pub client_early: u64,
    pub drop_after_idle: [Option<f64>; 2],
    pub wheel: Option<(tokio_wheel::Stats, u64)>,
    /// The wheel's stats when the window opened: what the connections'
    /// setup and the warm-up registered is not the window's.
    pub wheel_at_start: Option<tokio_wheel::Stats>,
}

/// The server runtime's flavour: current-thread, or multi-thread with a
/// number of workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workers {
    Current,
    Multi(usize),
}

pub fn runtime(name: &str, workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("failed to build a runtime")
}

/// The server's runtime. A current-thread runtime runs only inside
/// `block_on`, so it gets a thread of its own, named like the workers of a
/// multi-thread one (`srv-worker`), whose CPU time is counted the same way.
pub enum ServerRuntime {
    Multi(Runtime),
    Current {
        handle: Handle,
        stop: Option<oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

impl ServerRuntime {
    pub fn new(name: &str, workers: Workers) -> ServerRuntime {
        match workers {
            Workers::Multi(n) => ServerRuntime::Multi(runtime(name, n)),
            Workers::Current => {
                let (handle_tx, handle_rx) = std::sync::mpsc::channel();
                let (stop, stopped) = oneshot::channel::<()>();
                let thread = std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .thread_name("srv-worker")
                            .enable_all()
                            .build()
                            .expect("failed to build a current-thread runtime");
                        let _ = handle_tx.send(rt.handle().clone());
                        rt.block_on(async {
                            let _ = stopped.await;
                        });
                        rt.shutdown_timeout(Duration::from_secs(10));
                    })
                    .expect("failed to start the server thread");
                let handle = handle_rx.recv().expect("the server thread died");
                ServerRuntime::Current {
                    handle,
                    stop: Some(stop),
                    thread: Some(thread),
                }
            }
        }
    }

    pub fn handle(&self) -> &Handle {
        match self {
            ServerRuntime::Multi(rt) => rt.handle(),
            ServerRuntime::Current { handle, .. } => handle,
        }
    }

    pub fn spawn<F>(&self, f: F) -> JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle().spawn(f)
    }

    /// Runs `f` to completion from this thread. On the current-thread
    /// flavour the server thread drives the I/O and time drivers meanwhile.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        match self {
            ServerRuntime::Multi(rt) => rt.block_on(f),
            ServerRuntime::Current { handle, .. } => handle.block_on(f),
        }
    }

    pub fn shutdown(self) {
        match self {
            ServerRuntime::Multi(rt) => rt.shutdown_timeout(Duration::from_secs(10)),
            ServerRuntime::Current {
                mut stop,
                mut thread,
                ..
            } => {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
        }
    }
}

pub fn sleep_until(t: Instant) {
    std::thread::sleep(t.saturating_duration_since(Instant::now()));
}

/// Waits until the server has started `target` connections.
pub fn wait_started(sh: &Shared, target: usize) -> Result<(), String> {
    let since = Instant::now();
    while sh.started.load(Relaxed) < target {
        for error in [&sh.accept_error, &sh.connect_error] {
            if let Some(e) = error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                return Err(e);
            }
        }
        if since.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "setup stalled: {} of {target} connections up after 30 s",
                sh.started.load(Relaxed)
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

pub fn describe_io_error(e: &io::Error, what: &str, up: usize) -> String {
    if e.raw_os_error() == Some(24) || e.raw_os_error() == Some(23) {
        format!(
            "{what} failed after {up} connections: too many open files (the open-file limit, \
             `ulimit -n`, is {}). Each TCP connection takes two descriptors in this process \
             (both ends); lower --connections or raise the limit",
            open_file_limit().map_or("unknown".into(), |n| n.to_string())
        )
    } else {
        format!("{what} failed after {up} connections: {e}")
    }
}

pub fn run_variant<T: Timers>(cfg: &Config) -> Result<Report, String> {
    let srv = ServerRuntime::new("srv-worker", cfg.workers);
    // The load generator keeps 2 workers whatever the server runs on.
    let cli = runtime("cli-worker", 2);
    let sh = Arc::new(Shared::new(cfg.clone()));
    let wheel = {
        let probe = srv.spawn(async { T::wheel() });
        srv.block_on(probe).map_err(|e| e.to_string())?
    };
    // After the runtimes and the histograms: what follows is per connection.
    let heap_before = live_bytes();
    let n = cfg.connections;
    let silent = cfg.silent();
    let silent_stride = n / silent.max(1);
    // Silent clients go quiet within the first half of the time the window
    // has left after one idle timeout, so their drops fall inside it (after
    // the warm-up: counted from their start, which precedes the window's).
    let silent_span = cfg.window.saturating_sub(cfg.idle) / 2;
    let mut rng = Rng::new(cfg.seed ^ 0x51_1E47);

    let setup_start = Instant::now();
    let listener = if cfg.tcp {
        let listener = srv
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let s = sh.clone();
        srv.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        spawn_serve!([tokio::spawn] T, stream, s.clone());
                    }
                    Err(e) => {
                        let up = s.started.load(Relaxed);
                        *s.accept_error.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(describe_io_error(&e, "accept", up));
                        return;
                    }
                }
            }
        });
        Some(addr)
    } else {
        None
    };
    let mut up = 0;
    while up < n {
        let end = (up + cfg.batch).min(n);
        for id in up..end {
            let silent_after =
                (silent_stride > 0 && id % silent_stride == 0 && id / silent_stride < silent)
                    .then(|| cfg.warmup + silent_span.mul_f64(rng.unit()));
            let s = sh.clone();
            match listener {
                Some(addr) => {
                    cli.spawn(async move {
                        let created = Instant::now();
                        match TcpStream::connect(addr).await {
                            Ok(stream) => {
                                let _ = stream.set_nodelay(true);
                                client(stream, created, id, silent_after, s).await;
                            }
                            Err(e) => {
                                let up = s.started.load(Relaxed);
                                *s.connect_error.lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some(describe_io_error(&e, "connect", up));
                            }
                        }
                    });
                }
                None => {
                    let created = Instant::now();
                    let (near, far) = tokio::io::duplex(4096);
                    spawn_serve!([srv.spawn] T, far, s.clone());
                    cli.spawn(client(near, created, id, silent_after, s));
                }
            }
        }
        wait_started(&sh, end)?;
        up = end;
    }
    let setup = setup_start.elapsed();
    std::thread::sleep(cfg.warmup);

    // The window starts now; the expiry round is where the first idle
    // deadlines of all connections fall (none of it after a warm-up longer
    // than the idle timeout: the round is then empty).
    let window_start = Instant::now();
    let first = sh.at_micros(sh.first_start_us.load(Relaxed));
    let last = sh.at_micros(sh.last_start_us.load(Relaxed));
    let window_end = window_start + cfg.window;
    let round_start = (first + cfg.idle)
        .checked_sub(Duration::from_millis(250))
        .unwrap_or(first)
        .clamp(window_start, window_end);
    let round_end = (last + cfg.idle + Duration::from_millis(500)).clamp(round_start, window_end);
    let phases = Phases {
        window_start,
        round_start,
        round_end,
        window_end,
    };
    let _ = sh.phases.set(phases);
    let heap_conn = live_bytes();
    let rss_conn = rss_bytes();

    let sample = || {
        (
            threads_cpu("srv-worker"),
            threads_cpu("cli-worker"),
            SERVER_POLLS.load(Relaxed),
            wheel.as_ref().map(|w| w.stats()),
            sh.frames.load(Relaxed),
            threads_switches("srv-worker"),
        )
    };
    let machine_start = MachineCpu::now();
    let s0 = sample();
    sleep_until(round_start);
    let s1 = sample();
    sleep_until(round_end);
    let s2 = sample();
    sleep_until(window_end);
    let s3 = sample();
    let machine_end = MachineCpu::now();
    let load_average = load_average();
    let heap_end = live_bytes();
    let rss_end = rss_bytes();
    sh.stop.store(true, Relaxed);
    srv.shutdown();
    cli.shutdown_timeout(Duration::from_secs(10));

    let round = round_end - round_start;
    let round_cpu = s2.0 - s1.0;
    let round_polls = s2.2 - s1.2;
    let round_frames = s2.4 - s1.4;
    let wheel = s3.3.map(|end| {
        let fired_in_round = s2.3.map_or(0, |e| e.fired) - s1.3.map_or(0, |s| s.fired);
        (end, fired_in_round)
    });
    let ms = |h: &Hist| [h.quantile_ms(0.5), h.quantile_ms(0.99)];
    Ok(Report {
        connections: n,
        setup,
        window: cfg.window,
        round,
        cpu: [s3.0 - s0.0, s3.0 - s0.0 - round_cpu, round_cpu],
        cli_cpu: s3.1 - s0.1,
        polls: [s3.2 - s0.2, s3.2 - s0.2 - round_polls, round_polls],
        switches: s3.5.saturating_sub(s0.5),
        heap_per_conn: (heap_conn - heap_before) as f64 / n as f64,
        heap_conn,
        heap_end,
        rss_conn,
        rss_end,
        latency: [ms(&sh.latency[0]), ms(&sh.latency[1])],
        latency_all: ms(&sh.latency_all),
        frames_planned: cfg.frames_planned(),
        others_cpu: machine_start
            .others_until(&machine_end)
            .div_f64(cfg.window.as_secs_f64()),
        requests_answered: sh.latency[0].count() + sh.latency[1].count(),
        request_timeouts: sh.request_timeouts.load(Relaxed),
        heartbeat_gap: ms(&sh.heartbeat_gap),
        frames: [s3.4 - s0.4, s3.4 - s0.4 - round_frames, round_frames],
        load_average,
        heartbeats_sent: sh.heartbeats_sent.load(Relaxed),
        silent,
        drops: sh.drops.load(Relaxed),
        early: sh.drops_early.load(Relaxed),
        late: sh.drops_late.load(Relaxed),
        wrong: sh.wrong_drops.load(Relaxed),
        silent_dropped: sh.silent_dropped.load(Relaxed),
        client_early: sh.silent_dropped_early_by_client.load(Relaxed),
        drop_after_idle: [
            sh.drop_after_idle.quantile_ms(0.5),
            sh.drop_after_idle.max_ms(),
        ],
        wheel,
        wheel_at_start: s0.3,
    })
}
