//! Runs one kind of registered-then-cancelled timeout N times in one task,
//! for instruction counts under callgrind (workload 1 of `compare`): the
//! difference between a run of N and a run of 2N, divided by N, is the cost
//! of one operation, free of start-up and set-up. Callgrind counts
//! instructions, not time, so the figure is the same on a busy machine.
//!
//! ```sh
//! cargo build --release -p benches --example instructions
//! for kind in none tokio wheel free; do
//!   for n in 100000 200000; do
//!     valgrind --tool=callgrind --callgrind-out-file=cg.$kind.$n \
//!       target/release/examples/instructions $kind $n 2>&1 | grep Collected
//!   done
//! done
//! ```
//!
//! Kinds: `none` (the inner future alone, the baseline), `tokio`
//! (`tokio::time::timeout`), `wheel` (`Wheel::timeout`) and `free`
//! (`tokio_wheel::timeout`, the runtime's default wheel). Each timeout is
//! 5 s around a future that is pending once (having woken its task) and then
//! ready: registered by the first poll, cancelled by the drop.
//!
//! The fire path (workload 8 of `compare`): `sleep-tokio` and `sleep-wheel`
//! complete N sleeps of 50 ms, 200 tasks each sleeping in a loop, on a
//! current-thread runtime whose clock is paused (it jumps to the next timer
//! whenever the runtime idles, so nothing waits for real time): creation,
//! registration, firing, the wake-up and the completing poll of each.
//!
//! The interval's tick (the heartbeat of a server's connection):
//! `interval-tokio` and `interval-wheel` deliver N ticks of 50 ms intervals,
//! 200 tasks each awaiting its own interval's ticks in a loop, on the same
//! paused runtime: the firing, the wake-up, the completing poll and the
//! next tick's registration of each.

use std::process::ExitCode;
use std::time::Duration;

use tokio_wheel::Wheel;

// Only the runtime and the inner future are used here.

use support::{current_thread_runtime, park_with_pending, YieldOnce};

const KINDS: [&str; 8] = [
    "none",
    "tokio",
    "wheel",
    "free",
    "sleep-tokio",
    "sleep-wheel",
    "interval-tokio",
    "interval-wheel",
];
const USAGE: &str =
    "usage: instructions none|tokio|wheel|free|sleep-tokio|sleep-wheel|interval-tokio|interval-wheel N";

/// Tasks sleeping (or ticking) in a loop for the `sleep-` and `interval-`
/// kinds.
const SLEEPERS: u64 = 200;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, n) = match args.as_slice() {
        [kind, n] => match n.parse::<u64>() {
            Ok(n) if KINDS.contains(&kind.as_str()) => (kind.clone(), n),
            _ => {
                eprintln!("{USAGE}\n(got `{kind} {n}`)");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(timer) = kind.strip_prefix("sleep-") {
        sleep_loops(timer == "wheel", n);
        println!("completed {n} sleeps of kind `{kind}`");
        return ExitCode::SUCCESS;
    }
    if let Some(timer) = kind.strip_prefix("interval-") {
        interval_loops(timer == "wheel", n);
        println!("delivered {n} ticks of kind `{kind}`");
        return ExitCode::SUCCESS;
    }
    let rt = current_thread_runtime();
    rt.block_on(async {
        let wheel = Wheel::new();
        // An hour-long timer of each kind stays pending while measuring, and
        // the runtime parks once: tokio's driver has then planned its wake-up
        // (see `park_with_pending`) and the wheel's driver sleeps.
        let mut tokio_far = Box::pin(tokio::time::sleep(Duration::from_secs(3600)));
        park_with_pending(tokio_far.as_mut()).await;
        let mut wheel_far = wheel.sleep(Duration::from_secs(3600));
        let mut default_far = tokio_wheel::sleep(Duration::from_secs(3600));
        assert!(futures::poll!(&mut wheel_far).is_pending());
        assert!(futures::poll!(&mut default_far).is_pending());
        tokio::time::sleep(Duration::from_millis(1)).await;

        let timeout = Duration::from_secs(5);
        for _ in 0..n {
            match kind.as_str() {
                "none" => YieldOnce::default().await,
                "tokio" => {
                    let _ = tokio::time::timeout(timeout, YieldOnce::default()).await;
                }
                "wheel" => {
                    let _ = wheel.timeout(timeout, YieldOnce::default()).await;
                }
                _ => {
                    let _ = tokio_wheel::timeout(timeout, YieldOnce::default()).await;
                }
            }
        }
    });
    println!("ran {n} operations of kind `{kind}`");
    ExitCode::SUCCESS
}

/// A current-thread runtime whose clock starts paused.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// How many of `n` loops' rounds task `i` of `SLEEPERS` runs.
fn rounds_of(i: u64, n: u64) -> u64 {
    n / SLEEPERS + u64::from(i < n % SLEEPERS)
}

/// `SLEEPERS` tasks on a paused current-thread runtime, task `i` running
/// `body(rounds)` with its share of `n` rounds.
fn run_tasks<F, Fut>(n: u64, body: F)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    paused_runtime().block_on(async {
        let tasks: Vec<_> = (0..SLEEPERS)
            .map(|i| tokio::spawn(body(rounds_of(i, n))))
            .collect();
        for task in tasks {
            task.await.expect("a task panicked");
        }
    });
}

/// `SLEEPERS` tasks completing `n` sleeps of 50 ms between them, on paused
/// time.
fn sleep_loops(wheel: bool, n: u64) {
    let period = Duration::from_millis(50);
    run_tasks(n, move |rounds| async move {
        for _ in 0..rounds {
            if wheel {
                tokio_wheel::sleep(period).await;
            } else {
                tokio::time::sleep(period).await;
            }
        }
    });
}

/// `SLEEPERS` tasks awaiting `n` ticks of 50 ms intervals between them, on
/// paused time. Each interval's first tick completes at once; there are
/// `SLEEPERS` of those in a run of any `n`, so the difference of two runs
/// leaves them out.
fn interval_loops(wheel: bool, n: u64) {
    let period = Duration::from_millis(50);
    run_tasks(n, move |rounds| async move {
        if wheel {
            let mut ticks = tokio_wheel::interval(period);
            for _ in 0..rounds {
                ticks.tick().await;
            }
        } else {
            let mut ticks = tokio::time::interval(period);
            for _ in 0..rounds {
                ticks.tick().await;
            }
        }
    });
}
