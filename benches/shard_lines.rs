//! What a connection's frame pays when another worker locks the shard its
//! idle timeout is in.
//!
//! A `Sleep` whose deadline a frame pushes back does it without the shard's
//! lock, and polls without it; but it still reads a few fields of its shard
//! on every frame (the wheel's clock and shut-down flag, through the shard's
//! `core` pointer; `fired_upto`). Any task may run on any worker, so those
//! reads come from every core, while registrations and cancels on the
//! shard's own worker lock it. If the lock shares a cache line with the
//! fields the frames read, each lock and unlock takes that line away from
//! the other cores, and their next frame misses on it.
//!
//! Two threads, each with a current-thread runtime, share a wheel of one
//! shard:
//! - the frame thread: 1000 registered sleeps, each pushed back once (so
//!   that its shard tracks it), then frames: a reset of one of them a tick
//!   later and a poll (both without the lock), round after round;
//! - the neighbour: `Wheel::timeout` of a future that is pending once, in a
//!   loop, so a registration and a cancel, each under a shard's lock, as
//!   fast as it goes: on the frames' shard (variant `beside`), on a wheel
//!   of its own (`apart`: the same load on the machine, no line shared), or
//!   not at all (`alone`).
//!
//! It prints the frame thread's ns per frame in each variant, how many
//! timeouts the neighbour went through a second, and `beside` minus `apart`
//! round by round: what sharing the shard costs a frame (`apart` minus
//! `alone` is the neighbour's share of the machine, two threads on two
//! vCPUs). Timing starts once the neighbour runs. The sleeps
//! are few enough to stay in the cache: what is measured is the shard's
//! lines, not the connections'.
//!
//! ```sh
//! cargo run --release -p benches --example shard_lines          # 7 rounds
//! cargo run --release -p benches --example shard_lines -- 11    # 11 rounds
//! cargo run --release -p benches --example shard_lines -- --one beside
//! ```
//!
//! Each variant runs in a process of its own (`--one`), the variants
//! interleaved over rounds; it prints the median [min, max] of each.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::task::Poll;
use std::time::Duration;

use support::{interleave, Invocation, Spread, YieldOnce};
use tokio::time::Instant;

const VARIANTS: [&str; 3] = ["alone", "apart", "beside"];
const SLEEPS: usize = 1000;
const FRAMES: usize = 4_000_000;

fn main() {
    match support::invocation("shard_lines", &VARIANTS, 7) {
        Invocation::One(variant) => {
            let (ns, rate) = one(&variant);
            println!("{ns:.2} {rate:.0}");
        }
        Invocation::Rounds(rounds) => report(rounds),
    }
}

/// Runs the three variants once a round, each in a process of its own, and
/// prints the medians, and the difference `beside - apart` of each round.
fn report(rounds: usize) {
    let runs = interleave("shard_lines", &VARIANTS, rounds, &[]);
    let column = |variant: usize, value: usize| {
        Spread::of(runs[variant].iter().map(|v| v[value]).collect()).expect("a run of each variant")
    };
    println!(
        "{SLEEPS} sleeps, {FRAMES} frames a run (a reset and a poll), {rounds} rounds; median [min, max]"
    );
    let alone = column(0, 0).median;
    for (i, name) in VARIANTS.iter().enumerate() {
        let ns = column(i, 0);
        let against = ns.median - alone;
        print!(
            "{name:<7} {} ns per frame, {against:+.1} against alone",
            ns.show(1, "")
        );
        if i > 0 {
            print!(
                "; the neighbour: {} timeouts a second",
                column(i, 1).show(0, "")
            );
        }
        println!();
    }
    // Paired by round: `interleave` keeps each variant's runs in round order.
    let shared = Spread::of(
        runs[2]
            .iter()
            .zip(&runs[1])
            .map(|(beside, apart)| beside[0] - apart[0])
            .collect(),
    )
    .expect("a run of each variant");
    println!(
        "sharing the shard: beside - apart, round by round: {} ns per frame",
        shared.show(1, "")
    );
}

/// One variant: the frame thread's ns per frame, and the neighbour's
/// timeouts a second (0 alone).
fn one(variant: &str) -> (f64, f64) {
    // The wheels' drivers run on a runtime of their own, which is idle:
    // they plan their wake-ups as a server's would (so a registration
    // finds its tick covered and notifies nobody), where the frame thread,
    // busy in one poll, could never run one.
    let drivers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the drivers' runtime");
    let one_shard = || {
        tokio_wheel::Builder::new()
            .shards(1)
            .runtime(drivers.handle().clone())
            .build()
            .expect("a wheel of one shard")
    };
    let wheel = one_shard();
    let theirs = match variant {
        "alone" => None,
        "apart" => Some(one_shard()),
        "beside" => Some(wheel.clone()),
        _ => unreachable!("`invocation` checked the variant"),
    };
    let stop = Arc::new(AtomicBool::new(false));
    // The frame thread starts timing once the neighbour runs.
    let ready = Arc::new(Barrier::new(if theirs.is_some() { 2 } else { 1 }));
    let neighbour = theirs.map(|wheel| {
        let (stop, ready) = (stop.clone(), ready.clone());
        std::thread::spawn(move || {
            support::current_thread_runtime().block_on(async {
                ready.wait();
                let started = std::time::Instant::now();
                let mut timeouts = 0u64;
                while !stop.load(Relaxed) {
                    wheel
                        .timeout(Duration::from_secs(5), YieldOnce::default())
                        .await
                        .expect("the inner future is ready long before 5 s");
                    timeouts += 1;
                }
                timeouts as f64 / started.elapsed().as_secs_f64()
            })
        })
    });
    let ns = support::current_thread_runtime().block_on(async {
        let tick = wheel.resolution();
        let base = Instant::now() + Duration::from_secs(30);
        let mut sleeps: Vec<_> = (0..SLEEPS).map(|_| wheel.sleep_until(base)).collect();
        // Registered, then pushed back once: tracked, as an idle timeout
        // is after its connection's first frame.
        poll_fn(|cx| {
            for sleep in &mut sleeps {
                assert!(Pin::new(&mut *sleep).poll(cx).is_pending());
                sleep.reset(base + tick);
                assert!(Pin::new(&mut *sleep).poll(cx).is_pending());
            }
            Poll::Ready(())
        })
        .await;
        ready.wait();
        let started = std::time::Instant::now();
        poll_fn(|cx| {
            for frame in 0..FRAMES {
                // A tick later each round: 40 s after `base` at the end,
                // so nothing comes due during the run.
                let round = (frame / SLEEPS) as u32 + 2;
                let sleep = &mut sleeps[frame % SLEEPS];
                sleep.reset(base + tick * round);
                assert!(Pin::new(&mut *sleep).poll(cx).is_pending());
            }
            Poll::Ready(())
        })
        .await;
        started.elapsed().as_nanos() as f64 / FRAMES as f64
    });
    stop.store(true, Relaxed);
    let rate = neighbour.map_or(0.0, |t| t.join().expect("the neighbour thread"));
    (ns, rate)
}
