//! The idle-server pattern on paused time, for instruction counts under
//! callgrind: where the CPU of a server's timers goes, operation by
//! operation, free of machine noise.
//!
//! `idle_server` measures time on a live machine, which is noisy and cannot
//! say which function the time went to. This harness runs the same
//! connection loop (an idle `Sleep` reset on every frame and raced with the
//! read in a biased `select!`, requests under a 5 s `timeout`, optionally a
//! server-side heartbeat `interval`) on one current-thread runtime whose
//! clock is paused, so a run is deterministic: the same instructions on every
//! run, on any machine. The frames come from one generator task that sleeps
//! to the next frame of a precomputed schedule, so the clients' pacing
//! costs one timer, the same in every variant.
//!
//! ```sh
//! cargo build --release -p benches --example pattern
//! for kind in tokio wheel none; do
//!   for secs in 60 120; do
//!     valgrind --tool=callgrind --callgrind-out-file=cg.$kind.$secs \
//!       target/release/examples/pattern $kind $secs 2>&1 | grep Collected
//!   done
//! done
//! ```
//!
//! A run simulates `--warmup` seconds (default: twice the idle timeout, so
//! the wheel's pushed-back entries have reached their steady state) and then
//! `SECS` more. The difference between a run of `SECS` and one of `2 x SECS`
//! is the cost of `SECS` seconds of steady state; divided by the frames the
//! run prints, it is the cost per frame. `kind` is `tokio`
//! (`tokio::time`'s free functions), `wheel` (`tokio_wheel`'s, on the
//! runtime's default wheel) or `none` (no idle timeout, no request timeout,
//! heartbeats counted on frames): the variant minus `none` is what the
//! timers cost. `callgrind_annotate` on the two outputs, function by
//! function, gives the breakdown (`docs/benchmarks.md`, "Where the wheel's
//! CPU goes").
//!
//! Flags: `--conns N` [10000], `--frame D` [10s], `--idle D` [30s],
//! `--active F` share of clients that send requests [0.01], `--heartbeat D`
//! a server-side heartbeat interval per connection [off], `--warmup D`.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use support::Rng;
use tokio::sync::mpsc;
use tokio::time::Instant;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Tokio,
    Wheel,
    None,
}

struct Config {
    kind: Kind,
    secs: u64,
    conns: usize,
    frame: Duration,
    idle: Duration,
    active: f64,
    heartbeat: Option<Duration>,
    warmup: Option<Duration>,
}

const USAGE: &str = "usage: pattern tokio|wheel|none SECS [--conns N] [--frame D] [--idle D] \
[--active F] [--heartbeat D] [--warmup D]   (durations in seconds, or with ms/s)";

fn duration(s: &str) -> Result<Duration, String> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else {
        (s.strip_suffix('s').unwrap_or(s), 1.0)
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Duration::from_secs_f64(v * scale)),
        _ => Err(format!("not a positive duration: `{s}`")),
    }
}

fn parse(args: &[String]) -> Result<Config, String> {
    let (kind, secs, rest) = match args {
        [kind, secs, rest @ ..] => (kind, secs, rest),
        _ => return Err("expected a kind and a number of seconds".into()),
    };
    let kind = match kind.as_str() {
        "tokio" => Kind::Tokio,
        "wheel" => Kind::Wheel,
        "none" => Kind::None,
        other => return Err(format!("unknown kind `{other}`")),
    };
    let secs = secs
        .parse::<u64>()
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| format!("SECS must be a positive whole number, got `{secs}`"))?;
    let mut cfg = Config {
        kind,
        secs,
        conns: 10_000,
        frame: Duration::from_secs(10),
        idle: Duration::from_secs(30),
        active: 0.01,
        heartbeat: None,
        warmup: None,
    };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        match flag.as_str() {
            "--conns" => {
                cfg.conns = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--conns: not a positive count: `{value}`"))?
            }
            "--frame" => cfg.frame = duration(value)?,
            "--idle" => cfg.idle = duration(value)?,
            "--heartbeat" => cfg.heartbeat = Some(duration(value)?),
            "--warmup" => cfg.warmup = Some(duration(value)?),
            "--active" => {
                cfg.active = value
                    .parse()
                    .ok()
                    .filter(|f: &f64| (0.0..=1.0).contains(f))
                    .ok_or_else(|| format!("--active: not a share in [0, 1]: `{value}`"))?
            }
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    if cfg.frame >= cfg.idle {
        return Err(format!(
            "--frame ({:?}) must be shorter than --idle ({:?}), or every connection idles out",
            cfg.frame, cfg.idle
        ));
    }
    Ok(cfg)
}

/// What the server saw, for the printed summary.
#[derive(Default)]
struct Counts {
    frames: Cell<u64>,
    requests: Cell<u64>,
    heartbeats: Cell<u64>,
    idle_drops: Cell<u64>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match parse(&args) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("pattern: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let counts = Rc::new(Counts::default());
    let local = tokio::task::LocalSet::new();
    let warmup = cfg.warmup.unwrap_or(cfg.idle * 2);
    let total = warmup + Duration::from_secs(cfg.secs);
    local.block_on(&rt, run(&cfg, total, counts.clone()));
    let wheel = (cfg.kind == Kind::Wheel).then(|| {
        let _enter = rt.enter();
        tokio_wheel::Wheel::current().stats()
    });
    println!(
        "{} conns, frame every {:?}, idle {:?}, {}% active, heartbeat {:?}: {:?} warm-up + {} s: \
         {} frames, {} requests, {} heartbeats, {} idle drops",
        cfg.conns,
        cfg.frame,
        cfg.idle,
        cfg.active * 100.0,
        cfg.heartbeat,
        warmup,
        cfg.secs,
        counts.frames.get(),
        counts.requests.get(),
        counts.heartbeats.get(),
        counts.idle_drops.get(),
    );
    if let Some(stats) = wheel {
        println!("wheel: {stats:?}");
    }
    if counts.idle_drops.get() != 0 {
        eprintln!("pattern: a connection that sent frames was dropped as idle");
        return ExitCode::FAILURE;
    }
    // No teardown: dropping 100k connections' timers costs the same in runs
    // of `SECS` and `2 x SECS` on average, but not in cache misses, whose
    // count depends on how the timers happen to be linked at the end. The
    // difference of two runs is then the steady state alone.
    std::process::exit(0)
}

/// The generator and the connections, until `total` has passed.
async fn run(cfg: &Config, total: Duration, counts: Rc<Counts>) {
    let start = Instant::now();
    let end = start + total;
    let mut rng = Rng::new(7);
    let mut senders = Vec::with_capacity(cfg.conns);
    // (time of the next frame, connection): a client's frames come every
    // `frame`, jittered 0.5x to 1.5x, the first one spread over one period.
    let mut schedule = BinaryHeap::with_capacity(cfg.conns);
    let active = (cfg.conns as f64 * cfg.active).round() as usize;
    for i in 0..cfg.conns {
        let (tx, rx) = mpsc::channel::<bool>(4);
        senders.push(tx);
        let first = cfg.frame.mul_f64(rng.unit());
        schedule.push(Reverse((start + first, i)));
        let counts = counts.clone();
        let (idle, kind) = (cfg.idle, cfg.kind);
        // A heartbeat's first tick is spread over one period, as a server's
        // connections start at different times.
        let heartbeat = cfg
            .heartbeat
            .map(|period| (start + period.mul_f64(rng.unit()), period));
        tokio::task::spawn_local(async move {
            match kind {
                Kind::Tokio => serve::<TokioTime>(rx, idle, heartbeat, &counts).await,
                Kind::Wheel => serve::<WheelTime>(rx, idle, heartbeat, &counts).await,
                Kind::None => serve::<NoTime>(rx, idle, heartbeat, &counts).await,
            }
        });
    }
    while let Some(Reverse((at, i))) = schedule.pop() {
        if at >= end {
            break;
        }
        tokio::time::sleep_until(at).await;
        // Active clients are the first `active` ones; each of their frames
        // is a request.
        if senders[i].send(i < active).await.is_err() {
            break;
        }
        schedule.push(Reverse((at + cfg.frame.mul_f64(0.5 + rng.unit()), i)));
    }
    // Closing the channels ends every connection task.
    drop(senders);
    tokio::task::yield_now().await;
}

/// One connection: the loop of `idle_server`'s `serve_biased` (its
/// `select=biased` cells), without the I/O.
async fn serve<T: Timers>(
    mut rx: mpsc::Receiver<bool>,
    idle: Duration,
    heartbeat: Option<(Instant, Duration)>,
    counts: &Counts,
) {
    let mut idle_timer = std::pin::pin!(T::sleep(idle));
    let mut beat = heartbeat.map(|(first, period)| T::interval(first, period));
    loop {
        tokio::select! {
            biased;
            frame = rx.recv() => {
                let Some(request) = frame else { return };
                counts.frames.set(counts.frames.get() + 1);
                T::reset(idle_timer.as_mut(), Instant::now() + idle);
                if request {
                    let reply = T::timeout(Duration::from_secs(5), async {
                        tokio::task::yield_now().await;
                        1u64
                    })
                    .await;
                    counts.requests.set(counts.requests.get() + reply.unwrap_or(0));
                }
            }
            () = T::tick(&mut beat) => {
                counts.heartbeats.set(counts.heartbeats.get() + 1);
            }
            () = &mut idle_timer => {
                counts.idle_drops.set(counts.idle_drops.get() + 1);
                return;
            }
        }
    }
}

/// The timers of one variant.
trait Timers {
    type Sleep: std::future::Future<Output = ()>;
    type Interval;
    fn sleep(after: Duration) -> Self::Sleep;
    fn reset(sleep: std::pin::Pin<&mut Self::Sleep>, at: Instant);
    fn timeout<F: std::future::Future>(
        limit: Duration,
        f: F,
    ) -> impl std::future::Future<Output = Option<F::Output>>;
    fn interval(first: Instant, period: Duration) -> Self::Interval;
    /// The next heartbeat; never, without one.
    fn tick(beat: &mut Option<Self::Interval>) -> impl std::future::Future<Output = ()>;
}

struct TokioTime;

impl Timers for TokioTime {
    type Sleep = tokio::time::Sleep;
    type Interval = tokio::time::Interval;
    fn sleep(after: Duration) -> Self::Sleep {
        tokio::time::sleep(after)
    }
    fn reset(sleep: std::pin::Pin<&mut Self::Sleep>, at: Instant) {
        sleep.reset(at);
    }
    async fn timeout<F: std::future::Future>(limit: Duration, f: F) -> Option<F::Output> {
        tokio::time::timeout(limit, f).await.ok()
    }
    fn interval(first: Instant, period: Duration) -> Self::Interval {
        tokio::time::interval_at(first, period)
    }
    async fn tick(beat: &mut Option<Self::Interval>) {
        match beat {
            Some(beat) => drop(beat.tick().await),
            None => std::future::pending().await,
        }
    }
}

struct WheelTime;

impl Timers for WheelTime {
    type Sleep = tokio_wheel::Sleep;
    type Interval = tokio_wheel::Interval;
    fn sleep(after: Duration) -> Self::Sleep {
        tokio_wheel::sleep(after)
    }
    fn reset(sleep: std::pin::Pin<&mut Self::Sleep>, at: Instant) {
        sleep.get_mut().reset(at);
    }
    async fn timeout<F: std::future::Future>(limit: Duration, f: F) -> Option<F::Output> {
        tokio_wheel::timeout(limit, f).await.ok()
    }
    fn interval(first: Instant, period: Duration) -> Self::Interval {
        tokio_wheel::interval_at(first, period)
    }
    async fn tick(beat: &mut Option<Self::Interval>) {
        match beat {
            Some(beat) => drop(beat.tick().await),
            None => std::future::pending().await,
        }
    }
}

struct NoTime;

impl Timers for NoTime {
    type Sleep = std::future::Pending<()>;
    type Interval = ();
    fn sleep(_: Duration) -> Self::Sleep {
        std::future::pending()
    }
    fn reset(_: std::pin::Pin<&mut Self::Sleep>, _: Instant) {}
    async fn timeout<F: std::future::Future>(_: Duration, f: F) -> Option<F::Output> {
        Some(f.await)
    }
    fn interval(_: Instant, _: Duration) -> Self::Interval {}
    async fn tick(_: &mut Option<Self::Interval>) {
        std::future::pending().await
    }
}
