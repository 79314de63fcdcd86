//! Tasks that sleep a fixed period in a loop on the timer under test, and
//! the window over which workloads 7 and 8 read the process's CPU time and
//! count the sleeps those tasks completed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_wheel::{Stats, Wheel};

use crate::proc::process_cpu;
use support::Rng;

/// The timer under test.
#[derive(Clone)]
pub(crate) enum Timer {
    Tokio,
    Wheel(Wheel),
}

impl Timer {
    /// Sleeps `duration`: `tokio::time::sleep` or `Wheel::sleep`.
    pub(crate) async fn sleep(&self, duration: Duration) {
        match self {
            Timer::Tokio => tokio::time::sleep(duration).await,
            Timer::Wheel(wheel) => wheel.sleep(duration).await,
        }
    }

    /// The wheel's counters (none for tokio).
    pub(crate) fn stats(&self) -> Option<Stats> {
        match self {
            Timer::Tokio => None,
            Timer::Wheel(wheel) => Some(wheel.stats()),
        }
    }

    /// Timers pending in the wheel (none for tokio, which does not say).
    pub(crate) fn pending(&self) -> Option<usize> {
        match self {
            Timer::Tokio => None,
            Timer::Wheel(wheel) => Some(wheel.pending()),
        }
    }
}

/// Tasks each sleeping `period` in a loop, until told to stop.
pub(crate) struct Sleepers {
    stop: Arc<AtomicBool>,
    /// Sleeps completed, over all the tasks.
    done: Arc<AtomicU64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Sleepers {
    /// Spawns `n` tasks on the current runtime. Each first sleeps a random
    /// part of `period` (so that their wake-ups are spread over the period,
    /// not bunched), then `period` again and again, a new sleep each time.
    pub(crate) fn spawn(n: usize, period: Duration, timer: &Timer, seed: u64) -> Sleepers {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let mut rng = Rng::new(seed);
        let tasks = (0..n)
            .map(|_| {
                let phase = Duration::from_nanos(rng.below(period.as_nanos() as u64));
                let (timer, stop, done) = (timer.clone(), stop.clone(), done.clone());
                tokio::spawn(async move {
                    timer.sleep(phase).await;
                    while !stop.load(Ordering::Relaxed) {
                        timer.sleep(period).await;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        Sleepers { stop, done, tasks }
    }

    /// Sleeps completed so far.
    pub(crate) fn completed(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Stops the tasks (each after the sleep it is in) and waits for them.
    pub(crate) async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("a sleeping task panicked");
        }
    }
}

/// What the process did during a window of wall time.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
    /// Sleeps the [`Sleepers`] completed.
    pub(crate) completed: u64,
    /// The wheel's driver wake-ups and ticks visited (zero for tokio).
    pub(crate) driver_wakeups: u64,
    pub(crate) ticks: u64,
}

impl Window {
    /// Blocks the calling thread, which must not be one of the runtime's,
    /// for `length` while the runtime runs on its own.
    pub(crate) fn measure(length: Duration, sleepers: &Sleepers, timer: &Timer) -> Window {
        let stats = || {
            timer
                .stats()
                .map_or((0, 0), |s| (s.driver_wakeups, s.ticks))
        };
        let before = (process_cpu(), sleepers.completed(), stats());
        let start = std::time::Instant::now();
        std::thread::sleep(length);
        let after = (process_cpu(), sleepers.completed(), stats());
        Window {
            wall: start.elapsed(),
            cpu: after.0.saturating_sub(before.0),
            completed: after.1 - before.1,
            driver_wakeups: after.2 .0 - before.2 .0,
            ticks: after.2 .1 - before.2 .1,
        }
    }

    /// CPU milliseconds per second of wall time.
    pub(crate) fn cpu_ms_per_s(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e3 / self.wall.as_secs_f64()
    }

    /// Sleeps completed per second of wall time.
    pub(crate) fn completed_per_s(&self) -> f64 {
        self.completed as f64 / self.wall.as_secs_f64()
    }

    /// Nanoseconds of CPU per completed sleep.
    pub(crate) fn cpu_ns_per_sleep(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.completed.max(1) as f64
    }

    /// Per second of wall time.
    pub(crate) fn per_s(&self, n: u64) -> f64 {
        n as f64 / self.wall.as_secs_f64()
    }
}
