//! Workload 1: timeout registered then cancelled, and the cost model of its
//! parts (printed in the notes).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tokio_wheel::Wheel;

use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime};
use crate::stats::{median, ns};
use crate::table::{Notes, Row};
use support::{current_thread_runtime, park_with_pending, YieldOnce};

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

pub(crate) fn workload_1(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
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

pub(crate) fn cost_model(tick: Duration, notes: &mut Notes) {
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
