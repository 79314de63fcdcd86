//! Runs one kind of registered-then-cancelled timeout N times in one task,
//! for instruction counts under callgrind (workload 1 of `compare`): the
//! difference between a run of N and a run of 2N, divided by N, is the cost
//! of one operation, free of start-up and set-up. Callgrind counts
//! instructions, not time, so the figure is the same on a busy machine.
//!
//! ```sh
//! cargo build --release --example instructions
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

use std::process::ExitCode;
use std::time::Duration;

use tokio_wheel::Wheel;

// Only the runtime and the inner future are used here.
#[allow(dead_code)]
#[path = "../benches/support.rs"]
mod support;

use support::{current_thread_runtime, park_with_pending, YieldOnce};

const USAGE: &str = "usage: instructions none|tokio|wheel|free N";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, n) = match args.as_slice() {
        [kind, n] => match n.parse::<u64>() {
            Ok(n) if ["none", "tokio", "wheel", "free"].contains(&kind.as_str()) => {
                (kind.clone(), n)
            }
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
