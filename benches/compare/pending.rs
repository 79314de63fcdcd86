//! Workload 2: 1M pending timers.

use std::future::Future;
use std::time::Duration;

use tokio_util::time::DelayQueue;

use crate::alloc::{Delta, Probe};
use crate::config::Config;
use crate::runtime::{build_wheel, noop_cx};
use crate::stats::{median, ms};
use crate::table::{count_label, Notes, Row};
use support::{current_thread_runtime, spread_deadlines, PinnedVec};

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

pub(crate) fn workload_2(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
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
            .wheel_at_most(48.0, "<= 48 B"),
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
