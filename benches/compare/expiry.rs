//! Workload 3: mass expiry.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_wheel::Wheel;

use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime};
use crate::stats::{median, ms};
use crate::table::{count_label, Notes, Row};
use support::Rng;

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
pub(crate) async fn ticker(stop: Arc<AtomicBool>) -> Vec<(Instant, Duration)> {
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

pub(crate) fn workload_3(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
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
