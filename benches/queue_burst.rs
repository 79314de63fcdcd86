//! How long one poll of an expiry queue's consumer takes when a single tick
//! holds many keys: the wheel's `ExpiryQueue` against
//! `tokio_util::time::DelayQueue`.
//!
//! A run queues N keys (100k unless told) for one deadline 100 ms ahead, on
//! a current-thread runtime with the live clock, and one consumer takes
//! them all. It reports the longest single `poll_expired` (how long the
//! consumer's task, and any producer waiting for the queue, is held up at
//! once) and the time from the first value out to the last.
//!
//! ```sh
//! cargo run --release -p benches --example queue_burst                  # 5 rounds, 100k keys
//! cargo run --release -p benches --example queue_burst -- 9 1000000     # 9 rounds, 1M keys
//! cargo run --release -p benches --example queue_burst -- --one wheel   # one run
//! ```
//!
//! Each variant runs in a process of its own (`--one`), the variants
//! interleaved over rounds; it prints the median [min, max] of each figure.

use std::future::poll_fn;
use std::task::Poll;
use std::time::{Duration, Instant as StdInstant};

use support::{count_label, current_thread_runtime, Spread};
use tokio::time::Instant;

const VARIANTS: [&str; 2] = ["wheel", "delay-queue"];
const DEFAULT_KEYS: usize = 100_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count = |arg: Option<&String>| match arg.map(|s| s.parse::<usize>()) {
        None => DEFAULT_KEYS,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => usage(),
    };
    if args.first().map(String::as_str) == Some("--one") {
        if args.len() > 3 {
            usage();
        }
        let variant = args.get(1).map(String::as_str).unwrap_or("");
        let keys = count(args.get(2));
        let Some((longest, drain)) = one(variant, keys) else {
            eprintln!("queue_burst: unknown variant `{variant}` (one of {VARIANTS:?})");
            std::process::exit(2);
        };
        println!("{longest:.4} {drain:.3}");
        return;
    }
    if args.len() > 2 {
        usage();
    }
    let rounds = match args.first().map(|s| s.parse::<usize>()) {
        None => 5,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => usage(),
    };
    let keys = count(args.get(1));
    let runs = support::interleave("queue_burst", &VARIANTS, rounds, &[keys.to_string()]);
    println!(
        "{} keys due at one deadline, one consumer, {rounds} rounds; median [min, max]",
        count_label(keys)
    );
    println!(
        "{:<12} {:>28} {:>28}",
        "variant", "longest poll, ms", "first to last value, ms"
    );
    for (name, runs) in VARIANTS.iter().zip(&runs) {
        let figure = |i: usize| {
            let s = Spread::of(runs.iter().map(|values| values[i]).collect())
                .expect("a run of each variant");
            format!("{:.3} [{:.3}, {:.3}]", s.median, s.min, s.max)
        };
        println!("{name:<12} {:>28} {:>28}", figure(0), figure(1));
    }
}

fn usage() -> ! {
    eprintln!("queue_burst: usage: queue_burst [ROUNDS [KEYS]] | --one VARIANT [KEYS]");
    std::process::exit(2);
}

/// One run of `variant`: the longest poll and the drain, in ms.
fn one(variant: &str, keys: usize) -> Option<(f64, f64)> {
    let rt = current_thread_runtime();
    match variant {
        "wheel" => Some(rt.block_on(async {
            let wheel = tokio_wheel::Wheel::new();
            let queue = wheel.expiry_queue();
            let at = Instant::now() + Duration::from_millis(100);
            for i in 0..keys {
                queue.insert_at(i, at);
            }
            let mut consumer = queue.expirations();
            drain(keys, |cx| consumer.poll_expired(cx).map(|e| e.is_some())).await
        })),
        "delay-queue" => Some(rt.block_on(async {
            let mut queue = tokio_util::time::DelayQueue::with_capacity(keys);
            let at = Instant::now() + Duration::from_millis(100);
            for i in 0..keys {
                queue.insert_at(i, at);
            }
            drain(keys, |cx| queue.poll_expired(cx).map(|e| e.is_some())).await
        })),
        _ => None,
    }
}

/// Polls until `keys` values came out; the longest poll and the time from
/// the first value to the last, in ms.
async fn drain(
    keys: usize,
    mut poll: impl FnMut(&mut std::task::Context<'_>) -> Poll<bool>,
) -> (f64, f64) {
    let mut longest = Duration::ZERO;
    let mut first = None;
    for _ in 0..keys {
        let got = poll_fn(|cx| {
            let start = StdInstant::now();
            let p = poll(cx);
            longest = longest.max(start.elapsed());
            if p.is_ready() {
                first.get_or_insert(start);
            }
            p
        })
        .await;
        assert!(got, "the queue ended with values left");
    }
    let drain = first.expect("a value came out").elapsed();
    (longest.as_secs_f64() * 1e3, drain.as_secs_f64() * 1e3)
}
