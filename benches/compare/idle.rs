//! Workload 5: idle cost.

use std::future::Future;
use std::time::Duration;

use crate::config::Config;
use crate::proc::process_cpu;
use crate::runtime::{build_wheel, multi_thread_runtime, noop_cx, worker_parks, Timers};
use crate::stats::ms;
use crate::table::{count_label, Notes, Row};
use support::{PinnedVec, Rng};

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

pub(crate) fn workload_5(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
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
