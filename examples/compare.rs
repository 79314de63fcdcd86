//! tokio-wheel against `tokio::time` (and `tokio_util::time::DelayQueue` where
//! it applies), scenario by scenario, printed as one table with the targets
//! each row is held to, and drawn as SVG charts under `docs/`.
//!
//! ```text
//! cargo run --release --example compare                  # full run, 1-2 minutes on 2 cores
//! cargo run --release --example compare -- --scale 0.1   # a quick look
//! cargo run --release --example compare -- --help        # every size is a flag
//! ```
//!
//! # The workloads
//!
//! 1. **Timeout overhead.** `timeout(5 s, f)` where `f` is pending once (it
//!    wakes itself) and then ready: the timer is registered, then cancelled.
//!    Nanoseconds per operation without a timeout (the baseline), with
//!    `tokio::time::timeout`, with `Wheel::timeout` and with the free
//!    function `tokio_wheel::timeout`; the overhead is the time above the
//!    baseline. On a current-thread runtime (one task), and on a multi-thread
//!    runtime with 2 workers and 8 tasks (wall time per operation).
//! 2. **1M pending timers.** Create and poll once (which registers) 1M sleeps
//!    with deadlines spread over 1 to 60 s; bytes per pending timer (its
//!    `size_of` plus the heap it holds, from the counting allocator below);
//!    then drop them all.
//! 3. **Mass expiry.** 1M tasks, each sleeping until a deadline within the
//!    same 100 ms window: time from the last deadline until every task has
//!    seen its wake-up, and the largest delay of a 1 ms ticker task meanwhile.
//! 4. **Reset.** 100k connections with an idle timeout each; 1M "packets",
//!    each resetting its connection's timeout to now + 30 s, alone and
//!    followed by the poll a connection task makes after it.
//! 5. **Idle cost.** Wake-ups and CPU time over a few seconds of wall time
//!    with nothing pending, with 100k timers due in 10 minutes, and after
//!    1000 timers due within the window were cancelled.
//! 6. **Accuracy.** 100k tasks sleeping until random deadlines: lateness
//!    (seen minus deadline) min / p50 / p99 / max and early fires, for ticks
//!    of 1 ms and 10 ms.
//!
//! Every measurement runs on a runtime of its own, after a warm-up, a few
//! times (`--runs`); the table shows the median. Wheels are built inside the
//! runtime that uses them. "Registering" a timer is creating it and polling
//! it once with a no-op waker inside the runtime's context, since both
//! timers register lazily, on their first poll.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::time::DelayQueue;
use tokio_wheel::Wheel;

// Shared with the criterion benches. `plan_wakeup` is theirs: this example
// parks its runtimes inside tasks, with `park_with_pending`.
#[allow(dead_code)]
#[path = "../benches/support.rs"]
mod support;

use support::{
    current_thread_runtime, park_with_pending, spread_deadlines, Keep, PinnedVec, Rng, YieldOnce,
};

// ---------------------------------------------------------------------------
// A counting allocator: live heap bytes, as requested (not the allocator's own
// bookkeeping), so "bytes per pending timer" can be read off.

struct CountingAlloc;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Calls to `alloc`, `alloc_zeroed` and `realloc`.
static ALLOC_CALLS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is a
// side effect that does not touch the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Minor page faults of the process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name
        .split_whitespace()
        .nth(7)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Wall time, live heap, page faults and allocator calls at one instant.
#[derive(Clone, Copy)]
struct Probe {
    at: std::time::Instant,
    heap: isize,
    faults: u64,
    allocs: usize,
}

/// What happened between two probes.
#[derive(Clone, Copy, Default)]
struct Delta {
    time: Duration,
    heap: isize,
    faults: u64,
    allocs: usize,
}

impl Probe {
    fn now() -> Probe {
        Probe {
            heap: live_bytes(),
            faults: minor_faults(),
            allocs: ALLOC_CALLS.load(Ordering::Relaxed),
            at: std::time::Instant::now(),
        }
    }

    fn delta(&self) -> Delta {
        let end = std::time::Instant::now();
        Delta {
            time: end - self.at,
            heap: live_bytes() - self.heap,
            faults: minor_faults() - self.faults,
            allocs: ALLOC_CALLS.load(Ordering::Relaxed) - self.allocs,
        }
    }
}

// ---------------------------------------------------------------------------
// Configuration.

const USAGE: &str = "\
compare: tokio-wheel against tokio::time (and tokio-util's DelayQueue), one table

usage: cargo run --release --example compare -- [flags]

  --scale F            multiply every default size by F (default 1; 0.1 for a quick run)
  --runs N             repetitions of each measurement; the median is shown (default 3)
  --ops N              workload 1: timeouts per measurement (default 500000)
  --timers N           workloads 2 and 3: timers (default 1000000)
  --conns N            workload 4: connections (default 100000)
  --resets N           workload 4: resets (default 1000000)
  --idle-timers N      workload 5: timers due in 10 minutes (default 100000)
  --idle-secs S        workload 5: wall time of each window, seconds (default 2)
  --accuracy-timers N  workload 6: timers (default 100000)
  --tick-ms N          the wheel's tick for workloads 1 to 5 (default 10, the crate's default)
  --workers N          worker threads of the multi-thread runtimes of workloads 3, 5, 6
                       (default: the core count; workload 1 always uses 2)
  --only LIST          run only these workloads, e.g. --only 1,4
  --out DIR            where the SVG charts go (default: the crate's docs/)
  --no-svg             do not write the charts
  -h, --help           this text
";

#[derive(Debug, Clone)]
struct Config {
    runs: usize,
    ops: u64,
    timers: usize,
    conns: usize,
    resets: usize,
    idle_timers: usize,
    idle_secs: f64,
    accuracy_timers: usize,
    tick: Duration,
    workers: usize,
    only: Vec<u32>,
    out: Option<PathBuf>,
    scale: f64,
}

impl Config {
    fn wants(&self, workload: u32) -> bool {
        self.only.is_empty() || self.only.contains(&workload)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
    let mut scale = 1.0f64;
    let mut explicit: Vec<(String, String)> = Vec::new();
    let mut only = Vec::new();
    let mut out = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs"));
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--no-svg" => out = None,
            "--scale" | "--runs" | "--ops" | "--timers" | "--conns" | "--resets"
            | "--idle-timers" | "--idle-secs" | "--accuracy-timers" | "--tick-ms" | "--workers"
            | "--only" | "--out" => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("`{flag}` needs a value"))?;
                match flag.as_str() {
                    "--scale" => {
                        scale = value
                            .parse()
                            .ok()
                            .filter(|s: &f64| *s > 0.0 && s.is_finite())
                            .ok_or_else(|| {
                                format!("--scale needs a positive number, not `{value}`")
                            })?;
                    }
                    "--only" => {
                        for part in value.split(',') {
                            let w: u32 = part
                                .trim()
                                .parse()
                                .ok()
                                .filter(|w| (1..=6).contains(w))
                                .ok_or_else(|| {
                                format!("--only takes workloads 1 to 6, not `{part}`")
                            })?;
                            only.push(w);
                        }
                    }
                    "--out" => out = Some(PathBuf::from(value)),
                    _ => explicit.push((flag, value)),
                }
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let scaled = |n: f64| ((n * scale).round() as usize).max(1);
    let mut cfg = Config {
        runs: 3,
        ops: scaled(500_000.0) as u64,
        timers: scaled(1_000_000.0),
        conns: scaled(100_000.0),
        resets: scaled(1_000_000.0),
        idle_timers: scaled(100_000.0),
        idle_secs: 2.0,
        accuracy_timers: scaled(100_000.0),
        tick: Duration::from_millis(10),
        workers: cores(),
        only,
        out,
        scale,
    };
    for (flag, value) in explicit {
        let whole = || -> Result<usize, String> {
            value
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{flag}` needs a positive whole number, not `{value}`"))
        };
        match flag.as_str() {
            "--runs" => cfg.runs = whole()?,
            "--ops" => cfg.ops = whole()? as u64,
            "--timers" => cfg.timers = whole()?,
            "--conns" => cfg.conns = whole()?,
            "--resets" => cfg.resets = whole()?,
            "--idle-timers" => cfg.idle_timers = whole()?,
            "--accuracy-timers" => cfg.accuracy_timers = whole()?,
            "--tick-ms" => cfg.tick = Duration::from_millis(whole()? as u64),
            "--workers" => cfg.workers = whole()?,
            "--idle-secs" => {
                cfg.idle_secs = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| format!("--idle-secs needs a positive number, not `{value}`"))?;
            }
            _ => unreachable!("flag {flag} is listed above"),
        }
    }
    Ok(Some(cfg))
}

// ---------------------------------------------------------------------------
// Small tools.

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if !n.is_multiple_of(2) {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile of a sorted sample (nearest rank).
fn quantile(sorted: &[i64], q: f64) -> i64 {
    let last = sorted.len() - 1;
    sorted[((last as f64) * q).round() as usize]
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// Only this example weighs the timers, so this part of `PinnedVec` is here.
impl<T: Keep> PinnedVec<T> {
    /// Bytes each timer takes in the vector itself (its heap is counted by
    /// the allocator).
    fn inline_bytes() -> usize {
        std::mem::size_of::<T::Stored>()
    }
}

fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

fn multi_thread_runtime(workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("failed to build a multi-thread runtime")
}

fn build_wheel(tick: Duration) -> Wheel {
    Wheel::builder()
        .tick(tick)
        .build()
        .expect("the tick was checked when parsing the flags")
}

/// CPU time of the whole process so far: the sum over its live threads of
/// the time they ran (`/proc/self/task/*/schedstat`, nanoseconds), or, if
/// the kernel has no schedstat, user + system time from `/proc/self/stat`
/// (clock ticks, taken as 1/100 s).
fn process_cpu() -> Duration {
    let mut total = 0u64;
    let mut found = false;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for task in dir.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
                continue;
            };
            if let Some(run_ns) = text
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
            {
                total += run_ns;
                found = true;
            }
        }
    }
    if found {
        return Duration::from_nanos(total);
    }
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // Fields after the name: state is the 1st, utime the 12th, stime the 13th.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Times the workers of `rt` have parked (gone to sleep) so far.
fn worker_parks(rt: &Runtime) -> u64 {
    let m = rt.metrics();
    (0..m.num_workers()).map(|w| m.worker_park_count(w)).sum()
}

/// Today's date (UTC), as YYYY-MM-DD, from the system clock.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

// ---------------------------------------------------------------------------
// The table.

/// One row: a metric of one workload, for each timer that has it.
struct Row {
    workload: String,
    metric: String,
    tokio: Option<f64>,
    delay_queue: Option<f64>,
    wheel: Option<f64>,
    /// `wheel / tokio`, where both are there and tokio's is not zero.
    ratio: Option<f64>,
    target: Option<Target>,
}

struct Target {
    text: String,
    met: bool,
}

impl Row {
    fn new(workload: &str, metric: impl Into<String>) -> Row {
        Row {
            workload: workload.to_string(),
            metric: metric.into(),
            tokio: None,
            delay_queue: None,
            wheel: None,
            ratio: None,
            target: None,
        }
    }

    fn tokio(mut self, v: f64) -> Row {
        self.tokio = Some(v);
        self.update_ratio()
    }

    fn delay_queue(mut self, v: f64) -> Row {
        self.delay_queue = Some(v);
        self
    }

    fn wheel(mut self, v: f64) -> Row {
        self.wheel = Some(v);
        self.update_ratio()
    }

    fn update_ratio(mut self) -> Row {
        self.ratio = match (self.tokio, self.wheel) {
            (Some(t), Some(w)) if t > 0.0 && w >= 0.0 => Some(w / t),
            _ => None,
        };
        self
    }

    /// A target on `wheel / tokio`.
    fn ratio_at_most(mut self, max: f64, text: &str) -> Row {
        let met = self.ratio.is_some_and(|r| r <= max);
        self.target = Some(Target {
            text: text.to_string(),
            met,
        });
        self
    }

    /// A target on the wheel's own value.
    fn wheel_at_most(mut self, max: f64, text: &str) -> Row {
        let met = self.wheel.is_some_and(|w| w <= max);
        self.target = Some(Target {
            text: text.to_string(),
            met,
        });
        self
    }
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(0.0) => "0".to_string(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.01 => format!("{v:.2}"),
        Some(v) => format!("{v:.4}"),
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) if r >= 10.0 => format!("{r:.1}x"),
        Some(r) => format!("{r:.2}x"),
    }
}

/// The table as Markdown, padded so that it also reads as plain text.
fn render_table(rows: &[Row]) -> String {
    let header = [
        "workload",
        "metric",
        "tokio",
        "DelayQueue",
        "tokio-wheel",
        "wheel/tokio",
        "target",
        "met?",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.workload.clone(),
                r.metric.clone(),
                fmt_value(r.tokio),
                fmt_value(r.delay_queue),
                fmt_value(r.wheel),
                fmt_ratio(r.ratio),
                r.target.as_ref().map_or("-".into(), |t| t.text.clone()),
                r.target
                    .as_ref()
                    .map_or("-".into(), |t| if t.met { "met" } else { "MISSED" }.into()),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let numeric = [false, false, true, true, true, true, false, false];
    let line = |cols: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cols.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if numeric[i] {
                let _ = write!(s, " {}{} |", " ".repeat(pad), c);
            } else {
                let _ = write!(s, " {}{} |", c, " ".repeat(pad));
            }
        }
        s
    };
    let mut out = String::new();
    out.push_str(&line(&header.map(String::from)));
    out.push('\n');
    let mut sep = String::from("|");
    for (i, w) in widths.iter().enumerate() {
        if numeric[i] {
            let _ = write!(sep, "{}:|", "-".repeat(w + 1));
        } else {
            let _ = write!(sep, "{}|", "-".repeat(w + 2));
        }
    }
    out.push_str(&sep);
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// Extra figures printed under the table: the evidence behind the rows.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn add(&mut self, line: impl Into<String>) {
        self.0.push(line.into());
    }
}

// ---------------------------------------------------------------------------
// Workload 1: timeout registered then cancelled.

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timed {
    Baseline,
    Tokio,
    Wheel,
    WheelFree,
}

#[derive(Debug, Clone, Copy)]
enum Flavor {
    CurrentThread,
    MultiThread { workers: usize, tasks: usize },
}

async fn timeout_ops(kind: Timed, wheel: Wheel, ops: u64) {
    match kind {
        Timed::Baseline => {
            for _ in 0..ops {
                YieldOnce::default().await;
            }
        }
        Timed::Tokio => {
            for _ in 0..ops {
                let res = tokio::time::timeout(REQUEST_TIMEOUT, YieldOnce::default()).await;
                assert!(res.is_ok(), "a 5 s timeout fired");
            }
        }
        Timed::Wheel => {
            for _ in 0..ops {
                let res = wheel.timeout(REQUEST_TIMEOUT, YieldOnce::default()).await;
                assert!(res.is_ok(), "a 5 s timeout fired");
            }
        }
        Timed::WheelFree => {
            for _ in 0..ops {
                let res = tokio_wheel::timeout(REQUEST_TIMEOUT, YieldOnce::default()).await;
                assert!(res.is_ok(), "a 5 s timeout fired");
            }
        }
    }
}

/// Runs `ops` operations spread over `tasks` tasks; returns the wall time.
async fn timeout_tasks(kind: Timed, wheel: &Wheel, tasks: usize, ops: u64) -> Duration {
    let start = std::time::Instant::now();
    let handles: Vec<_> = (0..tasks as u64)
        .map(|t| {
            let share = ops * (t + 1) / tasks as u64 - ops * t / tasks as u64;
            tokio::spawn(timeout_ops(kind, wheel.clone(), share))
        })
        .collect();
    for h in handles {
        h.await.expect("a workload-1 task panicked");
    }
    start.elapsed()
}

/// Nanoseconds of wall time per operation.
fn timeout_once(flavor: Flavor, kind: Timed, ops: u64, tick: Duration) -> f64 {
    let (rt, tasks) = match flavor {
        Flavor::CurrentThread => (current_thread_runtime(), 1),
        Flavor::MultiThread { workers, tasks } => (multi_thread_runtime(workers), tasks),
    };
    rt.block_on(async {
        let wheel = build_wheel(tick);
        // Warm-up: threads, caches, the wheels' slabs and drivers.
        timeout_tasks(kind, &wheel, tasks, (ops / 10).max(1)).await;
        let wall = timeout_tasks(kind, &wheel, tasks, ops).await;
        ns(wall) / ops as f64
    })
}

fn workload_1(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let flavors = [
        ("1 timeout, current_thread", Flavor::CurrentThread),
        (
            "1 timeout, multi_thread 2w/8t",
            Flavor::MultiThread {
                workers: 2,
                tasks: 8,
            },
        ),
    ];
    let kinds = [
        Timed::Baseline,
        Timed::Tokio,
        Timed::Wheel,
        Timed::WheelFree,
    ];
    for (label, flavor) in flavors {
        let mut samples: [Vec<f64>; 4] = Default::default();
        // Short measurements on a noisy machine: three times as many runs.
        for run in 0..cfg.runs * 3 {
            // Rotate the order from run to run, so none always goes first.
            for i in 0..kinds.len() {
                let k = (i + run) % kinds.len();
                samples[k].push(timeout_once(flavor, kinds[k], cfg.ops, cfg.tick));
            }
        }
        let spread = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{lo:.0}-{hi:.0}")
        };
        notes.add(format!(
            "{label}: range over runs (ns/op): baseline {}, tokio {}, Wheel::timeout {}, \
             free fn {}",
            spread(&samples[0]),
            spread(&samples[1]),
            spread(&samples[2]),
            spread(&samples[3])
        ));
        let [base, tokio, wheel, free] = samples.map(median);
        rows.push(
            Row::new(
                label,
                format!("ns/op, Wheel::timeout (no timeout: {base:.1})"),
            )
            .tokio(tokio)
            .wheel(wheel),
        );
        rows.push(
            Row::new(
                label,
                format!("ns/op, free fn timeout (no timeout: {base:.1})"),
            )
            .tokio(tokio)
            .wheel(free),
        );
        rows.push(
            Row::new(label, "overhead ns/op, Wheel::timeout")
                .tokio(tokio - base)
                .wheel(wheel - base)
                .ratio_at_most(0.2, "<= 0.2x tokio"),
        );
        rows.push(
            Row::new(label, "overhead ns/op, free fn timeout")
                .tokio(tokio - base)
                .wheel(free - base)
                .ratio_at_most(0.2, "<= 0.2x tokio"),
        );
        notes.add(format!(
            "{label}: ns/op baseline {base:.1}, tokio {tokio:.1}, Wheel::timeout {wheel:.1}, \
             tokio_wheel::timeout {free:.1} (median of {} runs of {} ops)",
            cfg.runs * 3,
            cfg.ops
        ));
    }
}

/// Nanoseconds per call of `f`: the median of 5 runs of 1M calls.
fn per_call(mut f: impl FnMut()) -> f64 {
    const CALLS: u32 = 1_000_000;
    for _ in 0..CALLS / 10 {
        f();
    }
    median(
        (0..5)
            .map(|_| {
                let start = std::time::Instant::now();
                for _ in 0..CALLS {
                    f();
                }
                ns(start.elapsed()) / f64::from(CALLS)
            })
            .collect(),
    )
}

/// What the parts of one registered-then-cancelled timer cost, measured in a
/// task on a current-thread runtime, with the task's own waker.
fn measure_costs(cx: &mut Context<'_>, wheel: &Wheel) -> Vec<(&'static str, f64)> {
    use std::hint::black_box;
    let mutex = std::sync::Mutex::new(0u64);
    let arc = Arc::new(0u64);
    let register_wheel = |s: tokio_wheel::Sleep, cx: &mut Context<'_>| {
        let mut s = black_box(s);
        assert!(Pin::new(&mut s).poll(cx).is_pending());
        drop(s);
    };
    vec![
        (
            "tokio::time::Instant::now()",
            per_call(|| {
                black_box(Instant::now());
            }),
        ),
        (
            "uncontended Mutex lock + unlock",
            per_call(|| *black_box(&mutex).lock().unwrap() += 1),
        ),
        (
            "Arc clone + drop",
            per_call(|| drop(black_box(Arc::clone(black_box(&arc))))),
        ),
        (
            "task Waker clone + drop",
            per_call(|| drop(black_box(cx.waker().clone()))),
        ),
        (
            "runtime Handle::current() + drop",
            per_call(|| drop(black_box(tokio::runtime::Handle::current()))),
        ),
        (
            "tokio::time::sleep: create + drop",
            per_call(|| drop(black_box(tokio::time::sleep(REQUEST_TIMEOUT)))),
        ),
        (
            "tokio::time::sleep: create + register + cancel",
            per_call(|| {
                let s = std::pin::pin!(black_box(tokio::time::sleep(REQUEST_TIMEOUT)));
                assert!(s.poll(cx).is_pending());
            }),
        ),
        (
            "Wheel::sleep: create + drop",
            per_call(|| drop(black_box(wheel.sleep(REQUEST_TIMEOUT)))),
        ),
        (
            "Wheel::sleep: create + register + cancel",
            per_call(|| register_wheel(wheel.sleep(REQUEST_TIMEOUT), cx)),
        ),
        (
            "tokio_wheel::sleep: create + register + cancel",
            per_call(|| register_wheel(tokio_wheel::sleep(REQUEST_TIMEOUT), cx)),
        ),
    ]
}

fn cost_model(tick: Duration, notes: &mut Notes) {
    let costs = current_thread_runtime().block_on(async move {
        tokio::spawn(async move {
            use std::future::poll_fn;
            let wheel = build_wheel(tick);
            // Tokio's driver wakes itself (an eventfd write, a syscall) for every
            // timer registered before its next planned wake-up, and plans one
            // only when the runtime parks. A loop that registers without ever
            // letting the runtime park pays that syscall every time:
            let unplanned = poll_fn(|cx| {
                Poll::Ready(per_call(|| {
                    let s =
                        std::pin::pin!(std::hint::black_box(tokio::time::sleep(REQUEST_TIMEOUT)));
                    assert!(s.poll(cx).is_pending());
                }))
            })
            .await;
            // A server's runtime parks every few dozen polls: keep one timer
            // registered and let the runtime park once, so the driver has
            // planned a wake-up before the later timers are measured.
            let planned = std::pin::pin!(tokio::time::sleep(Duration::from_secs(1)));
            park_with_pending(planned).await;
            let mut costs = poll_fn(|cx| Poll::Ready(measure_costs(cx, &wheel))).await;
            costs.push((
                "tokio::time::sleep: create + register + cancel with no wake-up planned",
                unplanned,
            ));
            costs
        })
        .await
        .expect("the cost model panicked")
    });
    let parts: Vec<String> = costs
        .iter()
        .map(|(what, ns)| format!("{what} {ns:.1}"))
        .collect();
    notes.add(format!(
        "cost model, ns per call (current-thread runtime, in a task, its own waker; median of \
         5 x 1M): {}",
        parts.join("; ")
    ));
}

// ---------------------------------------------------------------------------
// Workload 2: 1M pending timers.

/// Timers registered per poll in workload 2. Between two polls the runtime
/// turns, as it does between a server's tasks: tokio's driver plans its next
/// wake-up only when the runtime parks, and until it has, every registration
/// writes to its eventfd (see the cost model in the notes).
const CHUNK: usize = 1024;

struct PendingResult {
    register: Delta,
    bytes_per_timer: f64,
    drop: Delta,
}

fn pending_tokio(deadlines: &[Duration]) -> PendingResult {
    current_thread_runtime().block_on(async {
        let n = deadlines.len();
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(n);
        let probe = Probe::now();
        for chunk in deadlines.chunks(CHUNK) {
            for &d in chunk {
                let timer = timers.push(tokio::time::sleep(d));
                assert!(timer.poll(&mut cx).is_pending());
            }
            tokio::task::yield_now().await;
        }
        let register = probe.delta();
        let bytes_per_timer = PinnedVec::<tokio::time::Sleep>::inline_bytes() as f64
            + register.heap as f64 / n as f64;
        let probe = Probe::now();
        drop(timers);
        PendingResult {
            register,
            bytes_per_timer,
            drop: probe.delta(),
        }
    })
}

fn pending_wheel(deadlines: &[Duration], tick: Duration) -> PendingResult {
    current_thread_runtime().block_on(async {
        let n = deadlines.len();
        let wheel = build_wheel(tick);
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(n);
        let probe = Probe::now();
        for chunk in deadlines.chunks(CHUNK) {
            for &d in chunk {
                let timer = timers.push(wheel.sleep(d));
                assert!(timer.poll(&mut cx).is_pending());
            }
            tokio::task::yield_now().await;
        }
        let register = probe.delta();
        assert_eq!(wheel.pending(), n);
        let bytes_per_timer = PinnedVec::<tokio_wheel::Sleep>::inline_bytes() as f64
            + register.heap as f64 / n as f64;
        let probe = Probe::now();
        drop(timers);
        let dropped = probe.delta();
        assert_eq!(wheel.pending(), 0);
        PendingResult {
            register,
            bytes_per_timer,
            drop: dropped,
        }
    })
}

fn pending_delay_queue(deadlines: &[Duration]) -> PendingResult {
    current_thread_runtime().block_on(async {
        let n = deadlines.len();
        let mut keys = Vec::with_capacity(n);
        let probe = Probe::now();
        let mut queue = DelayQueue::new();
        for chunk in deadlines.chunks(CHUNK) {
            for &d in chunk {
                keys.push(queue.insert((), d));
            }
            tokio::task::yield_now().await;
        }
        let register = probe.delta();
        // The caller keeps a key per timer to cancel it.
        let bytes_per_timer = std::mem::size_of::<tokio_util::time::delay_queue::Key>() as f64
            + register.heap as f64 / n as f64;
        let probe = Probe::now();
        for key in &keys {
            queue.remove(key);
        }
        drop(queue);
        PendingResult {
            register,
            bytes_per_timer,
            drop: probe.delta(),
        }
    })
}

fn workload_2(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let n = cfg.timers;
    let deadlines = spread_deadlines(n, 2);
    // Warm-up: the allocator's arenas, at a tenth of the size.
    let _ = pending_wheel(&deadlines[..n / 10], cfg.tick);
    let _ = pending_tokio(&deadlines[..n / 10]);
    let _ = pending_delay_queue(&deadlines[..n / 10]);
    let (mut t, mut w, mut q) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..cfg.runs {
        t.push(pending_tokio(&deadlines));
        w.push(pending_wheel(&deadlines, cfg.tick));
        q.push(pending_delay_queue(&deadlines));
    }
    let med = |v: &[PendingResult], f: fn(&PendingResult) -> f64| median(v.iter().map(f).collect());
    let label = format!("2 {} pending (1-60 s)", count_label(n));
    let register = |r: &PendingResult| ms(r.register.time);
    let bytes = |r: &PendingResult| r.bytes_per_timer;
    let dropped = |r: &PendingResult| ms(r.drop.time);
    rows.push(
        Row::new(&label, "register (create + poll) all, ms")
            .tokio(med(&t, register))
            .delay_queue(med(&q, register))
            .wheel(med(&w, register))
            .ratio_at_most(0.2, ">= 5x faster"),
    );
    rows.push(
        Row::new(&label, "bytes per pending timer")
            .tokio(med(&t, bytes))
            .delay_queue(med(&q, bytes))
            .wheel(med(&w, bytes))
            .wheel_at_most(64.0, "<= 64 B"),
    );
    rows.push(
        Row::new(&label, "drop (cancel) all, ms")
            .tokio(med(&t, dropped))
            .delay_queue(med(&q, dropped))
            .wheel(med(&w, dropped)),
    );
    let last = |v: &[PendingResult]| {
        let r = v.last().expect("at least one run");
        format!(
            "heap {} B, {} page faults and {} allocator calls while registering, {} page faults \
             while dropping",
            r.register.heap, r.register.faults, r.register.allocs, r.drop.faults
        )
    };
    notes.add(format!(
        "2: size_of Sleep: tokio {} B, tokio-wheel {} B. Last run, for {n} timers: tokio {}; \
         tokio-wheel {}; DelayQueue {} (its row adds the 8 B key the caller keeps). The \
         timers' own buffer ({n} x size_of) was allocated before the clock started; its pages \
         are first touched while registering",
        std::mem::size_of::<tokio::time::Sleep>(),
        std::mem::size_of::<tokio_wheel::Sleep>(),
        last(&t),
        last(&w),
        last(&q),
    ));
}

fn count_label(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

// ---------------------------------------------------------------------------
// Workload 3: mass expiry.

const EXPIRY_WINDOW: Duration = Duration::from_millis(100);
const TICKER_PERIOD: Duration = Duration::from_millis(1);

struct Expiry {
    n: usize,
    /// Instants are kept as nanoseconds since `origin`.
    origin: Instant,
    registered: AtomicUsize,
    all_registered_ns: AtomicU64,
    done: AtomicUsize,
    last_seen_ns: AtomicU64,
    notify: Notify,
}

impl Expiry {
    fn since_origin(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

    fn registering(&self) {
        if self.registered.fetch_add(1, Ordering::Relaxed) + 1 == self.n {
            self.all_registered_ns
                .store(self.since_origin(Instant::now()), Ordering::Relaxed);
        }
    }

    fn woke(&self) {
        let seen = self.since_origin(Instant::now());
        self.last_seen_ns.fetch_max(seen, Ordering::Relaxed);
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.notify.notify_one();
        }
    }
}

async fn expire_tokio(deadline: Instant, shared: Arc<Expiry>) {
    let sleep = tokio::time::sleep_until(deadline);
    shared.registering();
    sleep.await;
    shared.woke();
}

async fn expire_wheel(wheel: Wheel, deadline: Instant, shared: Arc<Expiry>) {
    let sleep = wheel.sleep_until(deadline);
    shared.registering();
    sleep.await;
    shared.woke();
}

/// A task that wants to run every millisecond; records (scheduled instant,
/// delay) until `stop`. A late tick does not make the next ones burst.
async fn ticker(stop: Arc<AtomicBool>) -> Vec<(Instant, Duration)> {
    let mut samples = Vec::with_capacity(1 << 14);
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        next += TICKER_PERIOD;
        tokio::time::sleep_until(next).await;
        let now = Instant::now();
        samples.push((next, now - next));
        if now > next + TICKER_PERIOD {
            next = now;
        }
    }
    samples
}

struct ExpiryResult {
    /// Last wake-up seen minus the last deadline.
    after_last: Duration,
    ticker_max: Duration,
    setup: Duration,
    /// Whether every task was registered before the first deadline.
    setup_in_time: bool,
    wheel_stats: Option<tokio_wheel::Stats>,
}

/// One run of workload 3; `lead` is the time from the start of spawning to
/// the first deadline, which must be enough to spawn and register every task.
fn expiry_once(use_wheel: bool, n: usize, cfg: &Config, lead: Duration, seed: u64) -> ExpiryResult {
    let rt = multi_thread_runtime(cfg.workers);
    let tick = cfg.tick;
    rt.block_on(async move {
        let wheel = use_wheel.then(|| build_wheel(tick));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = tokio::spawn(ticker(stop.clone()));
        let origin = Instant::now();
        let base = origin + lead;
        let mut rng = Rng::new(seed);
        let window_ns = EXPIRY_WINDOW.as_nanos() as u64;
        let offsets: Vec<u64> = (0..n).map(|_| rng.below(window_ns)).collect();
        let last_deadline = base + Duration::from_nanos(offsets.iter().copied().max().unwrap_or(0));
        let shared = Arc::new(Expiry {
            n,
            origin,
            registered: AtomicUsize::new(0),
            all_registered_ns: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            last_seen_ns: AtomicU64::new(0),
            notify: Notify::new(),
        });
        // Spawned from a worker, as a server's tasks are.
        let spawner = {
            let shared = shared.clone();
            let wheel = wheel.clone();
            tokio::spawn(async move {
                for off in offsets {
                    let deadline = base + Duration::from_nanos(off);
                    match &wheel {
                        Some(w) => drop(tokio::spawn(expire_wheel(
                            w.clone(),
                            deadline,
                            shared.clone(),
                        ))),
                        None => drop(tokio::spawn(expire_tokio(deadline, shared.clone()))),
                    }
                }
            })
        };
        spawner.await.expect("the spawner panicked");
        while shared.done.load(Ordering::Acquire) < n {
            shared.notify.notified().await;
        }
        stop.store(true, Ordering::Relaxed);
        let samples = ticker.await.expect("the ticker panicked");
        let last_seen = origin + Duration::from_nanos(shared.last_seen_ns.load(Ordering::Relaxed));
        let setup = Duration::from_nanos(shared.all_registered_ns.load(Ordering::Relaxed));
        let ticker_max = samples
            .iter()
            .filter(|(at, _)| *at + TICKER_PERIOD >= base && *at <= last_seen)
            .map(|&(_, delay)| delay)
            .max()
            .unwrap_or_default();
        ExpiryResult {
            after_last: last_seen.saturating_duration_since(last_deadline),
            ticker_max,
            setup,
            setup_in_time: setup < lead && setup > Duration::ZERO,
            wheel_stats: wheel.map(|w| w.stats()),
        }
    })
}

fn workload_3(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let n = cfg.timers;
    // Warm-up at a tenth of the size, which also tells how long spawning and
    // registering takes here, to place the window after it.
    let small = (n / 10).max(1);
    let generous = Duration::from_millis(300) + Duration::from_micros(5 * small as u64);
    let setup = [false, true]
        .map(|wheel| expiry_once(wheel, small, cfg, generous, 0).setup)
        .into_iter()
        .max()
        .unwrap_or_default();
    let mut lead = Duration::from_millis(300) + setup.mul_f64(2.0 * n as f64 / small as f64);
    let mut run_one = |wheel: bool, seed: u64| {
        // A run whose setup overran its lead measured nothing: again, with
        // more room (up to twice).
        let mut r = expiry_once(wheel, n, cfg, lead, seed);
        for _ in 0..2 {
            if r.setup_in_time {
                break;
            }
            lead = Duration::from_millis(300) + r.setup.mul_f64(1.5);
            r = expiry_once(wheel, n, cfg, lead, seed);
        }
        r
    };
    let (mut t, mut w) = (Vec::new(), Vec::new());
    for run in 0..cfg.runs {
        t.push(run_one(false, 3 + run as u64));
        w.push(run_one(true, 3 + run as u64));
    }
    let med = |v: &[ExpiryResult], f: fn(&ExpiryResult) -> Duration| {
        median(v.iter().map(|r| ms(f(r))).collect())
    };
    let label = format!("3 {} due in 100 ms", count_label(n));
    let tick_ms = ms(cfg.tick);
    rows.push(
        Row::new(&label, "last deadline -> all woken, ms")
            .tokio(med(&t, |r| r.after_last))
            .wheel(med(&w, |r| r.after_last))
            .ratio_at_most(1.0, "<= tokio"),
    );
    rows.push(
        Row::new(&label, "max delay of a 1 ms ticker, ms")
            .tokio(med(&t, |r| r.ticker_max))
            .wheel(med(&w, |r| r.ticker_max))
            .wheel_at_most(tick_ms, &format!("<= 1 tick ({tick_ms:.0} ms)")),
    );
    rows.push(
        Row::new(&label, "setup: spawn + register all, ms")
            .tokio(med(&t, |r| r.setup))
            .wheel(med(&w, |r| r.setup)),
    );
    if t.iter().chain(&w).any(|r| !r.setup_in_time) {
        notes
            .add("3: WARNING: in some run not every task had registered before the first deadline");
    }
    let fmt_runs = |v: &[ExpiryResult], f: fn(&ExpiryResult) -> Duration| {
        v.iter()
            .map(|r| format!("{:.1}", ms(f(r))))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    notes.add(format!(
        "3: per run, last deadline -> all woken (ms): tokio {}, wheel {}; ticker max delay (ms): \
         tokio {}, wheel {}",
        fmt_runs(&t, |r| r.after_last),
        fmt_runs(&w, |r| r.after_last),
        fmt_runs(&t, |r| r.ticker_max),
        fmt_runs(&w, |r| r.ticker_max),
    ));
    if let Some(stats) = w.last().and_then(|r| r.wheel_stats) {
        notes.add(format!(
            "3: wheel stats of the last run: fired {}, driver wake-ups {}, ticks visited {}, \
             most timers woken for one tick {}, driver's largest lag behind a tick {:.1} ms",
            stats.fired,
            stats.driver_wakeups,
            stats.ticks,
            stats.max_batch,
            ms(stats.max_lag)
        ));
    }
}

// ---------------------------------------------------------------------------
// Workload 4: reset on every packet.

const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Which connection each packet belongs to.
fn packet_order(conns: usize, resets: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..resets)
        .map(|_| rng.below(conns as u64) as u32)
        .collect()
}

fn reset_tokio(conns: usize, packets: &[u32], repoll: bool) -> Duration {
    current_thread_runtime().block_on(async {
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(conns);
        for _ in 0..conns {
            let timer = timers.push(tokio::time::sleep(IDLE_TIMEOUT));
            assert!(timer.poll(&mut cx).is_pending());
        }
        let start = Instant::now();
        for &c in packets {
            let mut timer = timers.get(c as usize);
            timer.as_mut().reset(Instant::now() + IDLE_TIMEOUT);
            if repoll {
                assert!(timer.poll(&mut cx).is_pending());
            }
        }
        start.elapsed()
    })
}

fn reset_wheel(conns: usize, packets: &[u32], repoll: bool, tick: Duration) -> Duration {
    current_thread_runtime().block_on(async {
        let wheel = build_wheel(tick);
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(conns);
        for _ in 0..conns {
            let timer = timers.push(wheel.sleep(IDLE_TIMEOUT));
            assert!(timer.poll(&mut cx).is_pending());
        }
        let start = Instant::now();
        for &c in packets {
            let mut timer = timers.get(c as usize);
            timer
                .as_mut()
                .get_mut()
                .reset(Instant::now() + IDLE_TIMEOUT);
            if repoll {
                assert!(timer.poll(&mut cx).is_pending());
            }
        }
        let elapsed = start.elapsed();
        assert_eq!(wheel.pending(), conns);
        elapsed
    })
}

fn reset_delay_queue(conns: usize, packets: &[u32]) -> Duration {
    current_thread_runtime().block_on(async {
        let mut queue = DelayQueue::with_capacity(conns);
        let keys: Vec<_> = (0..conns).map(|c| queue.insert(c, IDLE_TIMEOUT)).collect();
        let start = Instant::now();
        for &c in packets {
            queue.reset_at(&keys[c as usize], Instant::now() + IDLE_TIMEOUT);
        }
        start.elapsed()
    })
}

fn workload_4(cfg: &Config, rows: &mut Vec<Row>) {
    let packets = packet_order(cfg.conns, cfg.resets, 4);
    let warm = &packets[..packets.len() / 10];
    let _ = reset_tokio(cfg.conns, warm, true);
    let _ = reset_wheel(cfg.conns, warm, true, cfg.tick);
    let mut s: [Vec<f64>; 5] = Default::default();
    for _ in 0..cfg.runs {
        s[0].push(ns(reset_tokio(cfg.conns, &packets, false)));
        s[1].push(ns(reset_wheel(cfg.conns, &packets, false, cfg.tick)));
        s[2].push(ns(reset_delay_queue(cfg.conns, &packets)));
        s[3].push(ns(reset_tokio(cfg.conns, &packets, true)));
        s[4].push(ns(reset_wheel(cfg.conns, &packets, true, cfg.tick)));
    }
    let per = cfg.resets as f64;
    let [tokio, wheel, queue, tokio_poll, wheel_poll] = s.map(|v| median(v) / per);
    let label = format!(
        "4 reset, {} conns, {} resets",
        count_label(cfg.conns),
        count_label(cfg.resets)
    );
    rows.push(
        Row::new(&label, "ns per reset")
            .tokio(tokio)
            .delay_queue(queue)
            .wheel(wheel)
            .ratio_at_most(1.0, "<= tokio"),
    );
    rows.push(
        Row::new(&label, "ns per reset + poll")
            .tokio(tokio_poll)
            .wheel(wheel_poll)
            .ratio_at_most(1.0, "<= tokio"),
    );
}

// ---------------------------------------------------------------------------
// Workload 5: idle cost.

const FAR: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdleCase {
    /// Nothing pending (after one timer fired, so the wheel's driver ran).
    Nothing,
    /// Timers all due in 10 minutes.
    Far,
    /// The far timers, plus 1000 timers due within the window, cancelled at
    /// once: their ticks are empty.
    Cancelled,
}

struct IdleResult {
    driver_wakeups: Option<u64>,
    /// The wheel's ticks visited and timers fired during the window.
    ticks_visited: u64,
    fired: u64,
    /// Driver wake-ups the cancelled timers should cause, by design.
    predicted: Option<u64>,
    parks: u64,
    cpu: Duration,
    wall: Duration,
}

/// How many timers the `Cancelled` case cancels.
const CANCELLED: usize = 1000;
/// Time given to the runtime and the driver to settle before a window.
const SETTLE: Duration = Duration::from_millis(100);

enum Timers {
    Tokio(PinnedVec<tokio::time::Sleep>),
    Wheel(PinnedVec<tokio_wheel::Sleep>),
}

impl Timers {
    /// Drops (cancels) them; call inside the runtime they were made on.
    fn drop_all(self) {
        match self {
            Timers::Tokio(v) => drop(v),
            Timers::Wheel(v) => drop(v),
        }
    }
}

fn idle_once(use_wheel: bool, case: IdleCase, cfg: &Config) -> IdleResult {
    let rt = multi_thread_runtime(cfg.workers);
    let window = Duration::from_secs_f64(cfg.idle_secs);
    let wheel = rt.block_on(async { build_wheel(cfg.tick) });
    let far = if case == IdleCase::Nothing {
        0
    } else {
        cfg.idle_timers
    };
    let (timers, cancelled) = rt.block_on(async {
        // One timer that fires, so that a driver has run (and stopped).
        if use_wheel {
            wheel.sleep(Duration::from_millis(20)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Due from 200 ms into the window on; cancelled just before it opens,
        // when the driver has planned its next wake-up for the first of them.
        let doomed = if case == IdleCase::Cancelled {
            CANCELLED
        } else {
            0
        };
        let mut rng = Rng::new(5);
        let lead = SETTLE + Duration::from_millis(200);
        let spread = window.saturating_sub(Duration::from_millis(300)).as_nanos() as u64 + 1;
        let soon: Vec<Duration> = (0..doomed)
            .map(|_| lead + Duration::from_nanos(rng.below(spread)))
            .collect();
        let mut cx = noop_cx();
        if use_wheel {
            let mut far_timers = PinnedVec::with_capacity(far);
            for _ in 0..far {
                assert!(far_timers.push(wheel.sleep(FAR)).poll(&mut cx).is_pending());
            }
            let mut doomed = PinnedVec::with_capacity(soon.len());
            for &d in &soon {
                assert!(doomed.push(wheel.sleep(d)).poll(&mut cx).is_pending());
            }
            (Timers::Wheel(far_timers), Timers::Wheel(doomed))
        } else {
            let mut far_timers = PinnedVec::with_capacity(far);
            for _ in 0..far {
                let timer = far_timers.push(tokio::time::sleep(FAR));
                assert!(timer.poll(&mut cx).is_pending());
            }
            let mut doomed = PinnedVec::with_capacity(soon.len());
            for &d in &soon {
                assert!(doomed
                    .push(tokio::time::sleep(d))
                    .poll(&mut cx)
                    .is_pending());
            }
            (Timers::Tokio(far_timers), Timers::Tokio(doomed))
        }
    });
    // By design the driver wakes once, for the tick it planned for the
    // earliest of them before they were cancelled (cancelling does not wake
    // it to plan again), and never for a tick already empty when it plans.
    let predicted = (use_wheel && case == IdleCase::Cancelled).then_some(1);
    // Let the driver (and the workers) settle before the window opens.
    std::thread::sleep(SETTLE);
    rt.block_on(async move { cancelled.drop_all() });
    let before = (wheel.stats(), worker_parks(&rt), process_cpu());
    let start = std::time::Instant::now();
    std::thread::sleep(window);
    let after = (wheel.stats(), worker_parks(&rt), process_cpu());
    let wall = start.elapsed();
    rt.block_on(async move { timers.drop_all() });
    IdleResult {
        driver_wakeups: use_wheel.then_some(after.0.driver_wakeups - before.0.driver_wakeups),
        ticks_visited: after.0.ticks - before.0.ticks,
        fired: after.0.fired - before.0.fired,
        predicted,
        parks: after.1 - before.1,
        cpu: after.2.saturating_sub(before.2),
        wall,
    }
}

fn workload_5(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let cases = [
        ("5 idle, nothing pending", IdleCase::Nothing),
        ("5 idle, timers due in 10 min", IdleCase::Far),
        ("5 idle, + 1000 cancelled in window", IdleCase::Cancelled),
    ];
    for (label, case) in cases {
        let label = match case {
            IdleCase::Far => format!("5 idle, {} due in 10 min", count_label(cfg.idle_timers)),
            IdleCase::Cancelled => format!(
                "5 idle, {} in 10 min + {CANCELLED} cancelled",
                count_label(cfg.idle_timers)
            ),
            IdleCase::Nothing => label.to_string(),
        };
        let t = idle_once(false, case, cfg);
        let w = idle_once(true, case, cfg);
        let per_s = |n: u64, r: &IdleResult| n as f64 / r.wall.as_secs_f64();
        let cpu = |r: &IdleResult| ms(r.cpu) / r.wall.as_secs_f64();
        let driver = w.driver_wakeups.unwrap_or(0);
        match case {
            IdleCase::Cancelled => rows.push(
                Row::new(&label, "wheel driver wake-ups (count)")
                    .wheel(driver as f64)
                    .wheel_at_most(1.0, "<= 1, the planned tick"),
            ),
            _ => rows.push(
                Row::new(&label, "wheel driver wake-ups/s")
                    .wheel(per_s(driver, &w))
                    .wheel_at_most(0.0, "0"),
            ),
        }
        rows.push(
            Row::new(&label, "runtime worker parks/s")
                .tokio(per_s(t.parks, &t))
                .wheel(per_s(w.parks, &w)),
        );
        rows.push(
            Row::new(&label, "process CPU, ms per s")
                .tokio(cpu(&t))
                .wheel(cpu(&w)),
        );
        notes.add(format!(
            "{label}: over {:.1} s of wall time: tokio {} worker parks, {:.2} ms CPU; wheel {} \
             driver wake-ups ({} ticks visited, {} timers fired{}), {} worker parks, {:.2} ms CPU",
            w.wall.as_secs_f64(),
            t.parks,
            ms(t.cpu),
            driver,
            w.ticks_visited,
            w.fired,
            w.predicted.map_or(String::new(), |p| format!(
                "; {p} predicted: the tick planned for the earliest of them before they were \
                 cancelled, none for a tick already empty when planned"
            )),
            w.parks,
            ms(w.cpu)
        ));
    }
}

// ---------------------------------------------------------------------------
// Workload 6: accuracy.

const ACCURACY_SPAN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accuracy {
    Tokio,
    DelayQueue,
    Wheel(Duration),
}

/// Lateness (seen minus deadline, ns) of every timer, and for the wheel the
/// part of it after the tick the timer was due at (its delivery).
struct Lateness {
    late: Vec<i64>,
    delivery: Vec<i64>,
}

fn signed_ns(later: Instant, earlier: Instant) -> i64 {
    match later.checked_duration_since(earlier) {
        Some(d) => d.as_nanos() as i64,
        None => -(earlier.duration_since(later).as_nanos() as i64),
    }
}

fn accuracy_once(kind: Accuracy, n: usize, workers: usize, seed: u64) -> Lateness {
    let rt = multi_thread_runtime(workers);
    rt.block_on(async move {
        let before = Instant::now();
        let wheel = match kind {
            Accuracy::Wheel(tick) => Some(build_wheel(tick)),
            _ => None,
        };
        let after = Instant::now();
        let start =
            Instant::now() + Duration::from_millis(200) + Duration::from_nanos(2000 * n as u64);
        let mut rng = Rng::new(seed);
        let span = ACCURACY_SPAN.as_nanos() as u64;
        let deadlines: Vec<Instant> = (0..n)
            .map(|_| start + Duration::from_nanos(rng.below(span)))
            .collect();
        let seen: Arc<Vec<AtomicI64Cell>> =
            Arc::new((0..n).map(|_| AtomicI64Cell::default()).collect());
        match kind {
            Accuracy::DelayQueue => {
                let mut queue = DelayQueue::with_capacity(n);
                for (i, &d) in deadlines.iter().enumerate() {
                    queue.insert_at(i, d);
                }
                let mut left = n;
                while left > 0 {
                    let expired = std::future::poll_fn(|cx| queue.poll_expired(cx)).await;
                    let now = Instant::now();
                    let i = expired.expect("the queue held entries").into_inner();
                    seen[i].set(signed_ns(now, deadlines[i]));
                    left -= 1;
                }
            }
            _ => {
                let handles: Vec<_> = deadlines
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| {
                        let seen = seen.clone();
                        match &wheel {
                            // Made in the task: a timer lives in the shard of
                            // the thread that makes it.
                            Some(w) => {
                                let w = w.clone();
                                tokio::spawn(async move {
                                    w.sleep_until(d).await;
                                    seen[i].set(signed_ns(Instant::now(), d));
                                })
                            }
                            None => tokio::spawn(async move {
                                tokio::time::sleep_until(d).await;
                                seen[i].set(signed_ns(Instant::now(), d));
                            }),
                        }
                    })
                    .collect();
                for h in handles {
                    h.await.expect("an accuracy task panicked");
                }
            }
        }
        let late: Vec<i64> = seen.iter().map(AtomicI64Cell::get).collect();
        // The wheel's tick k is at origin + k * tick, its origin being read
        // inside `build()`, between `before` and `after`. Timers whose tick
        // that bracket cannot tell (deadlines within it of a tick boundary)
        // are left out of the delivery figures.
        let delivery = match kind {
            Accuracy::Wheel(tick) => {
                let tick_ns = tick.as_nanos() as i64;
                let bracket = signed_ns(after, before);
                let fire_at = |t: i64, origin: i64| {
                    (t - origin + tick_ns - 1).div_euclid(tick_ns) * tick_ns + origin
                };
                deadlines
                    .iter()
                    .zip(&late)
                    .filter_map(|(&d, &l)| {
                        let t = signed_ns(d, before);
                        let at = fire_at(t, 0);
                        (at + bracket == fire_at(t, bracket)).then_some(t + l - at)
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Lateness { late, delivery }
    })
}

/// An `AtomicI64` by another name, with a sentinel for "never seen".
struct AtomicI64Cell(std::sync::atomic::AtomicI64);

impl Default for AtomicI64Cell {
    fn default() -> Self {
        AtomicI64Cell(std::sync::atomic::AtomicI64::new(i64::MIN))
    }
}

impl AtomicI64Cell {
    fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }

    fn get(&self) -> i64 {
        let v = self.0.load(Ordering::Relaxed);
        assert_ne!(v, i64::MIN, "a timer was never seen to fire");
        v
    }
}

/// min, p50, p99, max (ms) and early fires of one run.
#[derive(Debug, Clone, Copy)]
struct Dist {
    q: [f64; 4],
    early: usize,
}

fn dist(sample: &[i64]) -> Dist {
    let mut s = sample.to_vec();
    s.sort_unstable();
    let q = [0.0, 0.5, 0.99, 1.0].map(|p| quantile(&s, p) as f64 / 1e6);
    Dist {
        q,
        early: s.iter().filter(|&&v| v < 0).count(),
    }
}

fn median_dist(runs: &[Dist]) -> Dist {
    Dist {
        q: [0, 1, 2, 3].map(|i| median(runs.iter().map(|d| d.q[i]).collect())),
        early: runs.iter().map(|d| d.early).max().unwrap_or(0),
    }
}

/// Samples kept for the histogram: the last run of each kind.
struct Histograms(Vec<(String, Vec<i64>)>);

fn workload_6(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes, hist: &mut Histograms) {
    let n = cfg.accuracy_timers;
    let kinds = [
        Accuracy::Tokio,
        Accuracy::DelayQueue,
        Accuracy::Wheel(Duration::from_millis(1)),
        Accuracy::Wheel(Duration::from_millis(10)),
    ];
    let _ = accuracy_once(Accuracy::Tokio, (n / 10).max(1), cfg.workers, 0);
    let _ = accuracy_once(
        Accuracy::Wheel(Duration::from_millis(10)),
        (n / 10).max(1),
        cfg.workers,
        0,
    );
    let mut dists: Vec<Vec<Dist>> = vec![Vec::new(); kinds.len()];
    let mut delivery: Vec<Vec<Dist>> = vec![Vec::new(); kinds.len()];
    let mut last: Vec<Vec<i64>> = vec![Vec::new(); kinds.len()];
    for run in 0..cfg.runs {
        for (k, &kind) in kinds.iter().enumerate() {
            let l = accuracy_once(kind, n, cfg.workers, 6 + run as u64);
            dists[k].push(dist(&l.late));
            if !l.delivery.is_empty() {
                delivery[k].push(dist(&l.delivery));
            }
            last[k] = l.late;
        }
    }
    let med: Vec<Dist> = dists.iter().map(|d| median_dist(d)).collect();
    let (tokio, queue) = (med[0], med[1]);
    for (k, tick_ms) in [(2usize, 1.0f64), (3, 10.0)] {
        let w = med[k];
        let label = format!("6 accuracy, tick {tick_ms:.0} ms, {}", count_label(n));
        rows.push(
            Row::new(&label, "early fires (all runs)")
                .tokio(tokio.early as f64)
                .delay_queue(queue.early as f64)
                .wheel(w.early as f64)
                .wheel_at_most(0.0, "0"),
        );
        for (i, name) in ["min", "p50", "p99", "max"].iter().enumerate() {
            let row = Row::new(&label, format!("lateness {name}, ms"))
                .tokio(tokio.q[i])
                .delay_queue(queue.q[i])
                .wheel(w.q[i]);
            rows.push(if *name == "p99" {
                row.wheel_at_most(tick_ms, &format!("<= 1 tick ({tick_ms:.0} ms)"))
            } else {
                row
            });
        }
        let d = median_dist(&delivery[k]);
        notes.add(format!(
            "6 tick {tick_ms:.0} ms: the wheel's delivery after the tick a timer was due at (ms): \
             min {:.3}, p50 {:.3}, p99 {:.3}, max {:.3}; the rest of the lateness is rounding up \
             to the tick (0 to 1 tick by design)",
            d.q[0], d.q[1], d.q[2], d.q[3]
        ));
    }
    notes.add(format!(
        "6: tokio lateness (ms) min {:.3} p50 {:.3} p99 {:.3} max {:.3}; DelayQueue min {:.3} \
         p50 {:.3} p99 {:.3} max {:.3} (tokio has no tick: its rows repeat one measurement)",
        tokio.q[0],
        tokio.q[1],
        tokio.q[2],
        tokio.q[3],
        queue.q[0],
        queue.q[1],
        queue.q[2],
        queue.q[3]
    ));
    let names = [
        "tokio::time::sleep_until",
        "DelayQueue",
        "tokio-wheel, tick 1 ms",
        "tokio-wheel, tick 10 ms",
    ];
    hist.0 = names
        .iter()
        .zip(last)
        .map(|(n, l)| (n.to_string(), l))
        .collect();
}

// ---------------------------------------------------------------------------
// SVG charts, written as text.

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Horizontal bars of `wheel / tokio` per row, on a log scale.
fn ratio_chart(rows: &[Row], subtitle: &str) -> String {
    let bars: Vec<&Row> = rows.iter().filter(|r| r.ratio.is_some()).collect();
    let label_chars = bars
        .iter()
        .map(|r| r.workload.chars().count() + r.metric.chars().count() + 2)
        .max()
        .unwrap_or(20);
    let left = 20.0 + 6.6 * label_chars as f64;
    let (width, row_h, top) = (420.0, 22.0, 70.0);
    let height = top + row_h * bars.len() as f64 + 60.0;
    let total_w = left + width + 90.0;
    let (lo, hi) = (0.01f64, 100.0f64);
    let x =
        |r: f64| left + width * (r.clamp(lo, hi).log10() - lo.log10()) / (hi.log10() - lo.log10());
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" viewBox="0 0 {total_w} {height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="22" font-size="16" font-weight="bold">tokio-wheel / tokio::time, per metric (log scale; under 1 = the wheel is cheaper)</text>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="42" fill="#555">{}</text>"##,
        xml_escape(subtitle)
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="58" fill="#555"><tspan fill="#2a9d3a">green</tspan>: target met, <tspan fill="#d62828">red</tspan>: target missed, grey: no target</text>"##
    );
    for tick in [0.01, 0.1, 1.0, 10.0, 100.0] {
        let xt = x(tick);
        let stroke = if tick == 1.0 { "#000" } else { "#ccc" };
        let _ = writeln!(
            s,
            r##"<line x1="{xt:.1}" y1="{top}" x2="{xt:.1}" y2="{:.1}" stroke="{stroke}"/>"##,
            height - 45.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{xt:.1}" y="{:.1}" text-anchor="middle" fill="#555">{tick}x</text>"##,
            height - 30.0
        );
    }
    for (i, r) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let ratio = r.ratio.unwrap_or(1.0);
        let color = match &r.target {
            Some(t) if t.met => "#2a9d3a",
            Some(_) => "#d62828",
            None => "#999",
        };
        let (x0, x1) = (x(1.0).min(x(ratio)), x(1.0).max(x(ratio)));
        let label = format!("{}: {}", r.workload, r.metric);
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 8.0,
            y + 15.0,
            xml_escape(&label)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"##,
            y + 4.0,
            (x1 - x0).max(1.0),
            row_h - 8.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}">{}</text>"##,
            left + width + 8.0,
            y + 15.0,
            fmt_ratio(Some(ratio))
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One histogram panel per timer, of lateness in ms.
fn lateness_chart(hist: &Histograms, subtitle: &str) -> String {
    let bin_ms = 0.25;
    let max_ms = 20.0;
    let bins = (max_ms / bin_ms) as usize;
    let (left, width, panel_h, top) = (60.0, 760.0, 110.0, 60.0);
    let height = top + (panel_h + 30.0) * hist.0.len() as f64 + 30.0;
    let total_w = left + width + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" viewBox="0 0 {total_w} {height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="22" font-size="16" font-weight="bold">Lateness of fired timers (seen minus deadline), {bin_ms} ms bins</text>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="42" fill="#555">{}</text>"##,
        xml_escape(subtitle)
    );
    for (p, (name, sample)) in hist.0.iter().enumerate() {
        let y0 = top + (panel_h + 30.0) * p as f64;
        let mut counts = vec![0usize; bins + 1];
        let mut early = 0;
        for &v in sample {
            if v < 0 {
                early += 1;
                continue;
            }
            let b = ((v as f64 / 1e6) / bin_ms) as usize;
            counts[b.min(bins)] += 1;
        }
        let peak = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="{:.1}" font-weight="bold">{} ({} timers of the last run, {} early, {} over {max_ms} ms in the last bar)</text>"##,
            y0 + 12.0,
            xml_escape(name),
            sample.len(),
            early,
            counts[bins]
        );
        let base = y0 + panel_h;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{base:.1}" x2="{:.1}" y2="{base:.1}" stroke="#000"/>"##,
            left + width
        );
        let bw = width / (bins + 1) as f64;
        for (b, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let h = (panel_h - 20.0) * c as f64 / peak;
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"/>"##,
                left + bw * b as f64,
                base - h,
                (bw - 1.0).max(0.5),
                if b == bins { "#d62828" } else { "#3a6ea5" }
            );
        }
        if !sample.is_empty() {
            let mut sorted = sample.clone();
            sorted.sort_unstable();
            let p99 = quantile(&sorted, 0.99) as f64 / 1e6;
            let xp = left + bw * (p99 / bin_ms).min(bins as f64);
            let _ = writeln!(
                s,
                r##"<line x1="{xp:.1}" y1="{:.1}" x2="{xp:.1}" y2="{base:.1}" stroke="#d62828" stroke-dasharray="4 3"/>"##,
                y0 + 18.0
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#d62828">p99 {p99:.2} ms</text>"##,
                xp + 4.0,
                y0 + 30.0
            );
        }
        for t in (0..=max_ms as usize).step_by(2) {
            let xt = left + bw * (t as f64 / bin_ms);
            let _ = writeln!(
                s,
                r##"<text x="{xt:.1}" y="{:.1}" text-anchor="middle" fill="#555">{t} ms</text>"##,
                base + 14.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

// ---------------------------------------------------------------------------

fn main() -> ExitCode {
    let cfg = match parse_args(std::env::args().skip(1)) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("compare: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = Wheel::builder().tick(cfg.tick).build() {
        eprintln!("compare: --tick-ms: {e}");
        return ExitCode::from(2);
    }
    let wall = std::time::Instant::now();
    let machine = format!(
        "{} cores, wheel tick {} ms ({} in workload 6), multi-thread runtimes with {} workers, \
         median of {} runs, scale {}",
        cores(),
        cfg.tick.as_millis(),
        "1 and 10 ms",
        cfg.workers,
        cfg.runs,
        cfg.scale
    );
    println!("tokio-wheel vs tokio::time: {machine}");
    println!(
        "date {}, command: compare {}",
        today(),
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    println!();

    let mut rows = Vec::new();
    let mut notes = Notes::default();
    let mut hist = Histograms(Vec::new());
    let step = |w: u32, what: &str| {
        eprintln!(
            "[{:>6.1} s] workload {w}: {what}",
            wall.elapsed().as_secs_f64()
        )
    };
    // The latency-sensitive workloads (5, 6) run before the ones that churn
    // hundreds of megabytes (2, 3): the kernel's reclaim of that memory
    // afterwards was seen to disturb the accuracy runs. The table keeps the
    // workloads' order.
    for w in [1, 4, 5, 6, 2, 3] {
        if !cfg.wants(w) {
            continue;
        }
        match w {
            1 => {
                step(1, "timeout registered then cancelled");
                workload_1(&cfg, &mut rows, &mut notes);
                cost_model(cfg.tick, &mut notes);
            }
            2 => {
                step(2, "pending timers");
                workload_2(&cfg, &mut rows, &mut notes);
            }
            3 => {
                step(3, "mass expiry");
                workload_3(&cfg, &mut rows, &mut notes);
            }
            4 => {
                step(4, "reset on every packet");
                workload_4(&cfg, &mut rows);
            }
            5 => {
                step(5, "idle cost");
                workload_5(&cfg, &mut rows, &mut notes);
            }
            _ => {
                step(6, "accuracy");
                workload_6(&cfg, &mut rows, &mut notes, &mut hist);
            }
        }
    }
    // Rows and notes in workload order (stable: each keeps its own order).
    rows.sort_by_key(|r| r.workload.chars().next());
    notes
        .0
        .sort_by_key(|n| n.chars().next().filter(char::is_ascii_digit));
    eprintln!("[{:>6.1} s] done", wall.elapsed().as_secs_f64());

    print!("{}", render_table(&rows));
    let (met, missed) = rows
        .iter()
        .filter_map(|r| r.target.as_ref())
        .fold(
            (0, 0),
            |(m, x), t| if t.met { (m + 1, x) } else { (m, x + 1) },
        );
    println!();
    println!("targets: {met} met, {missed} missed");
    println!();
    println!("notes:");
    for n in &notes.0 {
        println!("- {n}");
    }
    println!(
        "- wall time of this run: {:.1} s",
        wall.elapsed().as_secs_f64()
    );

    if let Some(dir) = &cfg.out {
        let subtitle = format!("{}; {machine}", today());
        let mut charts = vec![("bench.svg", ratio_chart(&rows, &subtitle))];
        if !hist.0.is_empty() {
            charts.push(("lateness.svg", lateness_chart(&hist, &subtitle)));
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("compare: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        for (name, svg) in charts {
            let path = dir.join(name);
            match std::fs::write(&path, svg) {
                Ok(()) => println!("- wrote {}", path.display()),
                Err(e) => {
                    eprintln!("compare: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
