//! Callbacks spawned by the driver and dropped unrun by a runtime that stops
//! are not lost: the next driver runs them, or `shutdown` hands them back.
//! Every callback is accounted for exactly once, and `TimerHandle::is_expired`
//! is true only for one that ran.

mod common;

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::{drop_runtime_within, ms, multi_thread};
use tokio::time::Instant;
use tokio_wheel::{TimerHandle, Wheel};

/// Callbacks due at one tick.
const N: usize = 20_000;
/// How long after the first callback ran the runtime is dropped.
const DELAYS_MS: [u64; 7] = [0, 1, 3, 5, 8, 13, 20];

/// How many times each callback ran, and in all.
struct Runs {
    each: Vec<AtomicU32>,
    total: AtomicUsize,
}

impl Runs {
    fn ran(&self, i: usize) -> u32 {
        self.each[i].load(SeqCst)
    }
}

/// `N` callbacks due at one tick of an unbound 1 ms wheel, whose driver runs
/// on a two-worker runtime, dropped `delay` after the first of them ran (so
/// after their tick fired, while the rest are spawned or waiting to run).
fn fire_and_drop_the_runtime(delay: Duration) -> (Wheel, Vec<TimerHandle>, Arc<Runs>) {
    let (rt, wheel, handles, runs) = fire(delay);
    drop_runtime_within(10, rt);
    (wheel, handles, runs)
}

/// As [`fire_and_drop_the_runtime`], but returns the runtime still running,
/// `delay` after the first callback ran.
fn fire(delay: Duration) -> (tokio::runtime::Runtime, Wheel, Vec<TimerHandle>, Arc<Runs>) {
    let rt = multi_thread(2);
    let wheel = Wheel::builder().tick(ms(1)).build().unwrap();
    let runs = Arc::new(Runs {
        each: (0..N).map(|_| AtomicU32::new(0)).collect(),
        total: AtomicUsize::new(0),
    });
    let due = Instant::now() + ms(30);
    let handles = rt.block_on(async {
        (0..N)
            .map(|i| {
                let runs = runs.clone();
                wheel
                    .schedule_at(due, move || {
                        runs.each[i].fetch_add(1, SeqCst);
                        runs.total.fetch_add(1, SeqCst);
                    })
                    .unwrap()
            })
            .collect::<Vec<_>>()
    });
    let give_up = Instant::now() + Duration::from_secs(10);
    while runs.total.load(SeqCst) == 0 {
        assert!(Instant::now() < give_up, "no callback ran within 10 s");
        std::thread::sleep(Duration::from_micros(100));
    }
    assert!(Instant::now() >= due, "a callback ran before its deadline");
    std::thread::sleep(delay);
    (rt, wheel, handles, runs)
}

#[test]
fn callbacks_dropped_with_their_runtime_run_on_the_next_driver() {
    for delay in DELAYS_MS.map(ms) {
        let (wheel, handles, runs) = fire_and_drop_the_runtime(delay);
        let rt = multi_thread(2);
        let all_ran = rt.block_on(async {
            // Starts a driver here: it runs what the old runtime dropped.
            wheel.sleep(ms(1)).await;
            tokio::time::timeout(Duration::from_secs(10), async {
                while runs.total.load(SeqCst) < N {
                    tokio::time::sleep(ms(1)).await;
                }
            })
            .await
            .is_ok()
        });
        assert!(
            all_ran,
            "dropped {delay:?} after the first ran: {} of {N} callbacks ran on the next driver",
            runs.total.load(SeqCst)
        );
        let handed_back = wheel.shutdown();
        assert!(
            handed_back.is_empty(),
            "{delay:?}: all ran, none to hand back"
        );
        for (i, handle) in handles.iter().enumerate() {
            assert_eq!(
                runs.ran(i),
                1,
                "{delay:?}: callback {i} ran {} times",
                runs.ran(i)
            );
            assert!(
                handle.is_expired(),
                "{delay:?}: callback {i} ran: {handle:?}"
            );
        }
        drop_runtime_within(10, rt);
    }
}

/// Every callback ran once or was handed back, never both: `is_expired`
/// exactly for those that ran, `is_cancelled` for the rest. Then what came
/// back runs, and every callback has run exactly once.
fn account_for_every_callback(
    what: &str,
    handles: &[TimerHandle],
    runs: &Runs,
    handed_back: Vec<tokio_wheel::TimerTask>,
) {
    let ran = runs.total.load(SeqCst);
    assert_eq!(
        ran + handed_back.len(),
        N,
        "{what}: {ran} ran, {} handed back, {} lost",
        handed_back.len(),
        N.saturating_sub(ran + handed_back.len())
    );
    for (i, handle) in handles.iter().enumerate() {
        let ran = runs.ran(i);
        assert!(ran <= 1, "{what}: callback {i} ran {ran} times");
        assert_eq!(
            handle.is_expired(),
            ran == 1,
            "{what}: callback {i} ran {ran} times: {handle:?}"
        );
        assert_eq!(handle.is_cancelled(), ran == 0, "{what}: {handle:?}");
    }
    let rt = multi_thread(2);
    rt.block_on(async {
        for task in handed_back {
            task.await;
        }
    });
    for i in 0..N {
        assert_eq!(runs.ran(i), 1, "{what}: callback {i}");
    }
    drop_runtime_within(10, rt);
}

#[test]
fn callbacks_dropped_with_their_runtime_are_handed_back_by_shutdown() {
    for delay in DELAYS_MS.map(ms) {
        let (wheel, handles, runs) = fire_and_drop_the_runtime(delay);
        let handed_back = wheel.shutdown();
        let what = format!("dropped {delay:?} after the first ran");
        account_for_every_callback(&what, &handles, &runs, handed_back);
    }
}

/// A graceful stop: `shutdown` first, then the runtime is dropped, with
/// callbacks of the tick still spawned and not run. Those are stranded after
/// the first call handed the list back; a second call hands them back.
#[test]
fn callbacks_dropped_after_shutdown_are_handed_back_by_a_later_call() {
    for delay in DELAYS_MS.map(ms) {
        let (rt, wheel, handles, runs) = fire(delay);
        let mut handed_back = wheel.shutdown();
        drop_runtime_within(10, rt);
        handed_back.extend(wheel.shutdown());
        assert!(wheel.shutdown().is_empty(), "{delay:?}: nothing left");
        let what = format!("shut down {delay:?} after the first ran, then dropped");
        account_for_every_callback(&what, &handles, &runs, handed_back);
    }
}
