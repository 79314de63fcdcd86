//! Per-peer heartbeats and failback retries with callback timers, the way
//! Netty's `IdleStateHandler` and Dubbo's `HeartbeatTimerTask` and
//! `FailbackRegistry` use a `HashedWheelTimer`.
//!
//! ```text
//! cargo run --release -p examples --example heartbeat
//! cargo run --release -p examples --example heartbeat -- --peers 5000 --secs 3
//! ```
//!
//! # The scenario
//!
//! A client keeps 1000 simulated peer connections alive. Each peer has a
//! heartbeat: a callback on a [`Wheel`] that sends a ping and schedules
//! itself again one second later (a self-rescheduling closure holding a
//! clone of the `Wheel` and the shared state). No task per peer, no
//! `tokio::time` timer per peer: one wheel entry each.
//!
//! Sends are flaky: about 5% fail at random, and every 50th peer is down
//! altogether between 1.5 s and 3.5 s into the run. A failed send is not
//! retried inline; it is handed to the wheel with `schedule` after a backoff
//! (100 ms, 200 ms, 400 ms, 800 ms) and given up after four tries (Dubbo's
//! failback retry). Retries of a peer that is down back off until it is up
//! again and then succeed, or give up if it stays down for too long.
//!
//! After a few seconds the client stops: `wheel.shutdown()` hands back every
//! callback that has not run, in deadline order. Heartbeats are dropped
//! (the connections are closing); retries still pending are run once, now,
//! as a final flush, the way a registry flushes its failed registrations on
//! the way out.
//!
//! The summary shows how many heartbeats were sent, how many sends failed,
//! how the retries fared, what shutdown handed back, how late heartbeats ran
//! against their deadlines (the wheel fires at the first 10 ms tick at or
//! after a deadline, so up to one tick plus scheduling latency), and the
//! wheel's own counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_wheel::{Stats, Wheel};

/// How often each peer is pinged.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// The backoff before retry `n` (1-based) is `BACKOFF * 2^(n-1)`.
const BACKOFF: Duration = Duration::from_millis(100);
/// Tries after the first failure before giving up.
const MAX_RETRIES: u32 = 4;
/// Chance, in percent, that a send to a healthy peer fails.
const FAIL_PERCENT: u64 = 5;
/// Every this many peers, one is down for a while.
const DOWN_EVERY: usize = 50;

#[derive(Default)]
struct Counters {
    heartbeats_sent: AtomicU64,
    send_failures: AtomicU64,
    retries: AtomicU64,
    retries_succeeded: AtomicU64,
    gave_up: AtomicU64,
    heartbeats_dropped: AtomicU64,
    flushed: AtomicU64,
    flushed_ok: AtomicU64,
    reschedule_refused: AtomicU64,
    /// The latest any heartbeat ran after its deadline, in microseconds.
    max_late_us: AtomicU64,
    late_sum_us: AtomicU64,
}

/// What every callback shares.
struct Cluster {
    wheel: Wheel,
    start: Instant,
    stopping: AtomicBool,
    sends: AtomicU64,
    counters: Counters,
}

impl Cluster {
    /// A simulated send to `peer`: fails at random, and always while the peer
    /// is down.
    fn send(&self, peer: usize) -> Result<(), &'static str> {
        let since = self.start.elapsed();
        let down = peer % DOWN_EVERY == 0
            && since >= Duration::from_millis(1500)
            && since < Duration::from_millis(3500);
        if down {
            return Err("peer down");
        }
        let n = self.sends.fetch_add(1, Relaxed);
        if splitmix64(n ^ ((peer as u64) << 32)) % 100 < FAIL_PERCENT {
            return Err("send failed");
        }
        Ok(())
    }
}

/// A well-mixed hash: deterministic "randomness" without a dependency.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Schedules `peer`'s heartbeat at `deadline`.
fn schedule_heartbeat(cluster: &Arc<Cluster>, peer: usize, deadline: Instant) {
    let c = cluster.clone();
    let res = cluster
        .wheel
        .schedule_at(deadline, move || heartbeat(&c, peer, deadline));
    if res.is_err() {
        // Only once the wheel is shut down: the connection is closing.
        cluster.counters.reschedule_refused.fetch_add(1, Relaxed);
    }
}

/// The heartbeat callback: ping, then schedule the next one (and a retry if
/// the ping failed).
fn heartbeat(cluster: &Arc<Cluster>, peer: usize, deadline: Instant) {
    let c = &cluster.counters;
    if cluster.stopping.load(Relaxed) {
        c.heartbeats_dropped.fetch_add(1, Relaxed);
        return;
    }
    let late = deadline.elapsed().as_micros() as u64;
    c.max_late_us.fetch_max(late, Relaxed);
    c.late_sum_us.fetch_add(late, Relaxed);
    c.heartbeats_sent.fetch_add(1, Relaxed);
    if cluster.send(peer).is_err() {
        c.send_failures.fetch_add(1, Relaxed);
        schedule_retry(cluster, peer, 1);
    }
    // Keep the schedule: the next beat is one period after this deadline.
    schedule_heartbeat(cluster, peer, deadline + HEARTBEAT);
}

/// Failback: try again after a backoff that doubles each time.
fn schedule_retry(cluster: &Arc<Cluster>, peer: usize, attempt: u32) {
    let c = cluster.clone();
    let backoff = BACKOFF * 2u32.pow(attempt - 1);
    let res = cluster
        .wheel
        .schedule(backoff, move || retry(&c, peer, attempt));
    if res.is_err() {
        cluster.counters.reschedule_refused.fetch_add(1, Relaxed);
    }
}

fn retry(cluster: &Arc<Cluster>, peer: usize, attempt: u32) {
    let c = &cluster.counters;
    if cluster.stopping.load(Relaxed) {
        // Handed back by shutdown: one last try, now.
        c.flushed.fetch_add(1, Relaxed);
        if cluster.send(peer).is_ok() {
            c.flushed_ok.fetch_add(1, Relaxed);
        }
        return;
    }
    c.retries.fetch_add(1, Relaxed);
    match cluster.send(peer) {
        Ok(()) => {
            c.retries_succeeded.fetch_add(1, Relaxed);
        }
        Err(_) if attempt < MAX_RETRIES => schedule_retry(cluster, peer, attempt + 1),
        Err(_) => {
            c.gave_up.fetch_add(1, Relaxed);
        }
    }
}

struct Args {
    peers: usize,
    secs: u64,
}

fn parse_args() -> Args {
    let mut args = Args {
        peers: 1000,
        secs: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().and_then(|v| v.parse::<u64>().ok());
        match (flag.as_str(), value) {
            ("--peers", Some(v)) if v > 0 => args.peers = v as usize,
            ("--secs", Some(v)) if v > 0 => args.secs = v,
            _ => {
                eprintln!("usage: heartbeat [--peers N] [--secs S]");
                std::process::exit(2);
            }
        }
    }
    args
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let wall = std::time::Instant::now();
    let wheel = Wheel::builder()
        .tick(Duration::from_millis(10))
        .build()
        .expect("valid settings");
    let start = Instant::now();
    let cluster = Arc::new(Cluster {
        wheel: wheel.clone(),
        start,
        stopping: AtomicBool::new(false),
        sends: AtomicU64::new(0),
        counters: Counters::default(),
    });

    // Spread the first beats over the first second, so that the peers' beats
    // do not all land in one tick.
    for peer in 0..args.peers {
        let offset = HEARTBEAT * peer as u32 / args.peers as u32;
        schedule_heartbeat(&cluster, peer, start + offset);
    }
    println!(
        "{} peers, a heartbeat each every {:?} on a {:?} wheel; running for {} s...",
        args.peers,
        HEARTBEAT,
        wheel.resolution(),
        args.secs
    );

    tokio::time::sleep(Duration::from_secs(args.secs)).await;
    let before_shutdown = wheel.stats();

    // Stop: the wheel hands back what has not run.
    cluster.stopping.store(true, Relaxed);
    let handed_back = wheel.shutdown();
    let handed_back_count = handed_back.len();
    let first_due = handed_back.first().map(|t| t.deadline() - start);
    let last_due = handed_back.last().map(|t| t.deadline() - start);
    for task in handed_back {
        // Heartbeats see `stopping` and drop out; retries flush once.
        task.await;
    }
    let elapsed = wall.elapsed();
    report(
        &args,
        &cluster,
        handed_back_count,
        first_due,
        last_due,
        before_shutdown,
        &wheel,
    );
    println!("wall time: {elapsed:.2?}");
}

fn report(
    args: &Args,
    cluster: &Cluster,
    handed_back: usize,
    first_due: Option<Duration>,
    last_due: Option<Duration>,
    before: Stats,
    wheel: &Wheel,
) {
    let c = &cluster.counters;
    let get = |a: &AtomicU64| a.load(Relaxed);
    let sent = get(&c.heartbeats_sent);
    let mean_late = Duration::from_micros(get(&c.late_sum_us) / sent.max(1));
    let max_late = Duration::from_micros(get(&c.max_late_us));
    let rows: Vec<(&str, String)> = vec![
        ("peers", args.peers.to_string()),
        ("heartbeats sent (incl. failed)", sent.to_string()),
        (
            "  per peer per second",
            format!("{:.2}", sent as f64 / args.peers as f64 / args.secs as f64),
        ),
        ("  lateness, mean", format!("{mean_late:.2?}")),
        ("  lateness, max", format!("{max_late:.2?}")),
        ("send failures", get(&c.send_failures).to_string()),
        ("retries (failback)", get(&c.retries).to_string()),
        ("  succeeded", get(&c.retries_succeeded).to_string()),
        ("  gave up", get(&c.gave_up).to_string()),
        ("tasks handed back by shutdown", handed_back.to_string()),
        (
            "  heartbeats dropped",
            get(&c.heartbeats_dropped).to_string(),
        ),
        ("  retries flushed", get(&c.flushed).to_string()),
        ("    flushed ok", get(&c.flushed_ok).to_string()),
        (
            "  due from .. to",
            match (first_due, last_due) {
                (Some(a), Some(b)) => format!("{a:.2?} .. {b:.2?}"),
                _ => "-".to_owned(),
            },
        ),
        (
            "refused after shutdown",
            get(&c.reschedule_refused).to_string(),
        ),
    ];
    println!();
    print_table("heartbeat client", &rows);

    let s = wheel.stats();
    let rows: Vec<(&str, String)> = vec![
        ("pending just before shutdown", before.pending.to_string()),
        ("pending after", s.pending.to_string()),
        ("registered", s.registered.to_string()),
        ("fired", s.fired.to_string()),
        ("cancelled", s.cancelled.to_string()),
        ("driver wake-ups", s.driver_wakeups.to_string()),
        ("driver starts", s.driver_starts.to_string()),
        ("ticks visited", s.ticks.to_string()),
        ("ticks skipped", s.ticks_skipped.to_string()),
        ("max batch (one tick)", s.max_batch.to_string()),
        ("last lag", format!("{:.2?}", s.last_lag)),
        ("max lag", format!("{:.2?}", s.max_lag)),
    ];
    println!();
    print_table("wheel.stats()", &rows);
    println!();
}

fn print_table(title: &str, rows: &[(&str, String)]) {
    let w1 = rows
        .iter()
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0)
        .max(title.len());
    let w2 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let line = format!("+-{}-+-{}-+", "-".repeat(w1), "-".repeat(w2));
    println!("{line}");
    println!("| {title:<w1$} | {:>w2$} |", "");
    println!("{line}");
    for (k, v) in rows {
        println!("| {k:<w1$} | {v:>w2$} |");
    }
    println!("{line}");
}
