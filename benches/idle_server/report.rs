//! The side-by-side table and the verdicts.

use std::time::Duration;

use crate::run::Report;
use crate::{Config, SLACK, TICK};

pub const NAMES: [&str; 3] = ["tokio", "wheel", "none"];

pub struct Table<'a> {
    pub reports: [Option<&'a Report>; 3],
}

impl Table<'_> {
    pub fn header(&self) {
        println!(
            "{:<62} {:>12} {:>12} {:>12} {:>12}",
            "", NAMES[0], NAMES[1], NAMES[2], "wheel/tokio"
        );
    }

    /// One row: `f` gives each variant's value; `ratio` adds wheel / tokio.
    pub fn row(
        &self,
        label: &str,
        decimals: usize,
        ratio: bool,
        f: impl Fn(&Report) -> Option<f64>,
    ) {
        let values: Vec<Option<f64>> = self.reports.iter().map(|r| r.and_then(&f)).collect();
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.decimals$}"));
        let ratio = match (ratio, values[0], values[1]) {
            (true, Some(t), Some(w)) if t != 0.0 => format!("{:.2}", w / t),
            _ => String::new(),
        };
        println!(
            "{label:<62} {:>12} {:>12} {:>12} {:>12}",
            cell(values[0]),
            cell(values[1]),
            cell(values[2]),
            ratio
        );
    }

    pub fn text(&self, label: &str, f: impl Fn(&Report) -> Option<String>) {
        let cells: Vec<String> = self
            .reports
            .iter()
            .map(|r| r.and_then(&f).unwrap_or_else(|| "-".into()))
            .collect();
        println!(
            "{label:<62} {:>12} {:>12} {:>12}",
            cells[0], cells[1], cells[2]
        );
    }
}

pub fn per_s(d: Duration, over: Duration) -> Option<f64> {
    (over > Duration::ZERO).then(|| d.as_secs_f64() * 1000.0 / over.as_secs_f64())
}

pub fn print_table(cfg: &Config, reports: &[Option<Report>; 3]) {
    let t = Table {
        reports: [
            reports[0].as_ref(),
            reports[1].as_ref(),
            reports[2].as_ref(),
        ],
    };
    let mb = |b: f64| b / (1024.0 * 1024.0);
    let none = reports[2].as_ref();
    println!();
    t.header();
    t.row("connections served", 0, false, |r| {
        Some(r.connections as f64)
    });
    t.row(
        "setup: seconds to bring all connections up",
        2,
        false,
        |r| Some(r.setup.as_secs_f64()),
    );
    t.row(
        "frames the server received per s (the load it carried)",
        0,
        true,
        |r| Some(r.frames[0] as f64 / r.window.as_secs_f64()),
    );
    t.row(
        "frames the load generator was set to send per s",
        0,
        false,
        |r| Some(r.frames_planned),
    );
    t.row(
        "machine load average (1 min) at the end: other work too",
        1,
        false,
        |r| Some(r.load_average),
    );
    t.row(
        "CPU of other processes ms per s during the window",
        0,
        false,
        |r| Some(r.others_cpu.as_secs_f64() * 1000.0),
    );
    t.row(
        "expiry round: its length in s (first idle deadlines due)",
        2,
        false,
        |r| Some(r.round.as_secs_f64()),
    );
    t.row("server CPU ms per s, whole window", 1, true, |r| {
        per_s(r.cpu[0], r.window)
    });
    t.row("server CPU ms per s, quiet part", 1, true, |r| {
        per_s(r.cpu[1], r.window - r.round)
    });
    t.row("server CPU ms per s, expiry round", 1, true, |r| {
        per_s(r.cpu[2], r.round)
    });
    let per_frame =
        |cpu: Duration, frames: u64| (frames > 0).then(|| cpu.as_secs_f64() * 1e6 / frames as f64);
    t.row(
        "server CPU us per received frame, whole window",
        2,
        true,
        |r| per_frame(r.cpu[0], r.frames[0]),
    );
    t.row(
        "server CPU us per received frame, quiet part",
        2,
        true,
        |r| per_frame(r.cpu[1], r.frames[1]),
    );
    t.row(
        "server CPU us per received frame, expiry round",
        2,
        true,
        |r| per_frame(r.cpu[2], r.frames[2]),
    );
    t.row(
        "load generator CPU ms per s, whole window (for reference)",
        1,
        true,
        |r| per_s(r.cli_cpu, r.window),
    );
    let polls =
        |n: u64, over: Duration| (over > Duration::ZERO).then(|| n as f64 / over.as_secs_f64());
    t.row(
        "server connection-task polls per s, whole window",
        0,
        true,
        |r| polls(r.polls[0], r.window),
    );
    t.row(
        "server connection-task polls per s, quiet part",
        0,
        true,
        |r| polls(r.polls[1], r.window - r.round),
    );
    t.row(
        "server connection-task polls per s, expiry round",
        0,
        true,
        |r| polls(r.polls[2], r.round),
    );
    t.row(
        "heap MB once connected (whole process, both sides)",
        1,
        true,
        |r| Some(mb(r.heap_conn as f64)),
    );
    t.row("heap MB at the end of the window", 1, true, |r| {
        Some(mb(r.heap_end as f64))
    });
    t.row(
        "heap bytes per connection (server and client side)",
        0,
        true,
        |r| Some(r.heap_per_conn),
    );
    t.row(
        "heap bytes per connection above \"none\" (the timers)",
        0,
        true,
        |r| none.map(|n| r.heap_per_conn - n.heap_per_conn),
    );
    t.row(
        "RSS MB once connected (process; grows run after run)",
        0,
        false,
        |r| Some(mb(r.rss_conn as f64)),
    );
    t.row("RSS MB at the end of the window", 0, false, |r| {
        Some(mb(r.rss_end as f64))
    });
    t.row("request latency ms p50, quiet part", 3, true, |r| {
        r.latency[0][0]
    });
    t.row("request latency ms p99, quiet part", 3, true, |r| {
        r.latency[0][1]
    });
    t.row("request latency ms p99, whole window", 3, true, |r| {
        r.latency_all[1]
    });
    t.row("request latency ms p50, expiry round", 3, true, |r| {
        r.latency[1][0]
    });
    t.row("request latency ms p99, expiry round", 3, true, |r| {
        r.latency[1][1]
    });
    t.row("requests answered in the window", 0, false, |r| {
        Some(r.requests_answered as f64)
    });
    t.row("requests that hit the 5 s timeout", 0, false, |r| {
        Some(r.request_timeouts as f64)
    });
    let hb = cfg.heartbeat.as_secs_f64() * 1000.0;
    t.row(
        &format!("heartbeat gap ms p50 at the client (period {hb:.0})"),
        1,
        false,
        |r| r.heartbeat_gap[0],
    );
    t.row(
        &format!("heartbeat gap ms p99 at the client (period {hb:.0})"),
        1,
        false,
        |r| r.heartbeat_gap[1],
    );
    t.row("heartbeats the server sent", 0, false, |r| {
        Some(r.heartbeats_sent as f64)
    });
    t.text("silent clients dropped / silent clients", |r| {
        Some(format!("{}/{}", r.silent_dropped, r.silent))
    });
    t.row("idle drops by the server", 0, false, |r| {
        Some(r.drops as f64)
    });
    t.row(
        "drops early: before idle since the last frame (server)",
        0,
        false,
        |r| Some(r.early as f64),
    );
    t.row(
        "drops early as the client sees it (from its last send)",
        0,
        false,
        |r| Some(r.client_early as f64),
    );
    let late_ms = (TICK + SLACK).as_millis();
    t.row(
        &format!("drops late: more than idle + {late_ms} ms"),
        0,
        false,
        |r| Some(r.late as f64),
    );
    t.row("drops wrong: an active client dropped", 0, false, |r| {
        Some(r.wrong as f64)
    });
    t.row("drop ms after the idle deadline, p50", 1, false, |r| {
        r.drop_after_idle[0]
    });
    t.row("drop ms after the idle deadline, max", 1, false, |r| {
        r.drop_after_idle[1]
    });
    let wheel = |f: fn(&tokio_wheel::Stats) -> u64| {
        move |r: &Report| r.wheel.as_ref().map(|(s, _)| f(s) as f64)
    };
    t.row(
        "wheel: timers registered",
        0,
        false,
        wheel(|s| s.registered),
    );
    t.row("wheel: timers fired", 0, false, wheel(|s| s.fired));
    t.row(
        "wheel: early wake-ups of a timer pushed back by a reset",
        0,
        false,
        wheel(|s| s.rearmed),
    );
    t.row(
        "wheel: timers filed again by the driver for a later deadline",
        0,
        false,
        wheel(|s| s.refiled),
    );
    t.row(
        "wheel: timers moved down a level",
        0,
        false,
        wheel(|s| s.cascades),
    );
    t.row("wheel: timers fired in the expiry round", 0, false, |r| {
        r.wheel.as_ref().map(|(_, f)| *f as f64)
    });
    t.row("wheel: timers cancelled", 0, false, wheel(|s| s.cancelled));
    t.row(
        "wheel: driver wake-ups",
        0,
        false,
        wheel(|s| s.driver_wakeups),
    );
    t.row("wheel: ticks visited", 0, false, wheel(|s| s.ticks));
    t.row(
        "wheel: most timers fired in one tick",
        0,
        false,
        wheel(|s| s.max_batch),
    );
    t.row("wheel: largest driver lag ms", 1, false, |r| {
        r.wheel
            .as_ref()
            .map(|(s, _)| s.max_lag.as_secs_f64() * 1000.0)
    });
    println!();
    println!(
        "CPU: run time of the server's threads (srv-worker) from /proc/self/task/*/schedstat; \
         the quiet part is the window without the expiry round."
    );
    println!(
        "Heap: live bytes of the whole process (server, load generator, runtimes); per \
         connection: its growth from just before the first connection to all of them up. RSS \
         is the process's and keeps pages of earlier variants: compare it with --timer X alone."
    );
    println!(
        "\"none\": no idle timeout, no request timeout; a heartbeat every {} received frames \
         instead of every {:.1} s.",
        cfg.frames_per_beat(),
        cfg.heartbeat.as_secs_f64()
    );
}

/// The correctness checks of one variant's run, without printing: no early
/// drop, no active client dropped, and (with timers) every silent client
/// dropped.
pub fn checks_pass(name: &str, r: &Report) -> bool {
    let base = r.early == 0 && r.client_early == 0 && r.wrong == 0;
    base && (name == "none" || (r.silent_dropped == r.silent as u64 && r.drops == r.silent as u64))
}

/// The correctness checks; `false` if one failed.
pub fn verdicts(reports: &[Option<Report>; 3]) -> bool {
    let mut ok = true;
    println!();
    for (name, r) in NAMES.iter().zip(reports) {
        let Some(r) = r else { continue };
        let mut check = |what: &str, pass: bool| {
            println!("{} {name}: {what}", if pass { "PASS" } else { "FAIL" });
            ok &= pass;
        };
        check(
            &format!(
                "no connection dropped early ({} early)",
                r.early + r.client_early
            ),
            r.early == 0 && r.client_early == 0,
        );
        check(
            &format!("no active client dropped ({} wrong)", r.wrong),
            r.wrong == 0,
        );
        if *name == "none" {
            println!("n/a  {name}: silent clients are not dropped without an idle timeout");
        } else {
            check(
                &format!(
                    "every silent client dropped ({} of {}, {} server drops)",
                    r.silent_dropped, r.silent, r.drops
                ),
                r.silent_dropped == r.silent as u64 && r.drops == r.silent as u64,
            );
            if r.late > 0 {
                println!(
                    "WARN {name}: {} drops later than idle + {} ms (a busy machine?)",
                    r.late,
                    (TICK + SLACK).as_millis()
                );
            }
        }
    }
    ok
}
