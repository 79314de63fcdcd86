//! Workload 6: accuracy.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::time::DelayQueue;

use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime};
use crate::stats::{median, quantile};
use crate::table::{count_label, Notes, Row};
use support::Rng;

const ACCURACY_SPAN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accuracy {
    Tokio,
    DelayQueue,
    Wheel(Duration),
}

/// Lateness (seen minus deadline, ns) of every timer, and for the wheel the
/// part of it after the tick the timer was due at (its delivery).
pub(crate) struct Lateness {
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
pub(crate) struct Histograms(pub(crate) Vec<(String, Vec<i64>)>);

pub(crate) fn workload_6(
    cfg: &Config,
    rows: &mut Vec<Row>,
    notes: &mut Notes,
    hist: &mut Histograms,
) {
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
