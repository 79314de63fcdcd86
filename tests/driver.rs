//! The driver: idle stop and restart, catch-up in order, runtime shutdown,
//! and many tasks on a multi-thread runtime.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::poll;
use tokio::time::Instant;
use tokio_wheel::{Sleep, Wheel};

use common::{
    alive_tasks, assert_non_decreasing, assert_wheel_fires_on, complete_on, drop_runtime_within,
    first_tick_at_or_after, ms, multi_thread, runtime_flavours, tick_wheel, wait_until_pending,
    yield_until, Rng,
};

#[tokio::test(start_paused = true)]
async fn driver_stops_when_idle_and_restarts() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    assert_eq!(alive_tasks(), 0);

    let mut s = wheel.sleep(ms(30));
    assert_eq!(alive_tasks(), 0, "a driver before any registration");
    assert!(poll!(&mut s).is_pending());
    assert_eq!(alive_tasks(), 1, "no driver task while a timer is pending");
    assert_eq!(wheel.stats().driver_starts, 1);
    (&mut s).await;
    assert_eq!(Instant::now(), t0 + ms(30));
    yield_until("the driver exits after the last timer", || {
        alive_tasks() == 0
    })
    .await;
    assert_eq!(wheel.stats().driver_starts, 1);

    // Idle for a while: the driver does not come back on its own.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(alive_tasks(), 0);
    let idle = wheel.stats();

    let t1 = Instant::now();
    wheel.sleep(ms(20)).await;
    assert_eq!(Instant::now(), t1 + ms(20));
    let stats = wheel.stats();
    assert_eq!(stats.driver_starts, 2, "{stats:?}");
    assert_eq!(stats.fired, 2);
    assert!(
        stats.driver_wakeups - idle.driver_wakeups <= 3,
        "wake-ups while idle or between ticks: {stats:?}"
    );
    yield_until("the restarted driver exits too", || alive_tasks() == 0).await;

    // A burst of timers on different ticks: one driver serves them all.
    let tasks: Vec<_> = (1..=20)
        .map(|i| {
            let s = wheel.sleep(ms(i * 7));
            tokio::spawn(s)
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    yield_until("the driver exits after the burst", || alive_tasks() == 0).await;
    assert_eq!(wheel.stats().driver_starts, 3);
}

#[tokio::test(start_paused = true)]
async fn no_wakeups_for_empty_ticks() {
    let wheel = tick_wheel(10, 512);
    let t0 = Instant::now();
    wheel.sleep(Duration::from_secs(10)).await;
    assert_eq!(Instant::now(), t0 + Duration::from_secs(10));
    let stats = wheel.stats();
    assert!(
        stats.driver_wakeups <= 3,
        "{} driver wake-ups for one 10 s timer on a 10 ms tick",
        stats.driver_wakeups
    );

    // Three timers far apart: a few wake-ups each, not one per tick.
    let before = wheel.stats().driver_wakeups;
    let tasks: Vec<_> = [1u64, 5, 10]
        .iter()
        .map(|&s| tokio::spawn(wheel.sleep(Duration::from_secs(s))))
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let wakeups = wheel.stats().driver_wakeups - before;
    assert!(wakeups <= 6, "{wakeups} wake-ups for three timers");
}

#[tokio::test(start_paused = true)]
async fn an_earlier_timer_wakes_a_driver_parked_for_a_later_one() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    let long = tokio::spawn(wheel.sleep(Duration::from_secs(10)));
    yield_until("the long timer registers", || wheel.pending() == 1).await;
    wheel.sleep(ms(25)).await;
    assert_eq!(Instant::now(), t0 + ms(30));
    // And one registered from another task while the driver is parked.
    let w = wheel.clone();
    let mid = tokio::spawn(async move {
        w.sleep(ms(45)).await;
        Instant::now()
    });
    assert_eq!(mid.await.unwrap(), t0 + ms(80));
    assert!(!long.is_finished());
    long.abort();
}

/// Timers created on several threads (so in several shards) and awaited by
/// tasks of a current-thread runtime: after one big jump of the clock, the
/// driver fires every missed tick, and the tasks complete in deadline order.
#[tokio::test(start_paused = true)]
async fn catch_up_after_one_big_advance_fires_in_deadline_order() {
    const N: usize = 400;
    let t0 = Instant::now();
    let wheel = Wheel::builder()
        .tick(ms(10))
        .slots(64)
        .shards(8)
        .build()
        .unwrap();
    let mut rng = Rng::new(42);
    let deadlines: Vec<Instant> = (0..N)
        .map(|_| t0 + Duration::from_micros(rng.range(1_000, 3_000_000)))
        .collect();
    // Made on 8 threads: each thread registers in its own shard.
    let mut sleeps: Vec<Sleep> = std::thread::scope(|scope| {
        let handles: Vec<_> = deadlines
            .chunks(N / 8)
            .map(|chunk| {
                let wheel = wheel.clone();
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&d| wheel.sleep_until(d))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    rng.shuffle(&mut sleeps);

    let order = Arc::new(Mutex::new(Vec::with_capacity(N)));
    let tasks: Vec<_> = sleeps
        .into_iter()
        .map(|s| {
            let order = order.clone();
            tokio::spawn(async move {
                let deadline = s.deadline();
                s.await;
                let now = Instant::now();
                order.lock().unwrap().push((deadline, now));
            })
        })
        .collect();
    yield_until("every timer registers", || wheel.pending() == N).await;
    assert!(order.lock().unwrap().is_empty());

    tokio::time::advance(Duration::from_secs(5)).await;
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().unwrap();
    assert_eq!(order.len(), N);
    for (deadline, at) in order.iter() {
        assert!(at >= deadline, "fired {:?} early", *deadline - *at);
    }
    let ticks: Vec<Instant> = order
        .iter()
        .map(|(d, _)| first_tick_at_or_after(t0, ms(10), *d))
        .collect();
    assert_non_decreasing(&ticks, "completion order after catch-up");
    let stats = wheel.stats();
    assert_eq!((stats.pending, stats.fired), (0, N as u64));
}

/// Real time: the runtime's only thread is blocked while timers come due.
/// Once it runs again every timer fires, in deadline order, none early.
#[tokio::test]
async fn catch_up_after_the_runtime_thread_was_blocked() {
    let wheel = tick_wheel(10, 8);
    let base = Instant::now();
    // 50..=150 ms, one tick apart so each lands on its own tick, three each.
    let mut deadlines: Vec<Instant> = (0..=10u32)
        .flat_map(|k| [base + ms(50) + ms(10) * k; 3])
        .collect();
    let mut rng = Rng::new(3);
    rng.shuffle(&mut deadlines);

    let order = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = deadlines
        .iter()
        .map(|&d| {
            let s = wheel.sleep_until(d);
            let order = order.clone();
            tokio::spawn(async move {
                s.await;
                let now = Instant::now();
                order.lock().unwrap().push((d, now));
            })
        })
        .collect();
    yield_until("every timer registers", || {
        wheel.pending() == deadlines.len()
    })
    .await;
    assert!(
        base.elapsed() < ms(50),
        "too slow to set up before the first deadline"
    );

    std::thread::sleep(ms(200));

    let all = async {
        for t in tasks {
            t.await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("timers did not fire after the stall");
    let order = order.lock().unwrap();
    assert_eq!(order.len(), deadlines.len());
    for (d, at) in order.iter() {
        assert!(at >= d, "fired {:?} early", *d - *at);
    }
    let fired: Vec<Instant> = order.iter().map(|(d, _)| *d).collect();
    assert_non_decreasing(&fired, "completion order after the stall");
    assert_eq!(wheel.pending(), 0);
}

#[test]
fn dropping_a_runtime_with_pending_timers_releases_them() {
    for (name, make) in runtime_flavours(2) {
        const N: usize = 200;
        let wheel = Wheel::new();
        let rt = make();
        rt.block_on(async {
            for i in 0..N {
                let w = wheel.clone();
                tokio::spawn(async move {
                    if i % 2 == 0 {
                        w.sleep(Duration::from_secs(3600)).await;
                    } else {
                        let never = std::future::pending::<()>();
                        let _ = w.timeout(Duration::from_secs(3600), never).await;
                    }
                });
            }
            wait_until_pending(&wheel, N, name).await;
        });
        assert_eq!(wheel.pending(), N, "{name}");
        drop_runtime_within(10, rt);
        assert_eq!(wheel.pending(), 0, "{name}: timers outlived their runtime");
        let stats = wheel.stats();
        assert_eq!(stats.cancelled, N as u64, "{name}: {stats:?}");
        assert_eq!(stats.driver_starts, 1, "{name}: {stats:?}");

        // The wheel works on the next runtime: its driver starts there.
        let rt = make();
        assert_wheel_fires_on(&rt, &wheel, name);
        drop_runtime_within(10, rt);
        let stats = wheel.stats();
        assert_eq!(stats.driver_starts, 2, "{name}: {stats:?}");
        assert_eq!((stats.fired, stats.pending), (1, 0), "{name}: {stats:?}");
    }
}

/// A timer registered on a runtime that is then dropped (taking its driver
/// with it) still completes when polled on a new runtime.
#[test]
fn a_sleep_outlives_its_runtime_and_completes_on_the_next() {
    for (name, make) in runtime_flavours(2) {
        let wheel = tick_wheel(10, 512);
        // Due before the second runtime polls it, and after.
        for (dur, gap) in [(ms(60), ms(0)), (ms(30), ms(80))] {
            let rt = make();
            let mut s = wheel.sleep(dur);
            rt.block_on(async { assert!(poll!(&mut s).is_pending()) });
            assert_eq!(wheel.pending(), 1);
            let starts = wheel.stats().driver_starts;
            drop_runtime_within(10, rt);
            std::thread::sleep(gap);

            let rt = make();
            let deadline = s.deadline();
            let done = complete_on(&rt, &format!("{name}: on the new runtime"), &mut s);
            assert!(done >= deadline, "{name}: early by {:?}", deadline - done);
            assert!(s.is_elapsed());
            assert_eq!(wheel.pending(), 0);
            let stats = wheel.stats();
            assert_eq!(stats.driver_starts, starts + 1, "{name}: {stats:?}");
            drop_runtime_within(10, rt);
        }
    }
}

/// Two worker threads register short timers back to back on a 1 ms wheel, so
/// the driver keeps stopping and restarting while the other thread
/// registers: no timer may be lost in the hand-over, none may fire early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_stop_start_races_lose_no_timer() {
    let wheel = tick_wheel(1, 8);
    let tasks: Vec<_> = (0..2u64)
        .map(|t| {
            let w = wheel.clone();
            tokio::spawn(async move {
                let mut rng = Rng::new(t + 1);
                for i in 0..400 {
                    let s = w.sleep(Duration::from_micros(rng.range(0, 2500)));
                    let deadline = s.deadline();
                    tokio::time::timeout(Duration::from_secs(5), s)
                        .await
                        .unwrap_or_else(|_| panic!("task {t}: timer {i} was never fired"));
                    let now = Instant::now();
                    assert!(now >= deadline, "early by {:?}", deadline - now);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let stats = wheel.stats();
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(stats.registered, stats.fired, "{stats:?}");
    assert!(
        stats.driver_starts > 1,
        "the driver never stopped: {stats:?}"
    );
}

/// Many timers moved earlier or later from another task while a waiter is
/// parked on them, on two worker threads: each completes, never before its
/// new deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_resets_from_other_tasks() {
    const N: usize = 300;
    let wheel = Wheel::builder().tick(ms(1)).build().unwrap();
    let tasks: Vec<_> = (0..N as u64)
        .map(|t| {
            let w = wheel.clone();
            tokio::spawn(async move {
                let mut rng = Rng::new(t + 100);
                let s = Arc::new(Mutex::new(w.sleep(ms(rng.range(50, 100)))));
                let s2 = s.clone();
                let waiter = tokio::spawn(async move {
                    futures::future::poll_fn(|cx| {
                        futures::FutureExt::poll_unpin(&mut *s2.lock().unwrap(), cx)
                    })
                    .await;
                    Instant::now()
                });
                tokio::time::sleep(Duration::from_micros(rng.range(0, 3000))).await;
                // Earlier or later than the first deadline.
                let deadline = Instant::now() + Duration::from_micros(rng.range(0, 150_000));
                let done_before_reset = {
                    let mut s = s.lock().unwrap();
                    let elapsed = s.is_elapsed();
                    s.reset(deadline);
                    elapsed
                };
                let done = tokio::time::timeout(Duration::from_secs(5), waiter)
                    .await
                    .expect("a reset timer never fired")
                    .unwrap();
                if !done_before_reset {
                    assert!(done >= deadline, "early by {:?}", deadline - done);
                }
                done_before_reset
            })
        })
        .collect();
    let mut done_before_reset = 0;
    for t in tasks {
        done_before_reset += usize::from(t.await.unwrap());
    }
    assert!(
        done_before_reset < N / 10,
        "{done_before_reset} of {N} fired before their reset: the test did not test resets"
    );
    assert_eq!(wheel.pending(), 0);
}

/// 20 000 tasks on two worker threads, each sleeping 10..200 ms on one wheel:
/// none wakes before its deadline, and all are done in a few seconds.
#[test]
fn twenty_thousand_tasks_on_two_workers() {
    const N: usize = 20_000;
    let rt = multi_thread(2);
    rt.block_on(async {
        let wheel = Wheel::new();
        let mut rng = Rng::new(0x5EED);
        let start = Instant::now();
        let mut tasks = Vec::with_capacity(N);
        for i in 0..N {
            let d = ms(rng.range(10, 200));
            let w = wheel.clone();
            // Half made on this thread, half on the workers: several shards.
            let made_here = (i % 2 == 0).then(|| w.sleep(d));
            tasks.push(tokio::spawn(async move {
                let s = made_here.unwrap_or_else(|| w.sleep(d));
                let deadline = s.deadline();
                if i % 3 == 0 {
                    // The timeout's own timer is registered and cancelled.
                    let res = w.timeout(Duration::from_secs(30), s).await;
                    assert!(res.is_ok());
                } else {
                    s.await;
                }
                (deadline, Instant::now())
            }));
        }
        let mut latest = Duration::ZERO;
        for t in tasks {
            let (deadline, woke) = t.await.unwrap();
            assert!(woke >= deadline, "woke {:?} early", deadline - woke);
            latest = latest.max(woke - deadline);
        }
        let total = start.elapsed();
        assert!(total < Duration::from_secs(10), "took {total:?}");
        assert!(
            latest < Duration::from_secs(2),
            "a timer fired {latest:?} late"
        );

        let stats = wheel.stats();
        assert_eq!(wheel.pending(), 0, "{stats:?}");
        assert_eq!(stats.pending, 0);
        assert_eq!(stats.registered, stats.fired + stats.cancelled, "{stats:?}");
        assert!(stats.fired <= N as u64, "{stats:?}");
        assert!(
            stats.fired >= N as u64 / 4,
            "most sleeps should register: {stats:?}"
        );
        eprintln!("20k tasks: {total:?} in all, at most {latest:?} late, {stats:?}");
    });
}

/// A revolution's timers move into the wheel's lowest level during the
/// revolution before it, so that its first ticks wait for no cascade. A
/// registration for a timer two revolutions or more away brings the driver
/// back by that earlier revolution, even when it planned to wake later (for
/// a timer further out): with 64 slots of 10 ms, timers due at 1.3 s (the
/// third revolution) are moved down once the wheel passes 0.64 s, not as it
/// reaches 1.28 s.
#[tokio::test(start_paused = true)]
async fn registrations_bring_the_driver_back_a_revolution_ahead() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let far = tokio::spawn(wheel.sleep(ms(2000)));
    yield_until("the driver plans for the far timer", || {
        wheel.pending() == 1
    })
    .await;
    let near: Vec<_> = (0..100u64)
        .map(|i| tokio::spawn(wheel.sleep(ms(1300 + i % 50))))
        .collect();
    yield_until("all registered", || wheel.pending() == 101).await;
    assert_eq!(wheel.stats().cascades, 0);
    tokio::time::advance(ms(700)).await;
    yield_until("moved down by 0.7 s", || wheel.stats().cascades >= 100).await;
    assert_eq!(wheel.stats().fired, 0, "nothing is due yet");
    for task in near {
        task.await.unwrap();
    }
    assert!(Instant::now() >= t0 + ms(1349));
    far.await.unwrap();
    assert_eq!(Instant::now(), t0 + ms(2000));
}
