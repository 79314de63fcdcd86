//! Workload 4: reset on every packet.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::time::DelayQueue;

use crate::config::Config;
use crate::runtime::{build_wheel, noop_cx};
use crate::stats::{median, ns};
use crate::table::{count_label, Row};
use support::{current_thread_runtime, PinnedVec, Rng};

const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Which connection each packet belongs to.
fn packet_order(conns: usize, resets: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..resets)
        .map(|_| rng.below(conns as u64) as u32)
        .collect()
}

fn reset_tokio(conns: usize, packets: &[u32], repoll: bool) -> Duration {
    current_thread_runtime().block_on(async {
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(conns);
        for _ in 0..conns {
            let timer = timers.push(tokio::time::sleep(IDLE_TIMEOUT));
            assert!(timer.poll(&mut cx).is_pending());
        }
        let start = Instant::now();
        for &c in packets {
            let mut timer = timers.get(c as usize);
            timer.as_mut().reset(Instant::now() + IDLE_TIMEOUT);
            if repoll {
                assert!(timer.poll(&mut cx).is_pending());
            }
        }
        start.elapsed()
    })
}

fn reset_wheel(conns: usize, packets: &[u32], repoll: bool, tick: Duration) -> Duration {
    current_thread_runtime().block_on(async {
        let wheel = build_wheel(tick);
        let mut cx = noop_cx();
        let mut timers = PinnedVec::with_capacity(conns);
        for _ in 0..conns {
            let timer = timers.push(wheel.sleep(IDLE_TIMEOUT));
            assert!(timer.poll(&mut cx).is_pending());
        }
        let start = Instant::now();
        for &c in packets {
            let mut timer = timers.get(c as usize);
            timer
                .as_mut()
                .get_mut()
                .reset(Instant::now() + IDLE_TIMEOUT);
            if repoll {
                assert!(timer.poll(&mut cx).is_pending());
            }
        }
        let elapsed = start.elapsed();
        assert_eq!(wheel.pending(), conns);
        elapsed
    })
}

fn reset_delay_queue(conns: usize, packets: &[u32]) -> Duration {
    current_thread_runtime().block_on(async {
        let mut queue = DelayQueue::with_capacity(conns);
        let keys: Vec<_> = (0..conns).map(|c| queue.insert(c, IDLE_TIMEOUT)).collect();
        let start = Instant::now();
        for &c in packets {
            queue.reset_at(&keys[c as usize], Instant::now() + IDLE_TIMEOUT);
        }
        start.elapsed()
    })
}

pub(crate) fn workload_4(cfg: &Config, rows: &mut Vec<Row>) {
    let packets = packet_order(cfg.conns, cfg.resets, 4);
    let warm = &packets[..packets.len() / 10];
    let _ = reset_tokio(cfg.conns, warm, true);
    let _ = reset_wheel(cfg.conns, warm, true, cfg.tick);
    let mut s: [Vec<f64>; 5] = Default::default();
    for _ in 0..cfg.runs {
        s[0].push(ns(reset_tokio(cfg.conns, &packets, false)));
        s[1].push(ns(reset_wheel(cfg.conns, &packets, false, cfg.tick)));
        s[2].push(ns(reset_delay_queue(cfg.conns, &packets)));
        s[3].push(ns(reset_tokio(cfg.conns, &packets, true)));
        s[4].push(ns(reset_wheel(cfg.conns, &packets, true, cfg.tick)));
    }
    let per = cfg.resets as f64;
    let [tokio, wheel, queue, tokio_poll, wheel_poll] = s.map(|v| median(v) / per);
    let label = format!(
        "4 reset, {} conns, {} resets",
        count_label(cfg.conns),
        count_label(cfg.resets)
    );
    rows.push(
        Row::new(&label, "ns per reset")
            .tokio(tokio)
            .delay_queue(queue)
            .wheel(wheel)
            .ratio_at_most(1.0, "<= tokio"),
    );
    rows.push(
        Row::new(&label, "ns per reset + poll")
            .tokio(tokio_poll)
            .wheel(wheel_poll)
            .ratio_at_most(1.0, "<= tokio"),
    );
}
