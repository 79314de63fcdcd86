//! `Wheel::shutdown`: the callbacks handed back, refusals afterwards, sleeps,
//! timeouts and intervals going over to `tokio::time`, and the driver
//! stopping.

mod common;

use std::future::Future;
use std::time::Duration;

use futures::poll;
use tokio::time::Instant;
use tokio_wheel::error::Rejected;
use tokio_wheel::{TimerHandle, Wheel};

use common::{alive_tasks, ms, tick_wheel, yield_until, Log};

/// Awaits `fut`, failing the test instead of hanging (paused time: the 1 h
/// bound is reached at once if nothing else can happen).
async fn within_an_hour<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(3600), fut)
        .await
        .unwrap_or_else(|_| panic!("{what} hangs after shutdown"))
}

fn assert_shut_down(err: Rejected) -> Rejected {
    assert!(err.is_shutdown(), "{err:?}");
    assert_eq!(err.max_pending(), None);
    assert!(err.to_string().contains("shut down"), "{err}");
    err
}

#[tokio::test(start_paused = true)]
async fn shutdown_hands_back_exactly_the_unrun_callbacks_in_deadline_order() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 16);
    let log = Log::new();
    let sched = |delay: u64, name: &'static str| -> TimerHandle {
        let l = log.clone();
        wheel.schedule(ms(delay), move || l.push(name)).unwrap()
    };
    let c = sched(300, "c");
    let a = sched(100, "a");
    let early = sched(50, "early");
    let b = sched(200, "b");
    let gone = sched(400, "cancelled");
    let l = log.clone();
    let d = wheel
        .schedule_future(ms(250), async move { l.push("d") })
        .unwrap();
    // Beyond one revolution of the 160 ms ring.
    let e = sched(5000, "e");
    assert!(gone.cancel());
    tokio::time::sleep(ms(60)).await;
    assert_eq!(log.snapshot(), ["early"]);
    assert_eq!(wheel.pending(), 5);

    let tasks = wheel.shutdown();
    let deadlines: Vec<Duration> = tasks.iter().map(|t| t.deadline() - t0).collect();
    assert_eq!(deadlines, [ms(100), ms(200), ms(250), ms(300), ms(5000)]);
    assert_eq!(wheel.pending(), 0);
    for h in [&a, &b, &c, &d, &e] {
        assert!(h.is_cancelled() && !h.is_expired(), "{h:?}");
        assert!(!h.cancel(), "already handed back");
    }
    assert!(early.is_expired() && gone.is_cancelled());

    // Nothing runs by itself any more.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(log.snapshot(), ["early"]);

    // Running the handed-back tasks runs the closures and the future.
    for task in tasks {
        task.await;
    }
    assert_eq!(log.snapshot(), ["early", "a", "b", "d", "c", "e"]);
}

/// Callbacks scheduled from several threads land in different shards; the
/// tasks still come back in deadline order.
#[tokio::test(start_paused = true)]
async fn shutdown_orders_callbacks_across_shards() {
    let t0 = Instant::now();
    let wheel = Wheel::builder()
        .tick(ms(10))
        .shards(8)
        .runtime(tokio::runtime::Handle::current())
        .build()
        .unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let wheel = wheel.clone();
            std::thread::spawn(move || {
                for k in 0..25u64 {
                    // Interleaved: thread i has deadlines i, i + 4, i + 8, ...
                    let at = t0 + Duration::from_secs(60) + ms(k * 40 + i * 10);
                    wheel.schedule_at(at, || ()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(wheel.pending(), 100);
    let tasks = wheel.shutdown();
    let got: Vec<Instant> = tasks.iter().map(|t| t.deadline()).collect();
    let expected: Vec<Instant> = (0..100u64)
        .map(|n| t0 + Duration::from_secs(60) + ms(n * 10))
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(start_paused = true)]
async fn after_shutdown_schedule_and_try_calls_are_refused() {
    let wheel = Wheel::builder().max_pending(1).build().unwrap();
    assert!(!wheel.is_shutdown());
    assert!(wheel.shutdown().is_empty());
    assert!(wheel.is_shutdown());

    let log = Log::new();
    let l = log.clone();
    let err = assert_shut_down(
        wheel
            .schedule(ms(10), move || l.push("closure"))
            .unwrap_err(),
    );
    let task = err.into_task().expect("the refused callback comes back");
    assert!(log.is_empty());
    task.await;
    let l = log.clone();
    let at = Instant::now() + ms(10);
    let err = assert_shut_down(wheel.schedule_at(at, move || l.push("at")).unwrap_err());
    assert_eq!(err.into_task().unwrap().deadline(), at);
    let l = log.clone();
    let err = assert_shut_down(
        wheel
            .schedule_future(ms(10), async move { l.push("future") })
            .unwrap_err(),
    );
    err.into_task().unwrap().await;
    assert_shut_down(wheel.schedule_future_at(at, async {}).unwrap_err());
    assert_eq!(log.snapshot(), ["closure", "future"]);

    assert!(assert_shut_down(wheel.try_sleep(ms(10)).unwrap_err())
        .into_task()
        .is_none());
    assert_shut_down(wheel.try_sleep_until(at).unwrap_err());
    assert_shut_down(wheel.try_timeout(ms(10), async {}).map(drop).unwrap_err());
    assert_shut_down(wheel.try_timeout_at(at, async {}).map(drop).unwrap_err());
}

/// A sleep, a timeout and an interval pending in the wheel when it shuts
/// down, in this task and in another, complete at their exact deadlines on
/// Tokio's timer: not at the wheel's rounded tick, not early, not never.
#[tokio::test(start_paused = true)]
async fn pending_timers_complete_at_their_deadlines_after_shutdown() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 16);
    let mut sleep = wheel.sleep(ms(25));
    let mut timeout = wheel.timeout(ms(35), std::future::pending::<()>());
    let mut iv = wheel.interval_at(t0 + ms(7), ms(33));
    assert!(poll!(&mut sleep).is_pending());
    assert!(poll!(&mut timeout).is_pending());
    assert!(poll!(Box::pin(iv.tick())).is_pending());
    let w = wheel.clone();
    let other = tokio::spawn(async move {
        w.sleep(ms(503)).await;
        Instant::now()
    });
    yield_until("all registered", || wheel.pending() == 4).await;

    tokio::time::sleep_until(t0 + ms(5)).await;
    assert!(wheel.shutdown().is_empty());

    within_an_hour("a sleep", &mut sleep).await;
    assert_eq!(Instant::now(), t0 + ms(25), "the sleep, on tokio::time");
    assert!(sleep.is_elapsed());
    assert!(within_an_hour("a timeout", timeout).await.is_err());
    assert_eq!(Instant::now(), t0 + ms(35), "the timeout");
    for k in 0..4u32 {
        let due = t0 + ms(7) + ms(33) * k;
        let got = within_an_hour("an interval", iv.tick()).await;
        assert_eq!(got, due);
        // The first (7 ms) was already due when this task got here.
        assert_eq!(Instant::now(), due.max(t0 + ms(35)), "interval tick {k}");
    }
    let done = within_an_hour("a sleep in another task", other)
        .await
        .unwrap();
    assert_eq!(done, t0 + ms(503));
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn new_timers_after_shutdown_use_tokio_time() {
    let wheel = tick_wheel(10, 16);
    wheel.shutdown();
    let t1 = Instant::now();
    within_an_hour("a new sleep", wheel.sleep(ms(15))).await;
    assert_eq!(Instant::now(), t1 + ms(15));
    within_an_hour("sleep_until", wheel.sleep_until(t1 + ms(41))).await;
    assert_eq!(Instant::now(), t1 + ms(41));
    let res = within_an_hour(
        "a timeout",
        wheel.timeout(ms(7), std::future::pending::<()>()),
    )
    .await;
    assert!(res.is_err());
    assert_eq!(Instant::now(), t1 + ms(48));
    assert_eq!(
        within_an_hour("a ready timeout", wheel.timeout(ms(7), async { 5 })).await,
        Ok(5)
    );

    // reset of a sleep that went over to Tokio's timer.
    let mut s = wheel.sleep(ms(100));
    assert!(poll!(&mut s).is_pending());
    s.reset(t1 + ms(63));
    within_an_hour("a reset sleep", &mut s).await;
    assert_eq!(Instant::now(), t1 + ms(63));

    let t2 = Instant::now();
    let mut iv = wheel.interval(ms(13));
    for k in 0..3u32 {
        assert_eq!(within_an_hour("interval", iv.tick()).await, t2 + ms(13) * k);
        assert_eq!(Instant::now(), t2 + ms(13) * k);
    }
    assert_eq!(wheel.pending(), 0);
    assert_eq!(wheel.stats().registered, 0, "nothing went into the wheel");
}

/// Once Tokio's timer delivers an interval's ticks, a tick counts as missed
/// by Tokio's 1 ms tick plus 5 ms, not by the shut-down wheel's 10 ms: one
/// delivered 8 ms late makes a `Delay` interval start again from it, as
/// `tokio::time::Interval` does (on the wheel, 8 ms of a 10 ms tick's
/// rounding is not a miss: `tick_rounding_does_not_shift_a_delay_interval`).
#[tokio::test(start_paused = true)]
async fn an_interval_on_tokios_timer_counts_misses_by_tokios_tick() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 16);
    let mut iv = wheel.interval_at(t0 + ms(100), ms(50));
    iv.set_missed_tick_behavior(tokio_wheel::MissedTickBehavior::Delay);
    assert!(poll!(Box::pin(iv.tick())).is_pending());
    assert!(wheel.shutdown().is_empty());

    tokio::time::sleep_until(t0 + ms(108)).await;
    assert_eq!(within_an_hour("a late tick", iv.tick()).await, t0 + ms(100));
    assert_eq!(Instant::now(), t0 + ms(108), "delivered 8 ms late");
    let next = within_an_hour("the tick after", iv.tick()).await;
    assert_eq!(next, t0 + ms(158), "a period after the late delivery");
    assert_eq!(Instant::now(), t0 + ms(158));
}

#[tokio::test(start_paused = true)]
async fn a_second_shutdown_returns_nothing() {
    let wheel = tick_wheel(10, 16);
    wheel.schedule(ms(100), || ()).unwrap();
    assert!(!wheel.is_shutdown());
    assert_eq!(wheel.shutdown().len(), 1);
    assert!(wheel.is_shutdown());
    assert!(wheel.shutdown().is_empty());
    assert!(wheel.clone().is_shutdown(), "clones share the state");
    assert!(wheel.clone().shutdown().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_driver_task_stops_after_shutdown() {
    assert_eq!(alive_tasks(), 0);
    let wheel = tick_wheel(10, 16);
    let _h = wheel.schedule(Duration::from_secs(10), || ()).unwrap();
    let mut sleep = wheel.sleep(Duration::from_secs(20));
    assert!(poll!(&mut sleep).is_pending());
    assert_eq!(alive_tasks(), 1, "the driver");
    let starts = wheel.stats().driver_starts;
    assert_eq!(starts, 1);

    assert_eq!(wheel.shutdown().len(), 1);
    yield_until("the driver exits", || alive_tasks() == 0).await;

    // Timers made or polled afterwards start no driver.
    assert!(poll!(&mut sleep).is_pending());
    within_an_hour("a new sleep", wheel.sleep(ms(30))).await;
    assert_eq!(alive_tasks(), 0);
    assert_eq!(wheel.stats().driver_starts, starts);
    drop(sleep);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(alive_tasks(), 0);
}
