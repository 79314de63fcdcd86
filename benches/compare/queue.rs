//! Workload 9: a keyed expiry queue, `ExpiryQueue` against tokio-util's
//! `DelayQueue`.
//!
//! - Bytes per queued `u64` value: the heap the queue holds after
//!   `--queue-values` inserts with timeouts of 1 to 60 s, over the count
//!   (the keys are kept by the caller, in a vector allocated beforehand).
//! - One task: with `--queue-values` values queued, each operation inserts a
//!   value and removes a random queued one; nanoseconds per insert + remove.
//! - Eight tasks on a two-worker runtime, each inserting, resetting and
//!   removing values of its own (`--queue-ops` operations in all, nothing
//!   expiring): against the `ExpiryQueue` directly, with one consumer task
//!   waiting; against a `DelayQueue` owned by one task that the eight feed
//!   through a bounded mpsc channel, keeping its own table of id to key, as
//!   code must when the queue takes `&mut self`. Operations per second, from
//!   the first operation until the last has been applied to the queue.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::time::DelayQueue;
use tokio_wheel::queue::Key;
use tokio_wheel::ExpiryQueue;

use crate::alloc::Probe;
use crate::config::Config;
use crate::runtime::{build_wheel, multi_thread_runtime};
use crate::stats::{median, ns};
use crate::table::{count_label, Notes, Row, Target};
use support::{current_thread_runtime, Rng};

const TASKS: usize = 8;
const WORKERS: usize = 2;
/// Values each task keeps queued in the concurrent run.
const LIVE_PER_TASK: usize = 1000;

fn timeout(rng: &mut Rng) -> Duration {
    Duration::from_millis(1000 + rng.below(59_000))
}

fn bytes_delay_queue(n: usize) -> f64 {
    current_thread_runtime().block_on(async {
        let mut rng = Rng::new(9);
        let mut keys = Vec::with_capacity(n);
        let probe = Probe::now();
        let mut queue = DelayQueue::new();
        for i in 0..n as u64 {
            keys.push(queue.insert(i, timeout(&mut rng)));
        }
        let bytes = probe.delta().heap as f64 / n as f64;
        assert_eq!(queue.len(), n);
        drop(queue);
        bytes
    })
}

fn bytes_expiry_queue(n: usize, tick: Duration) -> f64 {
    current_thread_runtime().block_on(async {
        let wheel = build_wheel(tick);
        let mut rng = Rng::new(9);
        let mut keys = Vec::with_capacity(n);
        let probe = Probe::now();
        let queue = wheel.expiry_queue();
        for i in 0..n as u64 {
            keys.push(queue.insert(i, timeout(&mut rng)));
        }
        let bytes = probe.delta().heap as f64 / n as f64;
        assert_eq!(queue.len(), n);
        bytes
    })
}

fn single_delay_queue(n: usize, ops: usize) -> Duration {
    current_thread_runtime().block_on(async {
        let mut rng = Rng::new(10);
        let mut queue = DelayQueue::new();
        let mut keys: Vec<_> = (0..n as u64)
            .map(|i| queue.insert(i, timeout(&mut rng)))
            .collect();
        let start = std::time::Instant::now();
        for i in 0..ops as u64 {
            let at = rng.below(n as u64) as usize;
            let new = queue.insert(i, timeout(&mut rng));
            let old = std::mem::replace(&mut keys[at], new);
            std::hint::black_box(queue.remove(&old));
        }
        let elapsed = start.elapsed();
        assert_eq!(queue.len(), n);
        elapsed
    })
}

fn single_expiry_queue(n: usize, ops: usize, tick: Duration) -> Duration {
    current_thread_runtime().block_on(async {
        let wheel = build_wheel(tick);
        let mut rng = Rng::new(10);
        let queue = wheel.expiry_queue();
        let mut keys: Vec<_> = (0..n as u64)
            .map(|i| queue.insert(i, timeout(&mut rng)))
            .collect();
        let start = std::time::Instant::now();
        for i in 0..ops as u64 {
            let at = rng.below(n as u64) as usize;
            let new = queue.insert(i, timeout(&mut rng));
            let old = std::mem::replace(&mut keys[at], new);
            std::hint::black_box(queue.remove(&old));
        }
        let elapsed = start.elapsed();
        assert_eq!(queue.len(), n);
        elapsed
    })
}

/// One task's operations: (kind, value id, timeout). Ids are the task's own.
#[derive(Clone, Copy)]
enum Op {
    Insert(u64, Duration),
    Reset(u64, Duration),
    Remove(u64),
}

/// The same sequence for both queues: insert a value, reset a random live
/// one, and past `LIVE_PER_TASK` live values remove a random one.
fn task_ops(task: usize, ops: usize) -> Vec<Op> {
    let mut rng = Rng::new(100 + task as u64);
    let mut live: Vec<u64> = Vec::new();
    let mut out = Vec::with_capacity(ops);
    let mut next = (task as u64) << 40;
    while out.len() < ops {
        out.push(Op::Insert(next, timeout(&mut rng)));
        live.push(next);
        next += 1;
        let pick = live[rng.below(live.len() as u64) as usize];
        out.push(Op::Reset(pick, timeout(&mut rng)));
        if live.len() > LIVE_PER_TASK {
            let at = rng.below(live.len() as u64) as usize;
            out.push(Op::Remove(live.swap_remove(at)));
        }
    }
    out.truncate(ops);
    out
}

fn concurrent_expiry_queue(plans: &[Vec<Op>], tick: Duration) -> Duration {
    let rt = multi_thread_runtime(WORKERS);
    rt.block_on(async {
        let wheel = build_wheel(tick);
        let queue: ExpiryQueue<u64> = wheel.expiry_queue();
        let mut consumer = queue.expirations();
        let consumer = tokio::spawn(async move {
            let mut n = 0usize;
            while consumer.next_expired().await.is_some() {
                n += 1;
            }
            n
        });
        let start = std::time::Instant::now();
        let tasks: Vec<_> = plans
            .iter()
            .cloned()
            .map(|plan| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    let mut keys: HashMap<u64, Key> = HashMap::with_capacity(2 * LIVE_PER_TASK);
                    for op in plan {
                        match op {
                            Op::Insert(id, d) => {
                                keys.insert(id, queue.insert(id, d));
                            }
                            Op::Reset(id, d) => {
                                queue.reset(&keys[&id], d).expect("nothing expires");
                            }
                            Op::Remove(id) => {
                                let key = keys.remove(&id).expect("a live id");
                                queue.remove(&key).expect("nothing expires");
                            }
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("a producer panicked");
        }
        let elapsed = start.elapsed();
        queue.clear();
        drop(queue);
        assert_eq!(consumer.await.expect("the consumer"), 0, "nothing expired");
        elapsed
    })
}

fn concurrent_delay_queue(plans: &[Vec<Op>]) -> Duration {
    let rt = multi_thread_runtime(WORKERS);
    rt.block_on(async {
        let (tx, mut rx) = mpsc::channel::<Op>(4096);
        // The owner: applies the operations and expires values, as a server's
        // timer task would.
        let owner = tokio::spawn(async move {
            let mut queue = DelayQueue::new();
            let mut keys = HashMap::new();
            let mut applied = 0usize;
            let mut expired = 0usize;
            loop {
                tokio::select! {
                    op = rx.recv() => {
                        let Some(op) = op else { break };
                        applied += 1;
                        match op {
                            Op::Insert(id, d) => {
                                keys.insert(id, queue.insert(id, d));
                            }
                            Op::Reset(id, d) => queue.reset(&keys[&id], d),
                            Op::Remove(id) => {
                                let key = keys.remove(&id).expect("a live id");
                                queue.remove(&key);
                            }
                        }
                    }
                    Some(_) = futures::StreamExt::next(&mut queue), if !queue.is_empty() => {
                        expired += 1;
                    }
                }
            }
            (applied, expired, std::time::Instant::now())
        });
        let start = std::time::Instant::now();
        let tasks: Vec<_> = plans
            .iter()
            .cloned()
            .map(|plan| {
                let tx = tx.clone();
                tokio::spawn(async move {
                    for op in plan {
                        tx.send(op).await.expect("the owner runs");
                    }
                })
            })
            .collect();
        drop(tx);
        for t in tasks {
            t.await.expect("a producer panicked");
        }
        let (applied, expired, end) = owner.await.expect("the owner panicked");
        let total: usize = plans.iter().map(Vec::len).sum();
        assert_eq!((applied, expired), (total, 0));
        end - start
    })
}

pub(crate) fn workload_9(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Notes) {
    let n = cfg.queue_values;
    let ops = cfg.queue_ops;
    let per_task = ops.div_ceil(TASKS);
    let plans: Vec<Vec<Op>> = (0..TASKS).map(|t| task_ops(t, per_task)).collect();
    let total_ops: usize = plans.iter().map(Vec::len).sum();
    // Warm-up.
    let _ = single_delay_queue(n / 10 + 1, ops / 10 + 1);
    let _ = single_expiry_queue(n / 10 + 1, ops / 10 + 1, cfg.tick);
    let mut s: [Vec<f64>; 6] = Default::default();
    for _ in 0..cfg.runs {
        s[0].push(bytes_delay_queue(n));
        s[1].push(bytes_expiry_queue(n, cfg.tick));
        s[2].push(ns(single_delay_queue(n, ops)) / ops as f64);
        s[3].push(ns(single_expiry_queue(n, ops, cfg.tick)) / ops as f64);
        s[4].push(total_ops as f64 / concurrent_delay_queue(&plans).as_secs_f64());
        s[5].push(total_ops as f64 / concurrent_expiry_queue(&plans, cfg.tick).as_secs_f64());
    }
    let [dq_bytes, eq_bytes, dq_single, eq_single, dq_mt, eq_mt] = s.map(median);
    let label = format!("9 keyed expiry, {} values", count_label(n));
    let target = |row: Row, text: String, met: bool| Row {
        target: Some(Target { text, met }),
        ..row
    };
    rows.push(target(
        Row::new(&label, "bytes per queued u64")
            .delay_queue(dq_bytes)
            .wheel(eq_bytes),
        format!("<= DelayQueue + 8 ({:.0})", dq_bytes + 8.0),
        eq_bytes <= dq_bytes + 8.0,
    ));
    rows.push(target(
        Row::new(&label, "ns per insert + remove, 1 task")
            .delay_queue(dq_single)
            .wheel(eq_single),
        "<= DelayQueue".to_string(),
        eq_single <= dq_single,
    ));
    rows.push(target(
        Row::new(
            &label,
            format!(
                "M ops/s, {TASKS} tasks on {WORKERS} workers (insert, reset, remove; \
                 DelayQueue fed through mpsc)"
            ),
        )
        .delay_queue(dq_mt / 1e6)
        .wheel(eq_mt / 1e6),
        ">= 3x DelayQueue".to_string(),
        eq_mt >= 3.0 * dq_mt,
    ));
    notes.add(format!(
        "9: keys are {} bytes (DelayQueue's {}), kept by the caller and not counted above; \
         {} operations in the concurrent run, {:.2}x DelayQueue's throughput; \
         single task {:.2}x DelayQueue's time",
        std::mem::size_of::<Key>(),
        std::mem::size_of::<tokio_util::time::delay_queue::Key>(),
        total_ops,
        eq_mt / dq_mt,
        eq_single / dq_single
    ));
}
