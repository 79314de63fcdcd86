//! tokio-wheel against `tokio::time` (and `tokio_util::time::DelayQueue` where
//! it applies), scenario by scenario, printed as one table with the targets
//! each row is held to, and written with its SVG charts to `compare/` in the
//! target directory (`compare.md`, `bench.svg`, `lateness.svg`,
//! `scaling.svg`). `--write-docs` writes them to `docs/` instead: the
//! published table and charts, refreshed only by a full run on an idle
//! machine, so that a quick run never dirties the tracked tree.
//!
//! ```text
//! cargo run --release -p benches --example compare                  # full run, 2-3 minutes on 2 cores
//! cargo run --release -p benches --example compare -- --scale 0.1   # a quick look
//! cargo run --release -p benches --example compare -- --write-docs  # refresh docs/
//! cargo run --release -p benches --example compare -- --help        # every size is a flag
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
//!    `size_of` plus the heap it holds, from the counting allocator in `alloc`);
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
//! 7. **Scaling.** Process CPU per second of wall time while 20 tasks sleep
//!    50 ms in a loop and N timers due in 10 to 30 minutes are pending, for
//!    N = 0, 100k, 1M and 4M (drawn as `docs/scaling.svg`): a timer that
//!    works on every pending timer now and then grows with N.
//! 8. **Fire path.** 2000 tasks sleeping 50 ms in a loop: process CPU per
//!    completed sleep, and the sleeps completed per second.
//! 9. **Keyed expiry.** `ExpiryQueue` against tokio-util's `DelayQueue`:
//!    bytes per queued `u64`, insert + remove from one task, and eight tasks
//!    on two workers inserting, resetting and removing (the `DelayQueue`
//!    owned by one task and fed through an mpsc channel).
//!
//! Every measurement runs on a runtime of its own, after a warm-up, a few
//! times (`--runs`); the table shows the median. Wheels are built inside the
//! runtime that uses them. "Registering" a timer is creating it and polling
//! it once with a no-op waker inside the runtime's context, since both
//! timers register lazily, on their first poll.
//!
//! # Layout
//!
//! `config` reads the flags; `alloc` is the counting allocator and `proc`
//! reads `/proc/self`; `runtime` builds runtimes and wheels; `stats` and
//! `table` summarise and print; `svg` draws the charts. One module per
//! workload: `overhead` (1, and the cost model), `pending` (2), `expiry` (3),
//! `reset` (4), `idle` (5), `accuracy` (6), `scaling` (7), `fire` (8) and
//! `queue` (9); 7 and 8 run on the sleeping tasks of `sleepers`.

use std::process::ExitCode;

use tokio_wheel::Wheel;

mod accuracy;
mod alloc;
mod config;
mod expiry;
mod fire;
mod idle;
mod overhead;
mod pending;
mod proc;
mod queue;
mod reset;
mod runtime;
mod scaling;
mod sleepers;
mod stats;
mod svg;
mod table;

// Shared with the criterion benches. `plan_wakeup` is theirs: this example
// parks its runtimes inside tasks, with `park_with_pending`.

use accuracy::{workload_6, Histograms};
use config::{cores, parse_args, USAGE};
use expiry::workload_3;
use fire::workload_8;
use idle::workload_5;
use overhead::{cost_model, workload_1};
use pending::workload_2;
use queue::workload_9;
use reset::workload_4;
use scaling::{workload_7, Scaling};
use svg::{lateness_chart, ratio_chart, scaling_chart};
use table::{render_table, Notes};

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
    // Everything printed after the run goes to `compare.md` too.
    let mut report = format!(
        "tokio-wheel vs tokio::time: {machine}\n\ndate {}, command: compare {}\n\n",
        today(),
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    print!("{report}");

    let mut rows = Vec::new();
    let mut notes = Notes::default();
    let mut hist = Histograms(Vec::new());
    let mut scaling = Scaling::default();
    let step = |w: u32, what: &str| {
        eprintln!(
            "[{:>6.1} s] workload {w}: {what}",
            wall.elapsed().as_secs_f64()
        )
    };
    // The latency- and CPU-sensitive workloads (5, 6, 8) run before the ones
    // that churn hundreds of megabytes (2, 3, 7): the kernel's reclaim of that memory
    // afterwards was seen to disturb the accuracy runs. The table keeps the
    // workloads' order.
    for w in [1, 4, 5, 6, 8, 2, 3, 7, 9] {
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
            6 => {
                step(6, "accuracy");
                workload_6(&cfg, &mut rows, &mut notes, &mut hist);
            }
            7 => {
                step(7, "scaling with pending timers");
                workload_7(&cfg, &mut rows, &mut notes, &mut scaling);
            }
            8 => {
                step(8, "fire path");
                workload_8(&cfg, &mut rows, &mut notes);
            }
            _ => {
                step(9, "keyed expiry queue");
                workload_9(&cfg, &mut rows, &mut notes);
            }
        }
    }
    // Rows and notes in workload order (stable: each keeps its own order).
    rows.sort_by_key(|r| r.workload.chars().next());
    notes
        .0
        .sort_by_key(|n| n.chars().next().filter(char::is_ascii_digit));
    eprintln!("[{:>6.1} s] done", wall.elapsed().as_secs_f64());

    let (met, missed) = rows
        .iter()
        .filter_map(|r| r.target.as_ref())
        .fold(
            (0, 0),
            |(m, x), t| if t.met { (m + 1, x) } else { (m, x + 1) },
        );
    let mut results = render_table(&rows);
    results.push_str(&format!(
        "\ntargets: {met} met, {missed} missed\n\nnotes:\n"
    ));
    for n in &notes.0 {
        results.push_str(&format!("- {n}\n"));
    }
    results.push_str(&format!(
        "- wall time of this run: {:.1} s\n",
        wall.elapsed().as_secs_f64()
    ));
    print!("{results}");
    report.push_str(&results);

    if let Some(dir) = &cfg.out {
        let subtitle = format!("{}; {machine}", today());
        let mut charts = vec![
            ("compare.md", report),
            ("bench.svg", ratio_chart(&rows, &subtitle)),
        ];
        if !hist.0.is_empty() {
            charts.push(("lateness.svg", lateness_chart(&hist, &subtitle)));
        }
        if !scaling.points.is_empty() {
            charts.push(("scaling.svg", scaling_chart(&scaling, &subtitle)));
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("compare: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        for (name, contents) in charts {
            let path = dir.join(name);
            match std::fs::write(&path, contents) {
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
