//! Is the wheel cheaper than `tokio::time` inside a server? A server written
//! the way servers are written, with its own load generator, run with
//! `tokio::time`, with the wheel's drop-in free functions, and with no timers,
//! side by side.
//!
//! ```text
//! cargo run --release -p benches --example idle_server                 # 100k in-memory connections, ~3 x 50 s
//! cargo run --release -p benches --example idle_server -- --quick      # 2000 connections, a few seconds each
//! cargo run --release -p benches --example idle_server -- --tcp        # 5000 connections over 127.0.0.1
//! cargo run --release -p benches --example idle_server -- --help       # every flag and its default
//!
//! cargo run --release -p benches --example idle_server -- --matrix --list   # the pattern matrix's cells
//! cargo run --release -p benches --example idle_server -- --matrix          # all of them, 3 rounds (hours)
//! cargo run --release -p benches --example idle_server -- --matrix --quick  # all, seconds each (~2 min)
//! cargo run --release -p benches --example idle_server -- --cells 'legacy legacy-hb-off f1s-a10 f1s-a10-hb-on'
//! cargo run --release -p benches --example idle_server -- --cells 'rt=*' --rounds 5
//! ```
//!
//! Without a matrix flag the program makes the single run described below:
//! the three variants one after another in this process. The pattern
//! matrix (last section) runs many server patterns, each variant in a
//! process of its own.
//! # The server
//!
//! One task per connection. The task keeps one idle `Sleep`, reset to now +
//! idle timeout on every frame it receives and raced with the read in
//! `tokio::select!` (polled by `&mut`, never made again). Some frames are
//! requests: each is answered under `timeout(5 s, handler)`, the handler an
//! echo after one `yield_now`, so the timeout's timer is registered and then
//! cancelled. Every connection sends a heartbeat frame every 10 s from an
//! interval whose first tick is jittered per connection. When the idle sleep
//! fires, the task drops the connection and records how long after the last
//! frame it did so.
//!
//! The timers come from a small trait, `Timers` (`timers.rs`), with three
//! impls sharing the one connection loop, `serve` (`conn.rs`):
//!
//! - `tokio`: `tokio::time::{sleep, timeout, interval_at}`;
//! - `wheel`: `tokio_wheel::{sleep, timeout, interval_at}` (the free
//!   functions, on the server runtime's default wheel);
//! - `none`: no idle timeout (a `Sleep` that never completes), the handler
//!   run without a timeout, and heartbeats sent on a plain counter of
//!   received frames (one every heartbeat / frame-every frames), so the
//!   server writes about as many heartbeats as with timers: what remains is
//!   the timers' share of the cost. Silent clients are never dropped there.
//!
//! # The load generator
//!
//! One client task per connection, on a runtime of its own, with
//! `tokio::time` for its own pacing in every variant. Each client sends a
//! 16-byte frame every `--frame-every` (jittered 0.5x to 1.5x); a share of
//! them are requests, whose reply latency it measures. A few clients go
//! silent at a random point early in the window and must be dropped by the
//! server between idle and idle + 10 ms (one tick of the wheel) + 50 ms
//! (scheduling slack) after the last frame it got: never earlier, and no
//! active client may be dropped at all.
//!
//! # What is measured
//!
//! - Server CPU: the sum over the server runtime's threads (named
//!   `srv-worker`, matched by `/proc/self/task/*/comm`) of the time they ran,
//!   from `/proc/self/task/*/schedstat` (nanoseconds), or where the kernel
//!   has no schedstat, utime + stime from `/proc/self/task/*/stat` (1/100 s).
//!   Reported for the whole window, for the expiry round (from a quarter
//!   second before the first connection's first idle deadline to half a
//!   second after the last one's: where the first idle deadlines of every
//!   connection come due, though all were pushed back by frames), and for the
//!   quiet part (the window without the round); per second, and per frame
//!   the server received (the load generator may fall short of its rate on
//!   a busy machine, so compare per frame too).
//!
//!   The round is where the wheel's lazy reset shows: a `Sleep` moved later
//!   keeps its entry where it was, the entry fires at the old deadline and
//!   the task is polled once to re-arm it. Connections made together thus
//!   cost one extra task poll each at once, one idle period after they
//!   started (and once per idle period after that, spread out by then).
//!   `tokio::time` re-files such an entry in its driver without waking the
//!   task.
//! - Server task polls: a wrapper around each connection task counts its
//!   polls, the same wrapper in every variant.
//! - Heap: a counting global allocator (live bytes of the whole process, the
//!   load generator included) just before the first connection (the
//!   runtimes built), once the connections are up, and at the end of the
//!   window; RSS from `/proc/self/status`.
//! - Request latency and the gap between heartbeats, seen by the clients.
//! - Drops: early, late, of an active client (wrong), silent clients dropped.
//! - For the wheel, its `Stats`.
//!
//! Each variant gets a fresh pair of runtimes (2 workers each) and a fresh
//! set of connections. The program exits non-zero if a correctness check
//! fails: no early drop, no active client dropped, every silent client
//! dropped.
//!
//! # The pattern matrix
//!
//! Whether the wheel wins depends on the server's pattern, so the matrix
//! (`matrix.rs`) names patterns by axes and runs cells of their product:
//!
//! | axis | values | what |
//! |---|---|---|
//! | `net` | `mem`, `tcp` | in-memory duplex pipes, or TCP on 127.0.0.1 |
//! | `conns` | `5k`, `100k`, `1M` (TCP: `5k`, `20k`) | connections |
//! | `frame` | `1s`, `10s`, `60s` | mean time between a client's frames |
//! | `idle` | `30s`, `300s` | idle timeout, reset on every frame |
//! | `active` | `1%`, `10%`, `100%` | share of active clients, or of request frames |
//! | `mix` | `clients`, `frames` | `clients`: each active client sends a request a second besides its frames; `frames`: that share of every client's frames are requests (the single run's way) |
//! | `hb` | `off`, `on` | a server-side heartbeat `interval` (10 s) per connection |
//! | `rt` | `ct`, `2`, `8`, `16` | server runtime: current-thread (on a thread of its own, counted as a worker) or N workers; 8 and 16 oversubscribe a 2-core machine, as a many-core server's contention on one timer lock would |
//! | `warm` | `0s`, `60s` | time the connections run before the window opens |
//! | `select` | `random`, `biased` | the connection's `select!`: tokio's default, which polls a random branch first, or `biased;`, the read first (as `benches/pattern.rs`) |
//! | `pad` | `0`, `16`, `32`, `48` | bytes the connection's future carries and never reads: they move where the compiler lays out the rest of it against the task's cache lines, which the variants' timers of different sizes move anyway; not a pattern, a check of how far a ratio moves with the layout |
//!
//! The load generator keeps a 2-worker runtime of its own in every cell.
//! The window is the idle timeout plus 10 s, so that each connection's
//! first idle deadline and the silent clients' drops fall in it. With
//! `warm=0s` (the default) it opens as soon as the connections are up, so it
//! holds what each connection pays once, in its first idle period: for the
//! wheel, the first push back of its idle timeout (which makes the deadline
//! cell) and the driver's first refile of it. `warm=60s` lets the
//! connections run a minute first (two of the base cell's idle periods)
//! and measures what a long-lived connection pays.
//!
//! The whole product is thousands of cell-hours, so the default set (see
//! `--list`) takes the base cell (`conns=100k,frame=10s,idle=30s,active=1%,
//! mix=clients,hb=off,rt=2,warm=0s,select=random`, in memory: the issue's
//! first pattern, but for its biased `select!`) and varies one axis at a
//! time around it (`frame-1s`, `frame-60s` with idle
//! 300 s, since 60 s frames would idle out a 30 s timeout, `idle-300s`,
//! `active-10`, `active-100`, `conns-5k`, `conns-1m`, `tcp-5k`, `tcp-20k` or
//! as many as the open-file limit allows, `rt-ct`, `rt-8`, `rt-16`, `hb-on`),
//! plus the issue's 50k cell (`issue-50k`), and a 2 x 2 at 1 s frames and
//! 10% requests that takes the single run's pattern apart: `legacy` (the
//! single run: requests as a share of frames, server heartbeats),
//! `legacy-hb-off`, `f1s-a10` (requests from 10% of the clients, no server
//! heartbeat) and `f1s-a10-hb-on`; then `base`, `rt-ct`, `rt-8`, `rt-16` and
//! `conns-1m` again with `warm=60s` (`base-warm` and so on). Cells that
//! cannot run here (open files, memory) are listed and skipped.
//!
//! `--cells` takes default cells' names (`rt-*` for a prefix), `default`,
//! `full` (the whole product), or axis expressions such as
//! `conns=100k,frame=1s`: the other axes come from the base cell, and a value
//! may list alternatives, `conns=5k|100k`, or be `*`, the axis's values above
//! (`--cells 'hb=*,mix=*'`), for the product. `--list` prints the cells with
//! the estimated wall time and runs nothing.
//!
//! Each (cell, variant, round) is a child process, this program re-run with
//! `--one VARIANT CELL --seed N`, which prints one tab-separated `RESULT`
//! line and exits non-zero when a correctness check failed (1), the run
//! failed (2) or the cell cannot run on this machine (3). Rounds are the
//! outer loop, then cells, then the variants in an order rotated every
//! round (tokio, wheel, none; wheel, none, tokio; ...); a round's three
//! variants share a seed. `--rounds` defaults to 3. Per cell the parent
//! reports medians and [min, max] over rounds of the server CPU, the timers'
//! share (a variant minus "none" of the same round), heap per connection
//! and its timers' part, the whole-window request p99, their wheel / tokio
//! ratios (per round, then the median), and drops early, late, wrong and
//! silent clients never dropped. A cell is disturbed when "none"'s CPU moved
//! more than `--max-spread` (10%) over rounds or other processes used more
//! than `--max-others` (100 ms per s) during a run (from `/proc/stat` less
//! this process); it is run again, `--reruns` times (1) at most, and stays
//! flagged if still disturbed. Under the table each cell gets the issue's
//! targets: met, MISSED, or out of reach where "none" itself is above the
//! CPU bound.
//!
//! `--quick` divides every time by 60 (frames, requests and heartbeats at
//! least 50 ms apart) and connections by 100 (200 to 2000), with 1 round
//! and no re-run unless asked: about two minutes for the default cells, to
//! check the harness, never for figures. The table is Markdown, printed and
//! written to `--out FILE` (default `target/idle_server_matrix/
//! idle_server_matrix.md`, `-quick` in quick mode), with every run's raw
//! line beside it (`.tsv`).

mod conn;
mod matrix;
mod measure;
mod report;
mod run;
// Its random generator is shared with `compare` and the criterion benches.
mod timers;

use std::process::ExitCode;
use std::time::Duration;

use matrix::MatrixArgs;
use measure::open_file_limit;
use report::{print_table, verdicts, NAMES};
use run::{run_variant, Report, Workers};
use timers::{NoTime, TokioTime, WheelTime};

// ---------------------------------------------------------------------------
// Settings and shared state.

#[derive(Clone, Debug)]
pub struct Config {
    pub variants: Vec<&'static str>,
    pub tcp: bool,
    pub connections: usize,
    pub idle: Duration,
    pub heartbeat: Duration,
    pub request_timeout: Duration,
    pub frame_every: Duration,
    pub request_share: f64,
    pub silent_share: f64,
    pub silent_min: usize,
    pub window: Duration,
    /// Time the connections run after setup before the window opens.
    pub warmup: Duration,
    pub batch: usize,
    pub seed: u64,
    /// The server runtime: current-thread or a number of workers.
    pub workers: Workers,
    /// Whether the server sends each connection a heartbeat from an
    /// interval (or, with no timers, on a count of frames).
    pub server_heartbeat: bool,
    /// `Some(share)`: that share of the clients are active and send a
    /// request every `request_every` besides their frames, which are all
    /// plain data. `None`: `request_share` of every client's frames are
    /// requests.
    pub active: Option<f64>,
    pub request_every: Duration,
    /// Whether the connection's `select!` polls the read first (`biased;`)
    /// rather than a random branch first (tokio's default).
    pub biased: bool,
    /// Bytes of padding the connection's future carries (one of [`PADS`]).
    pub pad: usize,
}

/// The values of the `pad` axis, in bytes: 8-byte words, 16 bytes apart
/// (`serve`'s instances are written out for each, in `run.rs`).
pub const PADS: [usize; 4] = [0, 16, 32, 48];

/// One tick of the wheel's default, and the scheduling slack allowed on top.
pub const TICK: Duration = Duration::from_millis(10);
pub const SLACK: Duration = Duration::from_millis(50);

impl Config {
    fn new(quick: bool, tcp: bool) -> Config {
        let mut c = Config {
            variants: vec!["tokio", "wheel", "none"],
            tcp,
            connections: if tcp { 5000 } else { 100_000 },
            idle: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            frame_every: Duration::from_secs(1),
            request_share: 0.1,
            silent_share: 0.001,
            silent_min: 10,
            window: Duration::from_secs(40),
            warmup: Duration::ZERO,
            batch: if tcp { 500 } else { 5000 },
            seed: 1,
            workers: Workers::Multi(2),
            server_heartbeat: true,
            active: None,
            request_every: Duration::from_secs(1),
            biased: false,
            pad: 0,
        };
        if quick {
            c.connections = 2000;
            c.idle = Duration::from_secs(3);
            c.heartbeat = Duration::from_secs(1);
            c.window = Duration::from_secs(5);
            c.frame_every = Duration::from_millis(200);
        }
        c
    }

    pub fn silent(&self) -> usize {
        let share = (self.connections as f64 * self.silent_share).round() as usize;
        share.max(self.silent_min).min(self.connections)
    }

    /// Frames per second the load generator is set to send (before the
    /// silent clients fall quiet).
    pub fn frames_planned(&self) -> f64 {
        let n = self.connections as f64;
        let frames = n / self.frame_every.as_secs_f64();
        match self.active {
            Some(share) => frames + n * share / self.request_every.as_secs_f64(),
            None => frames,
        }
    }

    /// Frames per heartbeat for the no-timer variant: the mean frames a
    /// connection receives in one heartbeat period, requests of active
    /// clients included, so that it sends about as many heartbeats as the
    /// variants with timers.
    pub fn frames_per_beat(&self) -> u32 {
        let per_conn = self.frames_planned() / self.connections.max(1) as f64;
        let n = self.heartbeat.as_secs_f64() * per_conn;
        (n.round() as u32).max(1)
    }
}

// ---------------------------------------------------------------------------
// Flags.

fn help() -> String {
    let d = Config::new(false, false);
    let q = Config::new(true, false);
    let tcp = Config::new(false, true);
    format!(
        "idle_server: a server with idle timeouts, request timeouts and heartbeats, on tokio::time,
on tokio-wheel and on no timers, with its own load generator.

Flags (durations take a unit: 30s, 200ms; a bare number is seconds):
  --timer tokio|wheel|none|all   timers to run, one after another [all]
  --tcp                          connect over 127.0.0.1 instead of in-memory duplex pipes
  --connections N                connections [{} in memory, {} over TCP]
  --idle D                       idle timeout [{:?}]
  --heartbeat D                  heartbeat period [{:?}]
  --frame-every D                mean time between a client's frames, jittered 0.5x-1.5x [{:?}]
  --request-share F              share of frames that are requests [{}]
  --silent F                     share of clients that go silent (at least {}) [{}]
  --window D                     measuring window after setup [{:?}]
  --warmup D                     time the connections run before the window opens [0s]
  --batch N                      connections set up per batch [{} in memory, {} over TCP]
  --seed N                       random seed [{}]
  --quick                        {} connections, idle {:?}, heartbeat {:?}, frames every {:?},
                                 window {:?} (other flags override it)
  --help                         this text

The pattern matrix (any of these flags selects it; see the doc comment of main.rs):
  --matrix                       run the default cells
  --cells SPEC                   cells to run, items separated by ';' or spaces: default, full,
                                 a cell's name (rt-* for a prefix), or KEY=VALUE,... over the
                                 axes below, other axes from the base cell; VALUE may be a|b or *
  --list                         list the selected cells and the estimated wall time, run nothing
  --rounds N                     rounds (each runs every variant once, rotated) [3; 1 with --quick]
  --reruns N                     re-runs of a disturbed cell [1; 0 with --quick]
  --max-spread F                 \"none\" moving more than this share over rounds: disturbed [0.1]
  --max-others MS                other processes using more than MS ms per s: disturbed [100]
  --out FILE                     the Markdown table [target/idle_server_matrix/idle_server_matrix.md]
  --seed N                       seed of round 1 (round r uses N + r - 1) [1]
  --quick                        times / 60, connections / 100 (200-2000): seconds per run
Axes (the base cell: {}):
{}",
        d.connections,
        tcp.connections,
        d.idle,
        d.heartbeat,
        d.frame_every,
        d.request_share,
        d.silent_min,
        d.silent_share,
        d.window,
        d.batch,
        tcp.batch,
        d.seed,
        q.connections,
        q.idle,
        q.heartbeat,
        q.frame_every,
        q.window,
        matrix::Cell::base().expr(),
        matrix::AXES
            .iter()
            .map(|(k, v, what)| format!("  {k:<8} {:<22} {what}", v.join("|")))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_duration_from(s, false)
}

/// A duration that may be zero (a warm-up), else as [`parse_duration`].
pub(crate) fn parse_wait(s: &str) -> Result<Duration, String> {
    parse_duration_from(s, true)
}

/// `s` as a duration (`ms`, `s` or a bare number of seconds), finite and
/// positive, or zero too if `zero` says so.
fn parse_duration_from(s: &str, zero: bool) -> Result<Duration, String> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.parse().map_err(|_| format!("not a duration: {s}"))?;
    if !(v.is_finite() && (v > 0.0 || (zero && v == 0.0))) {
        let what = if zero { "zero or positive" } else { "positive" };
        return Err(format!("a duration must be {what}: {s}"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

fn parse_args(args: &[String]) -> Result<Option<Config>, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(None);
    }
    let has = |f: &str| args.iter().any(|a| a == f);
    let mut cfg = Config::new(has("--quick"), has("--tcp"));
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--quick" || flag == "--tcp" {
            continue;
        }
        const WITH_VALUE: [&str; 11] = [
            "--timer",
            "--connections",
            "--idle",
            "--heartbeat",
            "--frame-every",
            "--request-share",
            "--silent",
            "--window",
            "--warmup",
            "--batch",
            "--seed",
        ];
        if !WITH_VALUE.contains(&flag.as_str()) {
            return Err(format!("unknown flag {flag} (see --help)"));
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
        let number = |v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        let count = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: not a count: {v}"))
        };
        match flag.as_str() {
            "--timer" => {
                cfg.variants = match value.as_str() {
                    "all" => NAMES.to_vec(),
                    "tokio" => vec!["tokio"],
                    "wheel" => vec!["wheel"],
                    "none" => vec!["none"],
                    v => return Err(format!("--timer: tokio, wheel, none or all, not {v}")),
                }
            }
            "--connections" => cfg.connections = count(value)?,
            "--idle" => cfg.idle = parse_duration(value)?,
            "--heartbeat" => cfg.heartbeat = parse_duration(value)?,
            "--frame-every" => cfg.frame_every = parse_duration(value)?,
            "--request-share" => cfg.request_share = number(value)?,
            "--silent" => cfg.silent_share = number(value)?,
            "--window" => cfg.window = parse_duration(value)?,
            "--warmup" => cfg.warmup = parse_wait(value)?,
            "--batch" => cfg.batch = count(value)?,
            "--seed" => cfg.seed = value.parse().map_err(|_| format!("--seed: {value}"))?,
            f => return Err(format!("unknown flag {f} (see --help)")),
        }
    }
    if cfg.connections == 0 || cfg.batch == 0 {
        return Err("--connections and --batch must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&cfg.request_share) || !(0.0..=1.0).contains(&cfg.silent_share) {
        return Err("--request-share and --silent are shares between 0 and 1".into());
    }
    if cfg.window <= cfg.idle {
        return Err("--window must be longer than --idle, or no idle deadline falls in it".into());
    }
    if cfg.frame_every * 2 >= cfg.idle {
        return Err("--frame-every must be well under half of --idle".into());
    }
    if cfg.tcp {
        if let Some(limit) = open_file_limit() {
            let needed = 2 * cfg.connections as u64 + 64;
            if needed > limit {
                return Err(format!(
                    "{} TCP connections need about {needed} open files in this process (both \
                     ends of each), but the limit (`ulimit -n`) is {limit}: use --connections {} \
                     or less, or raise the limit",
                    cfg.connections,
                    limit.saturating_sub(64) / 2
                ));
            }
        }
    }
    Ok(Some(cfg))
}

/// Flags that select the matrix.
const MATRIX_FLAGS: [&str; 8] = [
    "--matrix",
    "--cells",
    "--list",
    "--rounds",
    "--reruns",
    "--max-spread",
    "--max-others",
    "--out",
];

fn parse_matrix_args(args: &[String]) -> Result<MatrixArgs, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut m = MatrixArgs {
        cells: "default".into(),
        quick,
        list: false,
        rounds: if quick { 1 } else { 3 },
        reruns: if quick { 0 } else { 1 },
        max_spread: 0.1,
        max_others: 100.0,
        out: None,
        seed: 1,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--quick" | "--matrix" => continue,
            "--list" => {
                m.list = true;
                continue;
            }
            _ => {}
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
        let count = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag}: not a count: {value}"))
        };
        let number = || {
            value
                .parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--cells" => m.cells = value.clone(),
            "--rounds" => m.rounds = count()?.max(1),
            "--reruns" => m.reruns = count()?,
            "--max-spread" => m.max_spread = number()?,
            "--max-others" => m.max_others = number()?,
            "--out" => m.out = Some(value.into()),
            "--seed" => m.seed = count()? as u64,
            f => return Err(format!("{f} is not a flag of the matrix (see --help)")),
        }
    }
    Ok(m)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A child of the matrix: --one VARIANT CELL [--seed N] [--quick].
    if let Some(i) = args.iter().position(|a| a == "--one") {
        let (Some(variant), Some(expr)) = (args.get(i + 1), args.get(i + 2)) else {
            eprintln!("idle_server: --one VARIANT CELL [--seed N] [--quick]");
            return ExitCode::from(2);
        };
        let seed = args
            .iter()
            .position(|a| a == "--seed")
            .and_then(|j| args.get(j + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let quick = args.iter().any(|a| a == "--quick");
        return matrix::child(variant, expr, seed, quick);
    }
    let help_asked = args.iter().any(|a| a == "--help" || a == "-h");
    if !help_asked && args.iter().any(|a| MATRIX_FLAGS.contains(&a.as_str())) {
        return match parse_matrix_args(&args) {
            Ok(m) => matrix::run_matrix(&m),
            Err(e) => {
                eprintln!("idle_server: {e}");
                ExitCode::from(2)
            }
        };
    }
    let cfg = match parse_args(&args) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => {
            println!("{}", help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("idle_server: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{} connections over {}, idle timeout {:?}, heartbeat {:?}, a frame every {:?} \
         (jittered), {:.0}% requests, {} silent clients, window {:?} after {:?}",
        cfg.connections,
        if cfg.tcp {
            "TCP on 127.0.0.1"
        } else {
            "in-memory duplex pipes"
        },
        cfg.idle,
        cfg.heartbeat,
        cfg.frame_every,
        cfg.request_share * 100.0,
        cfg.silent(),
        cfg.window,
        cfg.warmup
    );
    let mut reports: [Option<Report>; 3] = [None, None, None];
    for (i, name) in NAMES.iter().enumerate() {
        if !cfg.variants.contains(name) {
            continue;
        }
        println!("running {name} ...");
        let run = match i {
            0 => run_variant::<TokioTime>(&cfg),
            1 => run_variant::<WheelTime>(&cfg),
            _ => run_variant::<NoTime>(&cfg),
        };
        match run {
            Ok(report) => reports[i] = Some(report),
            Err(e) => {
                eprintln!("idle_server: {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    print_table(&cfg, &reports);
    if verdicts(&reports) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
