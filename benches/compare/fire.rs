//! Workload 8: the fire path.
//!
//! 2000 tasks (`--fire-tasks`, times `--scale`) on a 2-worker multi-thread
//! runtime, each sleeping 50 ms in a loop (a new `sleep(50 ms)` awaited again
//! after every wake-up), their phases spread over the period. After a settle
//! of 0.5 s, the process's CPU time and the sleeps completed are read over a
//! window (`--fire-secs`, default 3 s, shorter under `--scale` below 1): CPU
//! nanoseconds per completed sleep, which is what registering, firing and
//! delivering a wake-up costs, with the task's poll around it. Measured
//! `--runs` times, the median shown: about 20 s in all.
//!
//! The sleeps completed per second should be near 2000 / 50 ms = 40k/s for
//! both timers; the wheel's are fewer (about 33k/s with a 10 ms tick): a task
//! woken just after tick k asks for 50 ms, which ends just after tick k + 5,
//! so the sleep fires at tick k + 6, 60 ms after the last.

use std::time::Duration;

use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime};
use crate::sleepers::{Sleepers, Timer, Window};
use crate::stats::median;
use crate::table::{count_label, Notes, Row};

/// Worker threads of the runtime.
const WORKERS: usize = 2;
const PERIOD: Duration = Duration::from_millis(50);
/// Time for every task to be in its loop, and the runtime warm, before the
/// window opens.
const SETTLE: Duration = Duration::from_millis(500);

fn fire_once(use_wheel: bool, cfg: &Config, seed: u64) -> Window {
    let rt = multi_thread_runtime(WORKERS);
    let (timer, sleepers) = rt.block_on(async {
        let timer = if use_wheel {
            Timer::Wheel(build_wheel(cfg.tick))
        } else {
            Timer::Tokio
        };
        let sleepers = Sleepers::spawn(cfg.fire_tasks, PERIOD, &timer, seed);
        (timer, sleepers)
    });
    std::thread::sleep(SETTLE);
    let window = Window::measure(Duration::from_secs_f64(cfg.fire_secs), &sleepers, &timer);
    rt.block_on(sleepers.stop());
    window
}

pub(crate) fn workload_8(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let (mut t, mut w) = (Vec::new(), Vec::new());
    for run in 0..cfg.runs {
        let seed = 8 + run as u64;
        // Alternate which goes first from run to run.
        if run % 2 == 0 {
            t.push(fire_once(false, cfg, seed));
            w.push(fire_once(true, cfg, seed));
        } else {
            w.push(fire_once(true, cfg, seed));
            t.push(fire_once(false, cfg, seed));
        }
    }
    let med = |v: &[Window], f: fn(&Window) -> f64| median(v.iter().map(f).collect());
    let label = format!(
        "8 fire path, {} tasks x sleep(50 ms) loop",
        count_label(cfg.fire_tasks)
    );
    rows.push(
        Row::new(&label, "CPU ns per completed sleep")
            .tokio(med(&t, Window::cpu_ns_per_sleep))
            .wheel(med(&w, Window::cpu_ns_per_sleep))
            .ratio_at_most(1.0, "<= tokio"),
    );
    rows.push(
        Row::new(&label, "completed sleeps per s")
            .tokio(med(&t, Window::completed_per_s))
            .wheel(med(&w, Window::completed_per_s)),
    );
    rows.push(
        Row::new(&label, "process CPU, ms per s")
            .tokio(med(&t, Window::cpu_ms_per_s))
            .wheel(med(&w, Window::cpu_ms_per_s)),
    );
    let runs = |v: &[Window]| {
        v.iter()
            .map(|r| format!("{:.0}", r.cpu_ns_per_sleep()))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let last = w.last().expect("at least one run");
    notes.add(format!(
        "8: CPU ns per completed sleep, per run: tokio {}, wheel {}; the wheel's last run: {:.0} \
         driver wake-ups/s, {:.0} ticks visited/s ({:.0} sleeps each)",
        runs(&t),
        runs(&w),
        last.per_s(last.driver_wakeups),
        last.per_s(last.ticks),
        last.completed as f64 / last.ticks.max(1) as f64,
    ));
}
