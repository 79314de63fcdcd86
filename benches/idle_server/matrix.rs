//! The pattern matrix: cells (server patterns) named by their axes, each
//! variant of each cell run in a process of its own, variants interleaved
//! over rounds, medians and spread, disturbed cells flagged and run again.
//!
//! The parent never measures: it re-executes its own binary with `--one
//! VARIANT CELL --seed N`, and that child runs one variant of one cell (the
//! single-run code, `run::run_variant`) and prints one `RESULT` line of
//! tab-separated `key=value` fields on stdout. Its exit code says whether the
//! correctness checks passed (0), failed (1), the run could not be made (2),
//! or the cell cannot run on this machine (3, with a `SKIP` line).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::measure::{mem_available, open_file_limit};
use crate::report::{checks_pass, NAMES};
use crate::run::{Report, Workers};
use crate::timers::{NoTime, TokioTime, WheelTime};
use crate::{parse_duration, parse_wait, Config, PADS};
use support::{count_label, Spread};

// ---------------------------------------------------------------------------
// Cells and axes.

/// How the connections are carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Net {
    /// `tokio::io::duplex` pipes in the process.
    Mem,
    /// TCP on 127.0.0.1, both ends in the process.
    Tcp,
}

/// Where the requests come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mix {
    /// `active` is a share of the clients; each active client sends a
    /// request a second besides its frames (which are plain data).
    Clients,
    /// `active` is a share of every client's frames that are requests (the
    /// single-run mode's `--request-share`).
    Frames,
}

/// One server pattern: a point of the axes.
#[derive(Clone, Debug)]
pub struct Cell {
    /// A default cell's name, or the cell's axes that differ from `base`.
    pub name: String,
    pub net: Net,
    pub conns: usize,
    /// Mean time between a client's frames (jittered 0.5x to 1.5x).
    pub frame: Duration,
    pub idle: Duration,
    /// The active share (of clients or of frames, see `mix`).
    pub active: f64,
    pub mix: Mix,
    /// Whether the server sends every connection a heartbeat every 10 s.
    pub hb: bool,
    pub rt: Workers,
    /// How long the connections run before the window opens: 0 counts each
    /// connection's first idle period in the window (its timer's first
    /// push back and first refile), a minute or more leaves only what a
    /// long-lived connection pays.
    pub warm: Duration,
    /// Whether the connection's `select!` is `biased;` (the read first, then
    /// the idle timeout), as the issue's own harness and `benches/pattern.rs`
    /// have it, or tokio's default (a random branch first on every poll).
    pub biased: bool,
    /// Bytes of padding in the connection's future (`PADS`): moves the
    /// compiler's layout of the rest of it.
    pub pad: usize,
}

/// The axes, in the order of a cell's expression, with the values that
/// `KEY=*` stands for (any other value of the same form is accepted too).
pub const AXES: [(&str, &[&str], &str); 11] = [
    ("net", &["mem", "tcp"], "in-memory duplex pipes or TCP on 127.0.0.1"),
    (
        "conns",
        &["5k", "100k", "1M"],
        "connections (TCP: 5k and 20k are the values asked for)",
    ),
    (
        "frame",
        &["1s", "10s", "60s"],
        "mean time between a client's frames (jittered 0.5x-1.5x)",
    ),
    ("idle", &["30s", "300s"], "the server's idle timeout, reset on every frame"),
    (
        "active",
        &["1%", "10%", "100%"],
        "share of active clients (mix=clients) or of request frames (mix=frames)",
    ),
    (
        "mix",
        &["clients", "frames"],
        "clients: active clients send 1 request/s each; frames: a share of every client's frames are requests",
    ),
    (
        "hb",
        &["off", "on"],
        "a server-side heartbeat every 10 s per connection (an interval)",
    ),
    (
        "rt",
        &["ct", "2", "8", "16"],
        "server runtime: current-thread, or N workers (8 and 16 oversubscribe 2 cores)",
    ),
    (
        "warm",
        &["0s", "60s"],
        "time the connections run before the window opens (0s: the window holds their first idle period)",
    ),
    (
        "select",
        &["random", "biased"],
        "the connection's select!: tokio's default (a random branch first) or biased (the read first)",
    ),
    (
        "pad",
        &["0", "16", "32", "48"],
        "bytes the connection's future carries unread: moves the compiler's layout of the rest",
    ),
];

fn parse_count(s: &str) -> Result<usize, String> {
    let (num, scale) = if let Some(n) = s.strip_suffix(['k', 'K']) {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix(['m', 'M']) {
        (n, 1e6)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("conns: not a count: {s}"))?;
    let n = (v * scale).round();
    if !(1.0..1e9).contains(&n) {
        return Err(format!("conns: out of range: {s}"));
    }
    Ok(n as usize)
}

fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn fmt_share(f: f64) -> String {
    let pct = f * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{}%", pct.round())
    } else {
        format!("{pct}%")
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.parse::<f64>().map(|p| p / 100.0),
        None => s.parse::<f64>(),
    }
    .map_err(|_| format!("active: not a share: {s}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("active: a share between 0% and 100%, not {s}"));
    }
    Ok(v)
}

impl Cell {
    /// The base cell the default set varies one axis at a time around: the
    /// first pattern of the issue (100k in-memory connections, a frame every
    /// 10 s, idle 30 s, 1% of clients active, 2 workers, no server
    /// heartbeat).
    pub fn base() -> Cell {
        Cell {
            name: "base".into(),
            net: Net::Mem,
            conns: 100_000,
            frame: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            active: 0.01,
            mix: Mix::Clients,
            hb: false,
            rt: Workers::Multi(2),
            warm: Duration::ZERO,
            biased: false,
            pad: 0,
        }
    }

    /// The value of axis `key`, as the expression writes it.
    pub fn get(&self, key: &str) -> String {
        match key {
            "net" => match self.net {
                Net::Mem => "mem".into(),
                Net::Tcp => "tcp".into(),
            },
            "conns" => count_label(self.conns),
            "frame" => fmt_duration(self.frame),
            "idle" => fmt_duration(self.idle),
            "active" => fmt_share(self.active),
            "mix" => match self.mix {
                Mix::Clients => "clients".into(),
                Mix::Frames => "frames".into(),
            },
            "hb" => if self.hb { "on" } else { "off" }.into(),
            "rt" => match self.rt {
                Workers::Current => "ct".into(),
                Workers::Multi(n) => n.to_string(),
            },
            "warm" => fmt_duration(self.warm),
            "select" => if self.biased { "biased" } else { "random" }.into(),
            "pad" => self.pad.to_string(),
            _ => unreachable!("no axis {key}"),
        }
    }

    /// Sets axis `key` to `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "net" => {
                self.net = match value {
                    "mem" => Net::Mem,
                    "tcp" => Net::Tcp,
                    v => return Err(format!("net: mem or tcp, not {v}")),
                }
            }
            "conns" => self.conns = parse_count(value)?,
            "frame" => self.frame = parse_duration(value)?,
            "idle" => self.idle = parse_duration(value)?,
            "active" => self.active = parse_share(value)?,
            "mix" => {
                self.mix = match value {
                    "clients" => Mix::Clients,
                    "frames" => Mix::Frames,
                    v => return Err(format!("mix: clients or frames, not {v}")),
                }
            }
            "hb" => {
                self.hb = match value {
                    "on" => true,
                    "off" => false,
                    v => return Err(format!("hb: on or off, not {v}")),
                }
            }
            "rt" => {
                self.rt = match value {
                    "ct" => Workers::Current,
                    v => match v.parse::<usize>() {
                        Ok(n) if (1..=256).contains(&n) => Workers::Multi(n),
                        _ => return Err(format!("rt: ct or a number of workers, not {v}")),
                    },
                }
            }
            "warm" => self.warm = parse_wait(value)?,
            "select" => {
                self.biased = match value {
                    "biased" => true,
                    "random" => false,
                    v => return Err(format!("select: random or biased, not {v}")),
                }
            }
            "pad" => {
                self.pad = match value.parse::<usize>() {
                    Ok(n) if PADS.contains(&n) => n,
                    _ => return Err(format!("pad: one of {PADS:?} (bytes), not {value}")),
                }
            }
            k => {
                let keys: Vec<&str> = AXES.iter().map(|a| a.0).collect();
                return Err(format!("no axis {k} (axes: {})", keys.join(", ")));
            }
        }
        Ok(())
    }

    /// Every axis, `key=value` joined by commas: what `--one` takes.
    pub fn expr(&self) -> String {
        let parts: Vec<String> = AXES
            .iter()
            .map(|(k, _, _)| format!("{k}={}", self.get(k)))
            .collect();
        parts.join(",")
    }

    /// The axes that differ from the base cell, or `base`.
    pub fn diff(&self) -> String {
        let base = Cell::base();
        let parts: Vec<String> = AXES
            .iter()
            .filter(|(k, _, _)| self.get(k) != base.get(k))
            .map(|(k, _, _)| format!("{k}={}", self.get(k)))
            .collect();
        if parts.is_empty() {
            "base".into()
        } else {
            parts.join(",")
        }
    }

    /// A cell from a full or partial expression (unnamed axes from base).
    pub fn parse(expr: &str) -> Result<Cell, String> {
        let mut cell = Cell::base();
        for part in expr.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("not KEY=VALUE: {part}"))?;
            cell.set(k.trim(), v.trim())?;
        }
        cell.name = cell.diff();
        Ok(cell)
    }

    /// Why this cell cannot run as asked, if it cannot.
    pub fn invalid(&self) -> Option<String> {
        if self.frame * 2 >= self.idle {
            return Some(format!(
                "a frame every {} (up to 1.5x that, jittered) would idle out a {} timeout",
                fmt_duration(self.frame),
                fmt_duration(self.idle)
            ));
        }
        None
    }

    /// Why this machine cannot run the cell, if it cannot: open files for
    /// TCP (two per connection, both ends in one process), memory.
    pub fn unfit(&self, quick: bool) -> Option<String> {
        let conns = self.config(quick, 1).connections as u64;
        if self.net == Net::Tcp {
            if let Some(limit) = open_file_limit() {
                let needed = 2 * conns + 64;
                if needed > limit {
                    return Some(format!(
                        "needs about {needed} open files, the limit (ulimit -n) is {limit}"
                    ));
                }
            }
        }
        // About 2.4 kB of heap per connection was measured at 100k, both
        // sides; allow 4x for RSS, buffers and growth.
        let needed = conns * 10 * 1024;
        if let Some(avail) = mem_available() {
            if needed > avail / 10 * 8 {
                return Some(format!(
                    "needs about {} MB of memory, {} MB are available",
                    needed >> 20,
                    avail >> 20
                ));
            }
        }
        None
    }

    /// The single run's settings for this cell. `--quick` divides times
    /// (the warm-up too) by 60 (at least 50 ms for frames, requests and
    /// heartbeats) and connections by 100 (200 to 2000).
    pub fn config(&self, quick: bool, seed: u64) -> Config {
        let tcp = self.net == Net::Tcp;
        let mut c = Config::new(false, tcp);
        c.variants = NAMES.to_vec();
        c.connections = self.conns;
        c.frame_every = self.frame;
        c.idle = self.idle;
        c.window = self.idle + Duration::from_secs(10);
        c.heartbeat = Duration::from_secs(10);
        c.server_heartbeat = self.hb;
        c.workers = self.rt;
        c.warmup = self.warm;
        c.biased = self.biased;
        c.pad = self.pad;
        c.seed = seed;
        match self.mix {
            Mix::Clients => c.active = Some(self.active),
            Mix::Frames => {
                c.active = None;
                c.request_share = self.active;
            }
        }
        if quick {
            let short = |d: Duration| (d / 60).max(Duration::from_millis(50));
            c.connections = (self.conns / 100).clamp(200, 2000).min(self.conns);
            c.frame_every = short(c.frame_every);
            c.request_every = short(c.request_every);
            c.heartbeat = short(c.heartbeat);
            c.idle = self.idle / 60;
            c.window = c.idle + Duration::from_millis(500);
            c.warmup = self.warm / 60;
        }
        c.batch = c.batch.min(c.connections);
        c
    }

    /// Seconds one run of one variant takes, roughly: process start, setup
    /// (about 100k in-memory connections a second, seen at 1M on a busy
    /// 2-core machine, or 4k TCP ones), the window, shutdown (about 5 s
    /// for 1M).
    pub fn estimate(&self, quick: bool) -> f64 {
        let c = self.config(quick, 1);
        let rate = if self.net == Net::Tcp { 4e3 } else { 1e5 };
        let n = c.connections as f64;
        0.3 + n / rate + c.warmup.as_secs_f64() + c.window.as_secs_f64() + n / 2e5 + 0.2
    }

    /// Connections of at least 100k (in the full-size run): the timers'
    /// share target is stricter there.
    pub fn large(&self) -> bool {
        self.conns >= 100_000
    }

    /// Cells where the issue asks for server CPU at most 0.75x tokio's.
    pub fn strict_cpu(&self) -> bool {
        self.frame <= Duration::from_secs(1) || matches!(self.rt, Workers::Multi(n) if n > 2)
    }
}

/// The default cells: the base, one axis varied at a time around it, the
/// issue's reported cells, the 2 x 2 of server heartbeat x request mix at
/// 1 s frames that separates what the single-run harness measures, and the
/// cells where the wheel was behind measured again after a warm-up
/// (`-warm`).
pub fn default_cells() -> Vec<Cell> {
    // The largest TCP count up to 20k that the open-file limit allows.
    let tcp_max = open_file_limit()
        .map_or(20_000, |l| {
            (l.saturating_sub(64) / 2).min(20_000) as usize / 1000 * 1000
        })
        .max(5000);
    let tcp_max = format!("conns={}", count_label(tcp_max));
    let list: [(&str, &str); 24] = [
        ("base", ""),
        ("frame-1s", "frame=1s"),
        ("frame-60s", "frame=60s,idle=300s"),
        ("idle-300s", "idle=300s"),
        ("active-10", "active=10%"),
        ("active-100", "active=100%"),
        ("conns-5k", "conns=5k"),
        ("conns-1m", "conns=1M"),
        ("tcp-5k", "net=tcp,conns=5k"),
        ("tcp-max", "net=tcp"),
        ("rt-ct", "rt=ct"),
        ("rt-8", "rt=8"),
        ("rt-16", "rt=16"),
        ("hb-on", "hb=on"),
        ("issue-50k", "conns=50k,frame=1s,active=10%"),
        ("legacy", "frame=1s,active=10%,mix=frames,hb=on"),
        ("legacy-hb-off", "frame=1s,active=10%,mix=frames"),
        ("f1s-a10", "frame=1s,active=10%"),
        ("f1s-a10-hb-on", "frame=1s,active=10%,hb=on"),
        ("base-warm", "warm=60s"),
        ("rt-ct-warm", "rt=ct,warm=60s"),
        ("rt-8-warm", "rt=8,warm=60s"),
        ("rt-16-warm", "rt=16,warm=60s"),
        ("conns-1m-warm", "conns=1M,warm=60s"),
    ];
    list.iter()
        .map(|(name, expr)| {
            let expr = if *name == "tcp-max" {
                format!("{expr},{tcp_max}")
            } else {
                expr.to_string()
            };
            let mut cell = Cell::parse(&expr).expect("a default cell parses");
            cell.name = if *name == "tcp-max" {
                format!("tcp-{}", cell.get("conns").to_lowercase())
            } else {
                name.to_string()
            };
            cell
        })
        .collect()
}

/// The cells `--cells` selects. Items are separated by `;` or spaces:
///
/// - `default`: the default cells; `full`: the whole product of the axes'
///   listed values (cells that cannot run are left out);
/// - a default cell's name, or a prefix of names ending in `*` (`rt-*`);
/// - an axis expression, `KEY=VALUE,...`: one cell, its other axes from the
///   base cell. A value may list alternatives, `conns=5k|100k`, or be `*`
///   for the axis's listed values: the expression then stands for the
///   product of them.
pub fn select(spec: &str) -> Result<(Vec<Cell>, Vec<String>), String> {
    let defaults = default_cells();
    let mut cells: Vec<Cell> = Vec::new();
    let mut notes = Vec::new();
    let push = |cell: Cell, cells: &mut Vec<Cell>, notes: &mut Vec<String>| {
        if let Some(why) = cell.invalid() {
            notes.push(format!("left out {}: {why}", cell.name));
        } else if !cells.iter().any(|c| c.expr() == cell.expr()) {
            cells.push(cell);
        }
    };
    for item in spec
        .split(|c: char| c == ';' || c.is_whitespace())
        .filter(|i| !i.is_empty())
    {
        if item == "default" || item == "all" {
            for c in &defaults {
                push(c.clone(), &mut cells, &mut notes);
            }
        } else if item.contains('=') || item == "full" {
            let expr = if item == "full" {
                AXES.iter()
                    .map(|(k, _, _)| format!("{k}=*"))
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                item.to_string()
            };
            let mut product: Vec<Vec<(String, String)>> = vec![Vec::new()];
            for part in expr.split(',').filter(|p| !p.is_empty()) {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| format!("--cells: not KEY=VALUE: {part}"))?;
                let values: Vec<String> = if v == "*" {
                    let axis = AXES
                        .iter()
                        .find(|a| a.0 == k)
                        .ok_or_else(|| format!("--cells: no axis {k}"))?;
                    axis.1.iter().map(|s| s.to_string()).collect()
                } else {
                    v.split('|').map(str::to_string).collect()
                };
                product = product
                    .into_iter()
                    .flat_map(|prefix| {
                        values.iter().map(move |v| {
                            let mut p = prefix.clone();
                            p.push((k.to_string(), v.clone()));
                            p
                        })
                    })
                    .collect();
            }
            for point in product {
                let expr: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let cell = Cell::parse(&expr.join(",")).map_err(|e| format!("--cells: {e}"))?;
                // A default cell keeps its name.
                let cell = defaults
                    .iter()
                    .find(|d| d.expr() == cell.expr())
                    .cloned()
                    .unwrap_or(cell);
                push(cell, &mut cells, &mut notes);
            }
        } else if let Some(prefix) = item.strip_suffix('*') {
            let found: Vec<&Cell> = defaults
                .iter()
                .filter(|c| c.name.starts_with(prefix))
                .collect();
            if found.is_empty() {
                return Err(format!(
                    "--cells: no default cell's name starts with {prefix}"
                ));
            }
            for c in found {
                push(c.clone(), &mut cells, &mut notes);
            }
        } else {
            let c = defaults.iter().find(|c| c.name == item).ok_or_else(|| {
                format!("--cells: no default cell named {item} (see --list), and not KEY=VALUE")
            })?;
            push(c.clone(), &mut cells, &mut notes);
        }
    }
    if cells.is_empty() {
        return Err(format!("--cells selects no cell. {}", notes.join("; ")));
    }
    Ok((cells, notes))
}

// ---------------------------------------------------------------------------
// The child: one variant of one cell.

/// Runs `variant` of the cell `expr` and prints its `RESULT` line.
pub fn child(variant: &str, expr: &str, seed: u64, quick: bool) -> ExitCode {
    // A default cell's name or an expression of exactly one cell.
    let cell = match select(expr).and_then(|(mut cells, notes)| match cells.len() {
        1 => Ok(cells.remove(0)),
        0 => Err(notes.join("; ")),
        n => Err(format!("{expr} names {n} cells, not one")),
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("idle_server --one: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(why) = cell.invalid().or_else(|| cell.unfit(quick)) {
        println!("SKIP\t{why}");
        return ExitCode::from(3);
    }
    let cfg = cell.config(quick, seed);
    let run = match variant {
        "tokio" => crate::run::run_variant::<TokioTime>(&cfg),
        "wheel" => crate::run::run_variant::<WheelTime>(&cfg),
        "none" => crate::run::run_variant::<NoTime>(&cfg),
        v => {
            eprintln!("idle_server --one: no variant {v} (tokio, wheel, none)");
            return ExitCode::from(2);
        }
    };
    let r = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("idle_server --one {variant} {expr}: {e}");
            return ExitCode::from(2);
        }
    };
    let ok = checks_pass(variant, &r);
    println!("{}", result_line(&r, ok));
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn result_line(r: &Report, ok: bool) -> String {
    let w = r.window.as_secs_f64();
    let per_s = |d: Duration| d.as_secs_f64() * 1000.0 / w;
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
    let mut fields: Vec<(&str, String)> = vec![
        ("cpu", format!("{:.3}", per_s(r.cpu[0]))),
        ("cli", format!("{:.3}", per_s(r.cli_cpu))),
        ("frames", format!("{:.1}", r.frames[0] as f64 / w)),
        // Connection-task polls a second: above the frames (and the
        // requests' and replies' own polls), a wake-up that found nothing
        // to do.
        ("polls", format!("{:.1}", r.polls[0] as f64 / w)),
        // The server's threads switched in a second: parking and waking,
        // and preemption (which the oversubscribed cells have plenty of).
        ("switches", format!("{:.1}", r.switches as f64 / w)),
        ("planned", format!("{:.1}", r.frames_planned)),
        ("heap", format!("{:.1}", r.heap_per_conn)),
        ("heap_mb", format!("{:.1}", r.heap_end as f64 / 1048576.0)),
        ("rss_mb", format!("{:.1}", r.rss_end as f64 / 1048576.0)),
        ("p50", opt(r.latency_all[0])),
        ("p99", opt(r.latency_all[1])),
        ("requests", r.requests_answered.to_string()),
        ("heartbeats", r.heartbeats_sent.to_string()),
        ("timeouts", r.request_timeouts.to_string()),
        ("early", (r.early + r.client_early).to_string()),
        ("late", r.late.to_string()),
        // How long after its idle deadline a connection was dropped (ms):
        // the median and the most, so that a late drop says by how much.
        (
            "drop_after_p50",
            r.drop_after_idle[0].map_or("-".into(), |v| format!("{v:.1}")),
        ),
        (
            "drop_after_max",
            r.drop_after_idle[1].map_or("-".into(), |v| format!("{v:.1}")),
        ),
        ("wrong", r.wrong.to_string()),
        ("silent", r.silent.to_string()),
        ("silent_dropped", r.silent_dropped.to_string()),
        ("drops", r.drops.to_string()),
        (
            "others",
            format!("{:.1}", r.others_cpu.as_secs_f64() * 1000.0),
        ),
        ("load", format!("{:.2}", r.load_average)),
        ("setup", format!("{:.2}", r.setup.as_secs_f64())),
        ("window", format!("{w:.2}")),
        ("ok", u8::from(ok).to_string()),
    ];
    if let Some((s, _)) = &r.wheel {
        // Rates over the window: less what was counted before it opened.
        let before = r.wheel_at_start.unwrap_or_default();
        let rate = |end: u64, start: u64| end.saturating_sub(start) as f64 / w;
        fields.push((
            "registered",
            format!("{:.1}", rate(s.registered, before.registered)),
        ));
        fields.push(("fired", s.fired.saturating_sub(before.fired).to_string()));
        fields.push((
            "wakeups",
            format!("{:.2}", rate(s.driver_wakeups, before.driver_wakeups)),
        ));
    }
    let mut line = String::from("RESULT");
    for (k, v) in fields {
        let _ = write!(line, "\t{k}={v}");
    }
    line
}

// ---------------------------------------------------------------------------
// The parent.

/// The matrix's settings.
#[derive(Clone, Debug)]
pub struct MatrixArgs {
    pub cells: String,
    pub quick: bool,
    pub list: bool,
    pub rounds: usize,
    pub reruns: usize,
    /// Spread (max - min) / median of the `none` variant's server CPU over
    /// rounds above which a cell counts as disturbed.
    pub max_spread: f64,
    /// CPU of the rest of the machine, ms per s, above which a run counts
    /// as disturbed.
    pub max_others: f64,
    pub out: Option<PathBuf>,
    pub seed: u64,
}

/// One child's outcome.
#[derive(Clone, Debug)]
pub struct Run {
    pub variant: &'static str,
    pub round: usize,
    pub fields: BTreeMap<String, f64>,
    /// Correctness checks passed.
    pub ok: bool,
    pub error: Option<String>,
}

impl Run {
    fn get(&self, k: &str) -> Option<f64> {
        self.fields.get(k).copied()
    }
}

/// One cell's runs.
pub struct CellRuns {
    pub cell: Cell,
    pub runs: Vec<Run>,
    pub skipped: Option<String>,
    pub reran: bool,
}

fn run_child(cell: &Cell, variant: &'static str, round: usize, seed: u64, quick: bool) -> Run {
    let mut run = Run {
        variant,
        round,
        fields: BTreeMap::new(),
        ok: false,
        error: None,
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            run.error = Some(format!("cannot find this program: {e}"));
            return run;
        }
    };
    let mut cmd = Command::new(exe);
    cmd.args(["--one", variant, &cell.expr(), "--seed", &seed.to_string()]);
    if quick {
        cmd.arg("--quick");
    }
    let out = match cmd.stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) => {
            run.error = Some(format!("cannot start a child: {e}"));
            return run;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = stdout.lines().find(|l| l.starts_with("SKIP\t")) {
        run.error = Some(format!("skipped: {}", &line[5..]));
        return run;
    }
    let Some(line) = stdout.lines().find(|l| l.starts_with("RESULT\t")) else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        run.error = Some(format!(
            "no result ({}): {}",
            out.status,
            stderr.lines().last().unwrap_or("").trim()
        ));
        return run;
    };
    for field in line.split('\t').skip(1) {
        if let Some((k, v)) = field.split_once('=') {
            if let Ok(v) = v.parse::<f64>() {
                run.fields.insert(k.to_string(), v);
            }
        }
    }
    run.ok = out.status.success() && run.get("ok") == Some(1.0);
    run
}

/// The variants of round `round`, rotated so that each comes first, second
/// and last in turn.
fn order(round: usize) -> [&'static str; 3] {
    let mut o = NAMES;
    o.rotate_left(round % 3);
    o
}

fn show(s: Option<Spread>, decimals: usize) -> String {
    s.map_or("-".into(), |s| s.show(decimals, ""))
}

fn ratio(s: Option<Spread>) -> String {
    s.map_or("-".into(), |s| s.show(2, "x"))
}

/// What a cell's runs say.
pub struct Summary {
    pub cpu: [Option<Spread>; 3],
    pub cpu_ratio: Option<Spread>,
    pub share: [Option<Spread>; 2],
    pub share_ratio: Option<Spread>,
    pub heap: [Option<Spread>; 3],
    pub heap_ratio: Option<Spread>,
    pub timers_heap_ratio: Option<Spread>,
    pub p99: [Option<Spread>; 3],
    pub p99_ratio: Option<Spread>,
    /// Early, late, wrong drops and silent clients not dropped, summed over
    /// rounds, for tokio and wheel.
    pub drops: [[u64; 4]; 2],
    /// Frames received over frames planned, lowest of all runs.
    pub carried: Option<f64>,
    pub others: Option<Spread>,
    pub failed: Vec<String>,
    pub disturbed: Vec<String>,
}

impl CellRuns {
    fn per_variant(&self, v: &str, key: &str) -> Option<Spread> {
        Spread::of(
            self.runs
                .iter()
                .filter(|r| r.variant == v && r.error.is_none())
                .filter_map(|r| r.get(key))
                .collect(),
        )
    }

    /// `f(a, b)` per round where both variants have a value.
    fn per_round(
        &self,
        a: &str,
        b: &str,
        key: &str,
        f: impl Fn(f64, f64) -> Option<f64>,
    ) -> Option<Spread> {
        let rounds: Vec<usize> = self.runs.iter().map(|r| r.round).collect();
        let mut v = Vec::new();
        for round in rounds
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
        {
            let find = |name: &str| {
                self.runs
                    .iter()
                    .find(|r| r.round == round && r.variant == name && r.error.is_none())
                    .and_then(|r| r.get(key))
            };
            if let (Some(x), Some(y)) = (find(a), find(b)) {
                if let Some(z) = f(x, y) {
                    v.push(z);
                }
            }
        }
        Spread::of(v)
    }

    pub fn summary(&self, args: &MatrixArgs) -> Summary {
        let div = |x: f64, y: f64| (y.abs() > 1e-12).then(|| x / y);
        let cpu = NAMES.map(|v| self.per_variant(v, "cpu"));
        let cpu_ratio = self.per_round("wheel", "tokio", "cpu", div);
        // The timers' share per round: the variant minus "none" of the same
        // round; the ratio of the two shares, per round.
        let share_of = |v: &str| self.per_round(v, "none", "cpu", |x, n| Some(x - n));
        let share = [share_of("tokio"), share_of("wheel")];
        let mut share_ratio = Vec::new();
        let mut timers_heap_ratio = Vec::new();
        for round in 0..self.runs.iter().map(|r| r.round + 1).max().unwrap_or(0) {
            let find = |name: &str, key: &str| {
                self.runs
                    .iter()
                    .find(|r| r.round == round && r.variant == name && r.error.is_none())
                    .and_then(|r| r.get(key))
            };
            for (key, out) in [("cpu", &mut share_ratio), ("heap", &mut timers_heap_ratio)] {
                // Only where tokio's share stands out of the noise (at
                // least 5% of its total): a ratio of two noises says nothing.
                if let (Some(t), Some(w), Some(n)) =
                    (find("tokio", key), find("wheel", key), find("none", key))
                {
                    if t - n > 0.05 * t.abs() {
                        if let Some(r) = div(w - n, t - n) {
                            out.push(r);
                        }
                    }
                }
            }
        }
        let heap = NAMES.map(|v| self.per_variant(v, "heap"));
        let heap_ratio = self.per_round("wheel", "tokio", "heap", div);
        let p99 = NAMES.map(|v| self.per_variant(v, "p99"));
        let p99_ratio = self.per_round("wheel", "tokio", "p99", div);
        let mut drops = [[0u64; 4]; 2];
        let mut failed = Vec::new();
        let mut carried: Option<f64> = None;
        let mut worst_others: f64 = 0.0;
        for r in &self.runs {
            if let Some(e) = &r.error {
                failed.push(format!("{} round {}: {e}", r.variant, r.round + 1));
                continue;
            }
            if !r.ok {
                failed.push(format!(
                    "{} round {}: a correctness check failed",
                    r.variant,
                    r.round + 1
                ));
            }
            if let (Some(f), Some(p)) = (r.get("frames"), r.get("planned")) {
                if p > 0.0 {
                    let c = f / p;
                    carried = Some(carried.map_or(c, |x: f64| x.min(c)));
                }
            }
            worst_others = worst_others.max(r.get("others").unwrap_or(0.0));
            let i = match r.variant {
                "tokio" => 0,
                "wheel" => 1,
                _ => continue,
            };
            let g = |k: &str| r.get(k).unwrap_or(0.0) as u64;
            drops[i][0] += g("early");
            drops[i][1] += g("late");
            drops[i][2] += g("wrong");
            drops[i][3] += g("silent").saturating_sub(g("silent_dropped"));
        }
        let others = Spread::of(
            self.runs
                .iter()
                .filter(|r| r.error.is_none())
                .filter_map(|r| r.get("others"))
                .collect(),
        );
        let mut disturbed = Vec::new();
        if let Some(n) = cpu[2] {
            if n.n >= 2 && n.relative() > args.max_spread {
                disturbed.push(format!(
                    "\"none\" moved {:.0}% over rounds",
                    n.relative() * 100.0
                ));
            }
        }
        if worst_others > args.max_others {
            disturbed.push(format!("other processes used up to {worst_others:.0} ms/s"));
        }
        Summary {
            cpu,
            cpu_ratio,
            share,
            share_ratio: Spread::of(share_ratio),
            heap,
            heap_ratio,
            timers_heap_ratio: Spread::of(timers_heap_ratio),
            p99,
            p99_ratio,
            drops,
            carried,
            others,
            failed,
            disturbed,
        }
    }
}

/// The issue's targets for one cell, each "met", "MISSED" or "out of
/// reach" (the no-timer run itself is above the bound).
fn targets(cell: &Cell, s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    let judge = |what: &str, value: Option<f64>, bound: f64| match value {
        None => format!("{what}: -"),
        Some(v) if v <= bound => format!("{what}: met ({v:.2}x)"),
        Some(v) => format!("{what}: MISSED ({v:.2}x)"),
    };
    let cpu_bound = if cell.strict_cpu() { 0.75 } else { 1.0 };
    let floor = match (s.cpu[2], s.cpu[0]) {
        (Some(n), Some(t)) if t.median > 0.0 => Some(n.median / t.median),
        _ => None,
    };
    let cpu = s.cpu_ratio.map(|r| r.median);
    let what = format!("CPU <= {cpu_bound}x");
    match floor {
        Some(f) if f > cpu_bound && cpu.is_none_or(|c| c > cpu_bound) => out.push(format!(
            "{what}: out of reach (none is {f:.2}x tokio){}",
            cpu.map_or(String::new(), |c| format!(", {c:.2}x"))
        )),
        _ => out.push(judge(&what, cpu, cpu_bound)),
    }
    let share_bound = if cell.large() { 0.5 } else { 0.7 };
    let what = format!("share <= {share_bound}x");
    match s.share[0] {
        Some(t) if t.median > 0.0 && s.share_ratio.is_some() => {
            out.push(judge(&what, s.share_ratio.map(|r| r.median), share_bound))
        }
        _ => out.push(format!("{what}: n/a (tokio's share is within the noise)")),
    }
    out.push(judge("heap <= 1x", s.heap_ratio.map(|r| r.median), 1.0));
    out.push(judge("p99 <= 1.1x", s.p99_ratio.map(|r| r.median), 1.1));
    let [_, w] = s.drops;
    out.push(if w.iter().all(|&d| d == 0) {
        "drops: met".into()
    } else {
        "drops: MISSED".into()
    });
    out
}

/// The parent: lists, or runs every selected cell and prints the tables.
pub fn run_matrix(args: &MatrixArgs) -> ExitCode {
    let (cells, notes) = match select(&args.cells) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("idle_server: {e}");
            return ExitCode::from(2);
        }
    };
    for n in notes.iter().take(5) {
        println!("note: {n}");
    }
    if notes.len() > 5 {
        println!("note: and {} more cells left out", notes.len() - 5);
    }
    let mut total = 0.0;
    println!(
        "{} cells, 3 variants each (tokio, wheel, none), {} round(s){}:",
        cells.len(),
        args.rounds,
        if args.quick { ", --quick" } else { "" }
    );
    println!(
        "  {:<16} {:>9} {:>9}  axes (the full expression --one takes)",
        "cell", "run (s)", "cell (s)"
    );
    for c in &cells {
        let unfit = c.unfit(args.quick);
        let per_run = c.estimate(args.quick);
        let per_cell = if unfit.is_some() {
            0.0
        } else {
            per_run * 3.0 * args.rounds as f64
        };
        total += per_cell;
        println!(
            "  {:<16} {:>9.1} {:>9.0}  {}{}",
            c.name,
            per_run,
            per_cell,
            c.expr(),
            unfit.map_or(String::new(), |u| format!("  [cannot run here: {u}]"))
        );
    }
    println!(
        "estimated wall time: {:.0} s ({:.1} h) without re-runs; each disturbed cell re-run \
         adds its own time again (at most {} re-run(s) per cell)",
        total,
        total / 3600.0,
        args.reruns
    );
    if args.list {
        return ExitCode::SUCCESS;
    }

    let started = Instant::now();
    let raw_path = output_path(args, "tsv");
    let mut raw = raw_path
        .as_ref()
        .and_then(|p| std::fs::File::create(p).ok());
    if let Some(f) = raw.as_mut() {
        let _ = writeln!(
            f,
            "# cell\tvariant\tround\taxes\tthe child's RESULT fields (or error=...)"
        );
    }
    let mut results: Vec<CellRuns> = cells
        .iter()
        .map(|c| CellRuns {
            cell: c.clone(),
            runs: Vec::new(),
            skipped: c.unfit(args.quick),
            reran: false,
        })
        .collect();
    let todo = results.iter().filter(|r| r.skipped.is_none()).count() * 3 * args.rounds;
    let mut done = 0;
    let run_rounds = |results: &mut Vec<CellRuns>,
                      which: &[usize],
                      done: &mut usize,
                      todo: usize,
                      raw: &mut Option<std::fs::File>,
                      label: &str| {
        // Rounds outermost, then cells, then the variants in rotated order:
        // a disturbance hits one round of many cells rather than every
        // round of one.
        for round in 0..args.rounds {
            for &i in which {
                if results[i].skipped.is_some() {
                    continue;
                }
                for variant in order(round) {
                    let cell = results[i].cell.clone();
                    let seed = args.seed.wrapping_add(round as u64);
                    let t = Instant::now();
                    let run = run_child(&cell, variant, round, seed, args.quick);
                    *done += 1;
                    let brief = match &run.error {
                        Some(e) => e.clone(),
                        None => format!(
                            "cpu {:.1} ms/s, p99 {} ms, others {:.0} ms/s{}",
                            run.get("cpu").unwrap_or(f64::NAN),
                            run.get("p99").map_or("-".into(), |v| format!("{v:.2}")),
                            run.get("others").unwrap_or(f64::NAN),
                            if run.ok { "" } else { ", CHECK FAILED" }
                        ),
                    };
                    println!(
                        "[{label}{done}/{todo}] {} {variant} round {}: {brief} ({:.1} s)",
                        cell.name,
                        round + 1,
                        t.elapsed().as_secs_f64()
                    );
                    if let Some(f) = raw.as_mut() {
                        let fields: Vec<String> =
                            run.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        let _ = writeln!(
                            f,
                            "{}\t{}\t{}\t{}\t{}",
                            cell.name,
                            variant,
                            round + 1,
                            cell.expr(),
                            if let Some(e) = &run.error {
                                format!("error={e}")
                            } else {
                                fields.join("\t")
                            }
                        );
                    }
                    if run
                        .error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("skipped"))
                    {
                        results[i].skipped = run.error.clone();
                    }
                    results[i].runs.push(run);
                    if results[i].skipped.is_some() {
                        break;
                    }
                }
            }
        }
    };
    let all: Vec<usize> = (0..results.len()).collect();
    run_rounds(&mut results, &all, &mut done, todo, &mut raw, "");
    for _ in 0..args.reruns {
        let again: Vec<usize> = (0..results.len())
            .filter(|&i| {
                results[i].skipped.is_none() && !results[i].summary(args).disturbed.is_empty()
            })
            .collect();
        if again.is_empty() {
            break;
        }
        let names: Vec<&str> = again
            .iter()
            .map(|&i| results[i].cell.name.as_str())
            .collect();
        println!("disturbed, running again: {}", names.join(", "));
        for &i in &again {
            results[i].runs.clear();
            results[i].reran = true;
        }
        let todo = again.len() * 3 * args.rounds;
        let mut done = 0;
        run_rounds(&mut results, &again, &mut done, todo, &mut raw, "re-run ");
    }

    let table = markdown(&results, args, started.elapsed());
    println!();
    println!("{table}");
    if let Some(path) = output_path(args, "md") {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match std::fs::write(&path, &table) {
            Ok(()) => println!("written: {}", path.display()),
            Err(e) => eprintln!("idle_server: cannot write {}: {e}", path.display()),
        }
    }
    if let Some(p) = raw_path {
        println!("every run, one line each: {}", p.display());
    }
    let failed = results
        .iter()
        .any(|r| !r.summary(args).failed.iter().all(|f| f.contains("skipped")));
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `--out FILE`, or `target/idle_server_matrix[-quick].EXT` beside this
/// program's build (never in the tracked tree). The raw runs go beside the
/// table with the extension `tsv`, or `runs.tsv` if the table's own name
/// ends in `.tsv` (the table, written last, would overwrite them).
fn output_path(args: &MatrixArgs, ext: &str) -> Option<PathBuf> {
    if let Some(out) = &args.out {
        return Some(if ext == "md" {
            out.clone()
        } else if out.with_extension(ext) == *out {
            out.with_extension(format!("runs.{ext}"))
        } else {
            out.with_extension(ext)
        });
    }
    // target/<profile>/examples/idle_server
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?.to_path_buf();
    let name = if args.quick {
        "idle_server_matrix-quick"
    } else {
        "idle_server_matrix"
    };
    let dir = target.join("idle_server_matrix");
    let _ = std::fs::create_dir_all(&dir);
    Some(dir.join(format!("{name}.{ext}")))
}

fn markdown(results: &[CellRuns], args: &MatrixArgs, took: Duration) -> String {
    let mut t = String::new();
    let base = Cell::base();
    let _ = writeln!(
        t,
        "Server pattern matrix: {} round(s){}, each variant of each cell in a process of its \
         own, variants interleaved; median [min, max] over rounds; {:.0} s of wall time.",
        args.rounds,
        if args.quick {
            ", --quick (for checking the harness, not for figures)"
        } else {
            ""
        },
        took.as_secs_f64()
    );
    let _ = writeln!(t);
    let _ = writeln!(t, "Base cell: `{}`.", base.expr());
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "| cell | axes (other than base) | server CPU ms/s: tokio / wheel / none | CPU wheel/tokio \
         | timers' share ms/s: tokio / wheel | share wheel/tokio | heap B/conn: tokio / wheel / \
         none | heap wheel/tokio (timers' part) | request p99 ms: tokio / wheel / none | p99 wheel/tokio | \
         drops e/l/w/m: tokio; wheel | notes |"
    );
    let _ = writeln!(t, "|---|---|---|---:|---|---:|---|---:|---|---:|---|---|");
    let mut verdicts = String::new();
    for r in results {
        let axes = r.cell.diff();
        if let Some(why) = &r.skipped {
            let _ = writeln!(
                t,
                "| {} | `{axes}` | - | - | - | - | - | - | - | - | - | {why} |",
                r.cell.name
            );
            continue;
        }
        let s = r.summary(args);
        let three = |v: &[Option<Spread>], d: usize| {
            v.iter()
                .map(|x| show(*x, d))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let d = |x: &[u64; 4]| format!("{}/{}/{}/{}", x[0], x[1], x[2], x[3]);
        let mut notes = Vec::new();
        if !s.disturbed.is_empty() {
            notes.push(format!(
                "**disturbed**{}: {}",
                if r.reran { " after a re-run" } else { "" },
                s.disturbed.join("; ")
            ));
        } else if r.reran {
            notes.push("re-run (the first was disturbed)".into());
        }
        if let Some(c) = s.carried {
            if c < 0.95 {
                notes.push(format!(
                    "the load generator sent {:.0}% of the planned frames",
                    c * 100.0
                ));
            }
        }
        if let Some(o) = s.others {
            notes.push(format!("others {} ms/s", o.show(0, "")));
        }
        if let (Some(reg), Some(wake)) = (
            r.per_variant("wheel", "registered"),
            r.per_variant("wheel", "wakeups"),
        ) {
            notes.push(format!(
                "wheel: {} registrations/s, {} driver wake-ups/s",
                reg.show(0, ""),
                wake.show(1, "")
            ));
        }
        for f in &s.failed {
            notes.push(format!("**{f}**"));
        }
        let _ = writeln!(
            t,
            "| {} | `{axes}` | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {}; {} | {} |",
            r.cell.name,
            three(&s.cpu, 1),
            ratio(s.cpu_ratio),
            three(&s.share, 1),
            ratio(s.share_ratio),
            three(&s.heap, 0),
            ratio(s.heap_ratio),
            ratio(s.timers_heap_ratio),
            three(&s.p99, 2),
            ratio(s.p99_ratio),
            d(&s.drops[0]),
            d(&s.drops[1]),
            notes.join("; ")
        );
        let _ = writeln!(
            verdicts,
            "- {}: {}",
            r.cell.name,
            targets(&r.cell, &s).join("; ")
        );
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "Server CPU: run time of the server runtime's threads (`srv-worker`) over the window. \
         Timers' share: a variant minus \"none\" of the same round. Heap: live bytes per \
         connection (server and load generator), its growth from before the first connection to \
         all up; the timers' part is each minus \"none\"'s. Ratios are per round, then the median. Drops e/l/w/m: \
         early, late (beyond idle + 60 ms), of an active client, silent clients never dropped; \
         summed over rounds. \"others\": CPU the rest of the machine used meanwhile (other \
         processes, steal). A cell is disturbed when \"none\" moved more than {:.0}% over \
         rounds or others used more than {:.0} ms/s.",
        args.max_spread * 100.0,
        args.max_others
    );
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "Targets (server CPU <= 0.75x in 1 s-frame and oversubscribed cells, else <= 1x; \
         timers' share <= 0.5x at >= 100k connections, else <= 0.7x; heap <= tokio's; request \
         p99 <= 1.1x; no wrong drop by the wheel). \"Out of reach\": \"none\" itself is above \
         the CPU bound."
    );
    let _ = writeln!(t);
    t.push_str(&verdicts);
    t
}
