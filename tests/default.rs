//! The free functions, on each runtime's default wheel.

mod common;

use std::future::IntoFuture;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use futures::poll;
use tokio::runtime::Builder as RtBuilder;
use tokio::time::Instant;
use tokio_wheel::{sleep, sleep_until, timeout, timeout_at, Wheel};

use common::{ms, panic_message};

#[tokio::test]
async fn under_tokio_test_current_thread() {
    let start = Instant::now();
    let s = sleep(ms(30));
    assert!(s.deadline() >= start + ms(30));
    assert!(s.deadline() <= Instant::now() + ms(30));
    s.await;
    assert!(start.elapsed() >= ms(30));
    assert_eq!(timeout(ms(500), async { 3 }).await, Ok(3));
    let t = Instant::now();
    assert!(timeout(ms(20), std::future::pending::<()>()).await.is_err());
    assert!(t.elapsed() >= ms(20));
    let at = Instant::now() + ms(15);
    sleep_until(at).await;
    assert!(Instant::now() >= at);
    let at = Instant::now() + ms(15);
    assert!(timeout_at(at, std::future::pending::<()>()).await.is_err());
    assert!(Instant::now() >= at);

    let wheel = Wheel::current();
    assert_eq!(wheel.resolution(), ms(10));
    assert_eq!(wheel.slots(), 512);
    let stats = wheel.stats();
    // sleep, the pending timeout, sleep_until and timeout_at; not the ready one.
    assert_eq!((stats.registered, stats.fired, stats.cancelled), (4, 4, 0));
}

#[tokio::test(start_paused = true)]
async fn under_tokio_test_start_paused_exact_ticks() {
    let t0 = Instant::now();
    sleep(ms(25)).await;
    assert_eq!(Instant::now(), t0 + ms(30));
    let res = timeout(ms(25), std::future::pending::<()>()).await;
    assert!(res.is_err());
    assert_eq!(Instant::now(), t0 + ms(60));
    sleep_until(t0 + ms(61)).await;
    assert_eq!(Instant::now(), t0 + ms(70));
    let res = timeout_at(t0 + ms(100), async {
        sleep(ms(10)).await;
        "inner"
    })
    .await;
    assert_eq!(res, Ok("inner"));
    assert_eq!(Instant::now(), t0 + ms(80));
    assert_eq!(Wheel::current().pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_tokio_test_multi_thread() {
    let main_wheel = Wheel::current();
    let tasks: Vec<_> = (0..64u64)
        .map(|i| {
            tokio::spawn(async move {
                let d = ms(10 + i % 7 * 5);
                let start = Instant::now();
                sleep(d).await;
                assert!(start.elapsed() >= d);
                let res = timeout(ms(10), std::future::pending::<()>()).await;
                assert!(res.is_err());
                assert_eq!(timeout(ms(10), async { i }).await, Ok(i));
                Wheel::current().resolution()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), ms(10));
    }
    // Every worker thread used the one default wheel of this runtime.
    let stats = main_wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.pending),
        (128, 128, 0)
    );
    assert_eq!(Wheel::current().stats().registered, 128);
}

#[tokio::test(start_paused = true)]
async fn the_free_functions_use_wheel_current() {
    let mut s = sleep(ms(100));
    assert_eq!(
        Wheel::current().pending(),
        0,
        "registered before its first poll"
    );
    assert!(poll!(&mut s).is_pending());
    assert_eq!(Wheel::current().pending(), 1);
    drop(s);
    assert_eq!(Wheel::current().pending(), 0);
    assert_eq!(Wheel::current().stats().cancelled, 1);
}

/// Each runtime has its own default wheel, on its own clock, and a runtime
/// built after others were dropped works as the first did.
#[test]
fn sequential_runtimes_each_get_a_working_default_wheel() {
    let paused = || {
        RtBuilder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    };
    let check_paused = |rt: tokio::runtime::Runtime| {
        rt.block_on(async {
            assert_eq!(Wheel::current().stats().registered, 0, "a stale wheel");
            let t0 = Instant::now();
            sleep(ms(25)).await;
            assert_eq!(Instant::now(), t0 + ms(30));
            assert!(timeout(ms(10), std::future::pending::<()>()).await.is_err());
            assert_eq!(Instant::now(), t0 + ms(40));
            assert_eq!(Wheel::current().stats().registered, 2);
        });
    };

    check_paused(paused());

    let rt = RtBuilder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(Wheel::current().stats().registered, 0, "a stale wheel");
        let start = Instant::now();
        sleep(ms(20)).await;
        assert!(start.elapsed() >= ms(20));
        assert!(timeout(ms(10), std::future::pending::<()>()).await.is_err());
        assert_eq!(timeout(ms(10), async { 1 }).await, Ok(1));
        assert_eq!(Wheel::current().stats().registered, 2);
    });
    drop(rt);

    let rt = RtBuilder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(Wheel::current().stats().registered, 0, "a stale wheel");
        let task = tokio::spawn(async {
            let start = Instant::now();
            sleep(ms(20)).await;
            assert!(start.elapsed() >= ms(20));
            timeout(ms(10), std::future::pending::<()>()).await
        });
        assert!(task.await.unwrap().is_err());
        let start = Instant::now();
        sleep(ms(20)).await;
        assert!(start.elapsed() >= ms(20));
        assert_eq!(Wheel::current().stats().registered, 3);
    });
    drop(rt);

    check_paused(paused());
    check_paused(paused());
}

#[test]
fn free_functions_outside_a_runtime_panic_naming_tokio() {
    type Call = Box<dyn Fn()>;
    let calls: Vec<(&str, Call)> = vec![
        ("sleep", Box::new(|| drop(sleep(ms(1))))),
        (
            "sleep_until",
            Box::new(|| drop(sleep_until(Instant::now() + ms(1)))),
        ),
        (
            "timeout",
            Box::new(|| drop(timeout(ms(1), std::future::ready(())))),
        ),
        (
            "timeout_at",
            Box::new(|| drop(timeout_at(Instant::now(), std::future::ready(())))),
        ),
        ("Wheel::current", Box::new(|| drop(Wheel::current()))),
    ];
    for (name, call) in calls {
        let payload = catch_unwind(AssertUnwindSafe(call)).expect_err(name);
        let msg = panic_message(&*payload);
        assert!(
            msg.contains("Tokio runtime") || msg.contains("Tokio 1.x runtime"),
            "{name}: {msg:?}"
        );
    }
    // The thread is still usable with a runtime afterwards.
    let rt = RtBuilder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async { sleep(ms(5)).await });
}

/// A wheel's timer polled outside any runtime, with no driver running,
/// panics naming the cause, and leaves nothing registered behind.
#[test]
fn polling_a_wheel_timer_outside_a_runtime_panics_and_unregisters() {
    let wheel = Wheel::new();
    let mut s = wheel.sleep(Duration::from_secs(1));
    let payload = catch_unwind(AssertUnwindSafe(|| {
        common::poll_with(&mut s, &futures::task::noop_waker())
    }))
    .expect_err("polled without a runtime");
    let msg = panic_message(&*payload);
    assert!(msg.contains("Tokio"), "{msg:?}");
    assert_eq!(wheel.pending(), 0);
}

/// An `IntoFuture` whose conversion itself uses the default wheel.
struct SleepsOnConversion;

impl IntoFuture for SleepsOnConversion {
    type Output = ();
    type IntoFuture = tokio_wheel::Sleep;

    fn into_future(self) -> Self::IntoFuture {
        sleep(ms(20))
    }
}

#[test]
fn timeout_may_reenter_the_default_wheel() {
    let rt = RtBuilder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        // The first use on this thread and runtime, and again when cached.
        let t0 = Instant::now();
        assert_eq!(timeout(ms(100), SleepsOnConversion).await, Ok(()));
        assert_eq!(timeout(ms(100), SleepsOnConversion).await, Ok(()));
        assert_eq!(Instant::now(), t0 + ms(40));
        assert!(timeout(ms(5), SleepsOnConversion).await.is_err());
    });
}
