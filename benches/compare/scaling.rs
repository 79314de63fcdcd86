//! Workload 7: scaling with millions of pending timers.
//!
//! On a 2-worker multi-thread runtime, N timers due in 10 to 30 minutes
//! (uniform random deadlines) are registered from 4 worker tasks (created
//! and polled once each with a no-op waker, in chunks of 1024 with a yield
//! between chunks) and held pending; then 20 tasks start sleeping 50 ms in a
//! loop on the timer under test (`tokio::time::sleep` or `Wheel::sleep`).
//! After a settle of 0.5 s, the process's CPU time is read over a steady
//! window (`--scaling-secs`, default 5 s) and reported as CPU milliseconds
//! per second of wall time, for N in `--scaling-timers` (default 0, 100k, 1M
//! and 4M, times `--scale`).
//!
//! The sleeping tasks start after the registering, not before: a runtime
//! whose tasks lived through a registration storm was seen to spend less
//! CPU on the same sleeps afterwards (presumably from where its tasks then
//! sat on the workers), which made tokio look cheaper with more timers
//! pending. Started afterwards, they start alike at every N.
//!
//! A timer whose cost is per expiry stays flat as N grows; one that spends
//! something on every pending timer once in a while (a wheel that visits
//! each entry once per revolution) grows with N.
//!
//! Each point is measured once by default (`--scaling-runs`; `--runs` does
//! not apply): a 5 s window already averages over some 2000 sleeps and
//! hundreds of driver wake-ups, and the full-size workload then takes about
//! 50 s (4 points x 2 timers x (5 s window + 0.5 s settle + registering and
//! freeing, a few seconds at 4M)). Under `--scale` below 1 the window is
//! shorter (at least 1 s). Memory: 4M tokio sleeps are about 480 MB of
//! boxes and 4M of the wheel's about 230 MB; every timer, task and runtime
//! is freed before the next point.

use std::future::Future;
use std::time::Duration;

use tokio::task::yield_now;

use crate::alloc::Probe;
use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime, noop_cx, Timers};
use crate::sleepers::{Sleepers, Timer, Window};
use crate::stats::{median, ms};
use crate::table::{count_label, Notes, Row};
use support::{Keep, PinnedVec, Rng};

/// Worker threads of the runtime.
const WORKERS: usize = 2;
/// Tasks registering the pending timers, each a share of them.
const REGISTRARS: usize = 4;
/// Timers registered between two yields: the runtime turns between chunks,
/// as it does between a server's tasks (see `CHUNK` in workload 2).
const CHUNK: usize = 1024;
/// The tasks sleeping in a loop on the timer under test, and their period.
const SLEEPERS: usize = 20;
const PERIOD: Duration = Duration::from_millis(50);
/// The pending timers are due from `FAR` to `FAR + SPREAD` from now.
const FAR: Duration = Duration::from_secs(600);
const SPREAD: Duration = Duration::from_secs(1200);
/// Time given to the runtime, the driver and the allocator after
/// registering, before the window opens.
const SETTLE: Duration = Duration::from_millis(500);

/// One point: one timer, one N, one window.
struct Point {
    window: Window,
    /// Wall time to register the N timers.
    register: Duration,
    /// Live heap taken by the N timers (and the vectors holding them).
    heap: isize,
}

/// Creates and polls once (registers) timers made by `make` until `timers`
/// holds `end` of them.
fn register_chunk<T: Keep + Future>(
    timers: &mut PinnedVec<T>,
    end: usize,
    mut make: impl FnMut() -> T,
) {
    let mut cx = noop_cx();
    while timers.items.len() < end {
        assert!(timers.push(make()).poll(&mut cx).is_pending());
    }
}

/// Registers `n` timers made by `make` in the calling task, in chunks with a
/// yield between them, and returns them pending.
async fn register_all<T: Keep + Future>(n: usize, mut make: impl FnMut() -> T) -> PinnedVec<T> {
    let mut timers = PinnedVec::with_capacity(n);
    while timers.items.len() < n {
        let end = (timers.items.len() + CHUNK).min(n);
        register_chunk(&mut timers, end, &mut make);
        yield_now().await;
    }
    timers
}

/// Registers `n` timers with random deadlines `FAR` to `FAR + SPREAD` away.
async fn register(timer: Timer, n: usize, seed: u64) -> Timers {
    let mut rng = Rng::new(seed);
    let spread = SPREAD.as_nanos() as u64;
    let mut deadline = move || FAR + Duration::from_nanos(rng.below(spread));
    match timer {
        Timer::Tokio => Timers::Tokio(register_all(n, || tokio::time::sleep(deadline())).await),
        Timer::Wheel(wheel) => Timers::Wheel(register_all(n, || wheel.sleep(deadline())).await),
    }
}

fn point(use_wheel: bool, n: usize, cfg: &Config, seed: u64) -> Point {
    let rt = multi_thread_runtime(WORKERS);
    let (timer, sleepers, pending, register, heap) = rt.block_on(async {
        let timer = if use_wheel {
            Timer::Wheel(build_wheel(cfg.tick))
        } else {
            Timer::Tokio
        };
        let probe = Probe::now();
        let start = std::time::Instant::now();
        let tasks: Vec<_> = (0..REGISTRARS)
            .map(|r| {
                let share = n * (r + 1) / REGISTRARS - n * r / REGISTRARS;
                tokio::spawn(register(timer.clone(), share, seed * 64 + r as u64))
            })
            .collect();
        let mut pending = Vec::with_capacity(REGISTRARS);
        for task in tasks {
            pending.push(task.await.expect("a registering task panicked"));
        }
        let register = start.elapsed();
        let heap = probe.delta().heap;
        let sleepers = Sleepers::spawn(SLEEPERS, PERIOD, &timer, seed);
        (timer, sleepers, pending, register, heap)
    });
    if let Some(p) = timer.pending() {
        assert!(p >= n, "{p} timers pending in the wheel, fewer than {n}");
    }
    std::thread::sleep(SETTLE);
    let window = Window::measure(Duration::from_secs_f64(cfg.scaling_secs), &sleepers, &timer);
    rt.block_on(async move {
        sleepers.stop().await;
        for timers in pending {
            timers.drop_all();
        }
    });
    if let Some(p) = timer.pending() {
        assert_eq!(p, 0, "timers left in the wheel");
    }
    drop(timer);
    drop(rt);
    Point {
        window,
        register,
        heap,
    }
}

/// CPU ms per second against N, for the chart: (N, tokio, wheel), and how
/// the points were measured.
#[derive(Default)]
pub(crate) struct Scaling {
    pub(crate) points: Vec<(usize, f64, f64)>,
    pub(crate) how: String,
}

pub(crate) fn workload_7(
    cfg: &Config,
    rows: &mut Vec<Row>,
    notes: &mut Notes,
    chart: &mut Scaling,
) {
    let mut counts = cfg.scaling_timers.clone();
    counts.sort_unstable();
    counts.dedup();
    let largest = counts.last().copied().unwrap_or(0);
    let mut results: Vec<(usize, Vec<Point>, Vec<Point>)> = counts
        .iter()
        .map(|&n| (n, Vec::new(), Vec::new()))
        .collect();
    for run in 0..cfg.scaling_runs {
        for (i, (n, t, w)) in results.iter_mut().enumerate() {
            let seed = 7 + 100 * run as u64 + i as u64;
            // Alternate which goes first from run to run.
            if run % 2 == 0 {
                t.push(point(false, *n, cfg, seed));
                w.push(point(true, *n, cfg, seed));
            } else {
                w.push(point(true, *n, cfg, seed));
                t.push(point(false, *n, cfg, seed));
            }
        }
    }
    let med = |v: &[Point], f: fn(&Point) -> f64| median(v.iter().map(f).collect());
    let cpu = |p: &Point| p.window.cpu_ms_per_s();
    let base = results
        .iter()
        .find(|(n, _, _)| *n == 0)
        .map(|(_, t, w)| (med(t, cpu), med(w, cpu)));
    for (n, t, w) in &results {
        let (tc, wc) = (med(t, cpu), med(w, cpu));
        chart.points.push((*n, tc, wc));
        let label = format!(
            "7 scaling, {} pending + {SLEEPERS} x 50 ms",
            count_label(*n)
        );
        let row = Row::new(&label, "process CPU, ms per s")
            .tokio(tc)
            .wheel(wc);
        rows.push(if *n == largest && *n > 0 {
            row.ratio_at_most(1.0, "<= tokio")
        } else {
            row
        });
        if let Some((t0, w0)) = base.filter(|_| *n > 0) {
            let row = Row::new(&label, "CPU / own CPU at 0 pending")
                .tokio(tc / t0)
                .wheel(wc / w0);
            rows.push(if *n == largest {
                row.wheel_at_most(1.5, "wheel <= 1.5x its own at 0")
            } else {
                row
            });
        }
        let last = |v: &[Point]| {
            let p = v.last().expect("at least one run");
            format!(
                "registered in {:.0} ms, heap {:.1} MB, {:.0} sleeps/s",
                ms(p.register),
                p.heap as f64 / 1e6,
                p.window.completed_per_s()
            )
        };
        let wp = &w.last().expect("at least one run").window;
        notes.add(format!(
            "7 {} pending (10-30 min): CPU ms/s per run tokio {}, wheel {}; last run: tokio {}; \
             wheel {}, {:.0} driver wake-ups/s, {:.0} ticks visited/s",
            count_label(*n),
            runs_list(t),
            runs_list(w),
            last(t),
            last(w),
            wp.per_s(wp.driver_wakeups),
            wp.per_s(wp.ticks),
        ));
    }
    chart.how = format!(
        "each point: median of {} window{} of {:.1} s, 0.5 s after registering",
        cfg.scaling_runs,
        if cfg.scaling_runs == 1 { "" } else { "s" },
        cfg.scaling_secs
    );
    if base.is_none() {
        notes.add("7: no point at 0 pending, so no row against it (see --scaling-timers)");
    }
}

fn runs_list(v: &[Point]) -> String {
    v.iter()
        .map(|p| format!("{:.2}", p.window.cpu_ms_per_s()))
        .collect::<Vec<_>>()
        .join(" / ")
}
