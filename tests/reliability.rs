//! Never early, never lost, never hung: regression tests for defects found in
//! review, each named after the promise that broke.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::task::{Wake, Waker};
use std::time::Duration;

use common::{ms, multi_thread, poll_with, CountingWaker};
use futures::FutureExt;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_wheel::Wheel;

const YEAR: Duration = Duration::from_secs(365 * 86_400);

/// Panics when woken or dropped-by-wake: a hostile waker, or an executor bug.
struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("waker panicked on purpose");
    }
}

fn panicking_waker() -> Waker {
    Waker::from(Arc::new(PanickingWaker))
}

/// Registrations racing `shutdown()` used to link entries after shutdown had
/// scanned their shard: nothing ever woke them, and the sleep hung. Eight
/// threads keep registering sleeps while another thread shuts the wheel
/// down; every registered sleep must be woken (by the shutdown, or by Tokio's
/// timer it went over to), and then complete, never early.
#[test]
fn sleeps_registering_while_the_wheel_shuts_down_all_complete() {
    const THREADS: usize = 8;
    let rt = multi_thread(2);
    for trial in 0..20u64 {
        let wheel = Wheel::builder().tick(ms(1)).shards(4).build().unwrap();
        let start = Arc::new(Barrier::new(THREADS + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (wheel, start, handle) = (wheel.clone(), start.clone(), rt.handle().clone());
                std::thread::spawn(move || {
                    let _rt = handle.enter();
                    start.wait();
                    let mut registered = Vec::new();
                    let mut after = 0;
                    // Until well after the shutdown, in a tight loop.
                    while after < 200 && registered.len() < 20_000 {
                        after += usize::from(wheel.is_shutdown());
                        let t0 = Instant::now();
                        let mut sleep = wheel.sleep(ms(50));
                        let (counter, waker) = CountingWaker::new();
                        if poll_with(&mut sleep, &waker).is_pending() {
                            registered.push((sleep, counter, waker, t0));
                        }
                    }
                    registered
                })
            })
            .collect();
        start.wait();
        // Somewhere in the middle of the registrations.
        std::thread::sleep(Duration::from_micros(200 * (trial % 10)));
        wheel.shutdown();
        let sleeps: Vec<_> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        rt.block_on(async {
            // Every one is woken within 5 s: by the shutdown, or by the Tokio
            // timer it went over to (50 ms).
            let give_up = Instant::now() + Duration::from_secs(5);
            let never_woken = || sleeps.iter().filter(|s| s.1.count() == 0).count();
            while never_woken() > 0 && Instant::now() < give_up {
                tokio::time::sleep(ms(5)).await;
            }
            assert_eq!(
                never_woken(),
                0,
                "trial {trial}: sleeps registered across the shutdown were never woken"
            );
            for (mut sleep, _, _, t0) in sleeps {
                tokio::time::timeout(Duration::from_secs(5), &mut sleep)
                    .await
                    .expect("woken, but never completes");
                assert!(t0.elapsed() >= ms(50), "trial {trial}: early");
            }
        });
        assert_eq!(wheel.pending(), 0, "trial {trial}");
    }
}

/// A callback scheduled and forgotten (handle dropped), then the last `Wheel`
/// clone dropped: the callback used to be dropped unrun, silently, since only
/// handles kept the shard that held it alive. It must run at its deadline.
#[tokio::test(start_paused = true)]
async fn a_fire_and_forget_callback_runs_after_every_handle_is_gone() {
    let t0 = Instant::now();
    let wheel = Wheel::new();
    let (tx, rx) = oneshot::channel();
    drop(
        wheel
            .schedule(ms(50), move || {
                let _ = tx.send(Instant::now());
            })
            .unwrap(),
    );
    let (tx2, rx2) = oneshot::channel();
    drop(wheel.schedule_future(ms(80), async move {
        let _ = tx2.send(Instant::now());
    }));
    drop(wheel);
    let ran = rx.await.expect("the callback was dropped unrun");
    assert!(ran >= t0 + ms(50), "early: {:?}", ran - t0);
    let ran = rx2.await.expect("the future was dropped unrun");
    assert!(ran >= t0 + ms(80), "early: {:?}", ran - t0);
}

/// The same, with the wheel's sleeps gone too and the driver asleep for a
/// long time before the callback: nothing but the callback is pending.
#[tokio::test(start_paused = true)]
async fn a_forgotten_callback_survives_a_long_driver_sleep() {
    let wheel = Wheel::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    wheel
        .schedule(Duration::from_secs(3600), move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
    // Let the driver start and go to sleep, then forget the wheel.
    tokio::time::sleep(ms(20)).await;
    drop(wheel);
    tokio::time::sleep(Duration::from_secs(3601)).await;
    common::yield_until("the callback ran", || ran.load(SeqCst) == 1).await;
}

/// A waker that panics when the driver wakes it used to kill the driver task;
/// its guard woke the pending sleeps (which restart a driver) but the pending
/// callbacks were left with no driver at all.
#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_strand_callbacks() {
    let t0 = Instant::now();
    let wheel = Wheel::new();
    let mut bad = wheel.sleep(ms(10));
    assert!(poll_with(&mut bad, &panicking_waker()).is_pending());
    let (tx, rx) = oneshot::channel();
    wheel
        .schedule(ms(200), move || {
            let _ = tx.send(Instant::now());
        })
        .unwrap();
    let ran = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("the callback was stranded")
        .unwrap();
    assert!(ran >= t0 + ms(200), "early");
    // The driver still runs the other timers.
    let t1 = Instant::now();
    wheel.sleep(ms(30)).await;
    assert!(t1.elapsed() >= ms(30));
    assert!(bad.is_elapsed());
}

/// `shutdown()` used to lose the callbacks it was handing back when a pending
/// sleep's waker panicked as it was woken: they were already marked
/// cancelled, and a second `shutdown()` returns nothing.
#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_lose_the_callbacks_of_a_shutdown() {
    let wheel = Wheel::new();
    let mut bad = wheel.sleep(Duration::from_secs(1));
    assert!(poll_with(&mut bad, &panicking_waker()).is_pending());
    let (counter, good_waker) = CountingWaker::new();
    let mut good = wheel.sleep(Duration::from_secs(1));
    assert!(poll_with(&mut good, &good_waker).is_pending());
    let handle = wheel.schedule(Duration::from_secs(2), || ()).unwrap();
    let tasks = catch_unwind(AssertUnwindSafe(|| wheel.shutdown()))
        .expect("shutdown passed a waker's panic on");
    assert_eq!(tasks.len(), 1, "the callback is handed back");
    assert!(handle.is_cancelled());
    assert_eq!(counter.count(), 1, "the other sleep was still woken");
    // Both sleeps go over to Tokio's timer and complete at their deadline.
    let t0 = Instant::now();
    (&mut good).await;
    assert!(t0.elapsed() >= Duration::from_secs(1) - ms(1));
    drop(bad);
}

/// Deadlines are nanoseconds from the wheel's origin in an `i64`; past about
/// 292 years of uptime "now" and "now + 50 ms" used to saturate to the same
/// value, and every new sleep completed at once.
#[tokio::test(start_paused = true)]
async fn sleeps_are_never_early_after_three_centuries_of_uptime() {
    let wheel = Wheel::new();
    let origin = Instant::now();
    // A sleep made now whose deadline lies beyond the wheel's range.
    let mut beyond = wheel.sleep_until(origin + YEAR * 300);
    assert!(poll_with(&mut beyond, Waker::noop()).is_pending());
    let mut max = wheel.sleep(Duration::MAX);
    assert!(poll_with(&mut max, Waker::noop()).is_pending());
    for _ in 0..3 {
        tokio::time::advance(YEAR * 99).await;
    }
    assert!(
        poll_with(&mut beyond, Waker::noop()).is_pending(),
        "297 years: early"
    );
    // `Duration::MAX` made at the origin (30 years) is long due.
    assert!(poll_with(&mut max, Waker::noop()).is_ready());
    tokio::time::advance(YEAR * 3).await;
    assert!(poll_with(&mut beyond, Waker::noop()).is_ready());

    // Past 292 years from the origin, the clock itself saturates.
    for (what, d) in [("50 ms", ms(50)), ("1 s", Duration::from_secs(1))] {
        let t0 = Instant::now();
        wheel.sleep(d).await;
        assert!(t0.elapsed() >= d, "{what}: early after 300 years");
        let t0 = Instant::now();
        wheel.sleep_until(t0 + d).await;
        assert!(t0.elapsed() >= d, "{what} (until): early after 300 years");
        let t0 = Instant::now();
        let res = wheel.timeout(d, std::future::pending::<()>()).await;
        assert!(res.is_err());
        assert!(t0.elapsed() >= d, "{what} (timeout): early after 300 years");
    }
    let mut max = wheel.sleep(Duration::MAX);
    assert!(poll_with(&mut max, Waker::noop()).is_pending());
    tokio::time::advance(YEAR).await;
    assert!(poll_with(&mut max, Waker::noop()).is_pending(), "saturated");
    assert!(!max.is_elapsed());

    // A reset moves a sleep off the wheel's range and back.
    let mut s = wheel.sleep(ms(10));
    assert!(poll_with(&mut s, Waker::noop()).is_pending());
    let t0 = Instant::now();
    s.reset(t0 + ms(40));
    (&mut s).await;
    assert!(t0.elapsed() >= ms(40));

    // Callbacks, too.
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    wheel
        .schedule(ms(50), move || {
            let _ = tx.send(Instant::now());
        })
        .unwrap();
    let ran = rx.await.unwrap();
    assert!(ran >= t0 + ms(50), "callback early after 300 years");
}

/// Before the wheel's clock saturates: a registered sleep reset to a deadline
/// beyond the wheel's range goes over to Tokio's timer, waking the task that
/// registered it, and a reset back brings it onto the wheel.
#[tokio::test(start_paused = true)]
async fn a_reset_beyond_the_wheels_range_is_exact() {
    let wheel = Wheel::new();
    let t0 = Instant::now();
    let (counter, waker) = CountingWaker::new();
    let mut s = wheel.sleep(ms(10));
    assert!(poll_with(&mut s, &waker).is_pending());
    assert_eq!(wheel.pending(), 1);
    s.reset(t0 + YEAR * 400);
    assert_eq!(wheel.pending(), 0, "off the wheel");
    assert_eq!(counter.count(), 1, "the registered task is told");
    assert_eq!(s.deadline(), t0 + YEAR * 400, "kept exactly");
    tokio::time::advance(YEAR).await;
    assert!((&mut s).now_or_never().is_none());
    s.reset(t0 + YEAR * 2);
    assert_eq!(s.deadline(), t0 + YEAR * 2);
    tokio::time::advance(YEAR - ms(1)).await;
    assert!((&mut s).now_or_never().is_none(), "early");
    tokio::time::advance(ms(20)).await;
    assert!((&mut s).now_or_never().is_some());
}

/// A reset that moves a registered sleep earlier on a wheel being shut down
/// used to drop the registered waker unwoken: the task waiting on the sleep
/// hung. It is woken and continues on Tokio's timer.
#[tokio::test(start_paused = true)]
async fn a_reset_after_shutdown_wakes_the_waiting_task() {
    let wheel = Wheel::new();
    let t0 = Instant::now();
    let (counter, waker) = CountingWaker::new();
    let mut s = wheel.sleep(Duration::from_secs(10));
    assert!(poll_with(&mut s, &waker).is_pending());
    wheel.shutdown();
    let woken = counter.count();
    assert_eq!(woken, 1, "shutdown wakes pending sleeps");
    s.reset(t0 + ms(100));
    assert_eq!(
        counter.count(),
        2,
        "the reset's unregistration wakes it too"
    );
    (&mut s).await;
    assert!(t0.elapsed() >= ms(100));
}

// Callbacks and wake-ups fired by the driver timer's waker (inside Tokio's
// park) and left to the driver task must not be lost when the wheel shuts
// down or the runtime stops before that task runs again.

/// A sleep woken by the timer's waker shuts the wheel down before the driver
/// task runs: the callback that fired in the same tick still runs.
#[tokio::test(start_paused = true)]
async fn a_callback_fired_by_the_timer_waker_runs_though_a_woken_task_shuts_down() {
    use std::sync::atomic::AtomicBool;
    let wheel = Wheel::builder().tick(ms(10)).build().unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let handle = wheel
        .schedule(ms(50), move || r.store(true, SeqCst))
        .unwrap();
    let w = wheel.clone();
    let handed_back = tokio::spawn(async move {
        w.sleep(ms(50)).await;
        w.shutdown()
    })
    .await
    .unwrap();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(ms(1000)).await;
    assert!(
        ran.load(SeqCst) || handed_back.len() == 1,
        "callback lost: ran = {}, handed back = {}, expired = {}",
        ran.load(SeqCst),
        handed_back.len(),
        handle.is_expired()
    );
}

/// With one delivery per turn, the timer's waker wakes the first sleep and
/// leaves the second to the driver task; the first shuts the wheel down. The
/// second is still woken.
#[tokio::test(start_paused = true)]
async fn a_wake_up_left_by_the_timer_waker_is_delivered_though_the_wheel_shuts_down() {
    let wheel = Wheel::builder()
        .tick(ms(10))
        .max_wakeups_per_tick(1)
        .build()
        .unwrap();
    let spawn = |w: Wheel| {
        tokio::spawn(async move {
            w.sleep(ms(50)).await;
            w.shutdown();
        })
    };
    let (a, b) = (spawn(wheel.clone()), spawn(wheel.clone()));
    tokio::time::timeout(Duration::from_secs(3600), async {
        a.await.unwrap();
        b.await.unwrap();
    })
    .await
    .expect("a sleep whose entry fired was never woken: its task hangs");
}

/// The runtime stops right after the park in which a callback fired, before
/// the driver task could spawn it: `shutdown` hands it back.
#[test]
fn a_callback_fired_as_the_runtime_stops_is_handed_back_by_shutdown() {
    use std::sync::atomic::AtomicBool;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let (wheel, handle) = rt.block_on(async {
        let wheel = Wheel::builder().tick(ms(10)).build().unwrap();
        let r = ran.clone();
        let handle = wheel
            .schedule(ms(50), move || r.store(true, SeqCst))
            .unwrap();
        wheel.sleep(ms(50)).await;
        (wheel, handle)
    });
    drop(rt);
    let handed_back = wheel.shutdown();
    assert!(!ran.load(SeqCst));
    assert_eq!(handed_back.len(), 1, "the callback was lost");
    assert!(handle.is_cancelled(), "handed back is cancelled");
}
