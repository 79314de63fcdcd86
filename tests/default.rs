//! The free functions, on each runtime's default wheel.

mod common;

use std::future::IntoFuture;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
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
    assert_eq!(wheel.slots(), 64);
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

fn paused_runtime() -> tokio::runtime::Runtime {
    RtBuilder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// A thread that uses more live runtimes than it caches does not cost the
/// first one its default wheel: the sleep pending there is still counted,
/// by the same wheel, which then fires it.
#[test]
fn a_runtime_keeps_its_default_wheel_while_a_thread_uses_five() {
    let runtimes: Vec<_> = (0..5).map(|_| paused_runtime()).collect();
    let first = &runtimes[0];
    let (mut pending_sleep, t0) = first.block_on(async {
        let t0 = Instant::now();
        let mut s = sleep(ms(100));
        assert!(poll!(&mut s).is_pending());
        assert_eq!(Wheel::current().pending(), 1);
        (s, t0)
    });
    for rt in &runtimes[1..] {
        rt.block_on(async {
            assert_eq!(Wheel::current().pending(), 0, "another runtime's wheel");
            sleep(ms(10)).await;
        });
    }
    first.block_on(async {
        let wheel = Wheel::current();
        assert_eq!(
            wheel.pending(),
            1,
            "a new default wheel for the first runtime"
        );
        assert_eq!(wheel.stats().registered, 1);
        (&mut pending_sleep).await;
        assert_eq!(Instant::now(), t0 + ms(100));
        assert_eq!(wheel.stats().fired, 1);
        assert_eq!(wheel.pending(), 0);
    });
}

/// A callback scheduled on the default wheel from a thread that entered the
/// runtime and then exits runs at its deadline: the wheel does not die with
/// that thread.
#[test]
fn a_callback_scheduled_from_a_thread_that_exits_still_runs() {
    let rt = paused_runtime();
    let handle = rt.handle().clone();
    let t0 = rt.block_on(async { Instant::now() });
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _in_runtime = handle.enter();
        Wheel::current()
            .schedule(ms(50), move || {
                let _ = tx.send(Instant::now());
            })
            .unwrap();
    })
    .join()
    .unwrap();
    rt.block_on(async {
        let ran_at = tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .expect("the callback did not run")
            .expect("the callback was dropped without running");
        assert_eq!(ran_at, t0 + ms(50));
        let stats = Wheel::current().stats();
        assert_eq!((stats.registered, stats.fired), (1, 1));
    });
}

/// A runtime that is dropped frees its default wheel, and with it the
/// callbacks still pending there.
#[test]
fn a_dropped_runtime_frees_its_default_wheel() {
    let token = Arc::new(());
    let rt = paused_runtime();
    rt.block_on(async {
        let held = token.clone();
        let handle = Wheel::current()
            .schedule(Duration::from_secs(3600), move || drop(held))
            .unwrap();
        drop(handle);
        let mut s = sleep(Duration::from_secs(3600));
        assert!(poll!(&mut s).is_pending());
    });
    assert_eq!(Arc::strong_count(&token), 2, "the wheel holds the callback");
    drop(rt);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the default wheel outlived its runtime"
    );
}

/// The same for a multi-thread runtime used from its workers and from
/// `block_on`: once the runtime is dropped, the wheel is freed by the time
/// the thread that used it next uses a default wheel.
#[test]
fn a_dropped_multi_thread_runtime_frees_its_default_wheel() {
    let token = Arc::new(());
    let rt = RtBuilder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let schedule = |token: &Arc<()>| {
        let held = token.clone();
        Wheel::current()
            .schedule(Duration::from_secs(3600), move || drop(held))
            .unwrap();
    };
    rt.block_on(async {
        let from_worker = token.clone();
        tokio::spawn(async move { schedule(&from_worker) })
            .await
            .unwrap();
        schedule(&token);
        assert_eq!(Wheel::current().pending(), 2);
    });
    assert_eq!(
        Arc::strong_count(&token),
        3,
        "the wheel holds the callbacks"
    );
    drop(rt);
    paused_runtime().block_on(async { sleep(ms(10)).await });
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the default wheel outlived its runtime"
    );
}

/// A runtime that has shut down keeps no default wheel: each use there gets
/// a wheel of its own, which nothing else holds.
#[test]
fn a_runtime_that_has_shut_down_keeps_no_default_wheel() {
    let rt = paused_runtime();
    let handle = rt.handle().clone();
    drop(rt);
    let _in_runtime = handle.enter();
    let wheel = Wheel::current();
    let refused = wheel.schedule(ms(10), || ()).unwrap_err();
    assert!(refused.into_task().is_some());
    assert_eq!(wheel.stats().registered, 1);
    drop(wheel);
    assert_eq!(
        Wheel::current().stats().registered,
        0,
        "the shut-down runtime's wheel was kept"
    );
}

/// Threads that first use a runtime's default wheel at the same moment all
/// get the same one.
#[test]
fn concurrent_first_uses_share_one_default_wheel() {
    const THREADS: usize = 8;
    let rt = paused_runtime();
    let barrier = std::sync::Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                let _in_runtime = rt.enter();
                barrier.wait();
                Wheel::current()
                    .schedule(Duration::from_secs(60), || ())
                    .unwrap();
            });
        }
    });
    let _in_runtime = rt.enter();
    assert_eq!(Wheel::current().pending(), THREADS);
}

/// `Wheel::try_current` outside a runtime: an error that says why, with
/// Tokio's own as its source, and no panic.
#[test]
fn try_current_outside_a_runtime_is_an_error() {
    use std::error::Error;

    let err = Wheel::try_current().expect_err("no runtime on this thread");
    assert!(err.is_missing_context());
    assert_eq!(
        err.to_string(),
        "there is no Tokio runtime here: the default wheel is the current runtime's, so \
         Wheel::try_current must be called from the context of a Tokio 1.x runtime"
    );
    let source = err.source().expect("Tokio's error");
    assert!(source.is::<tokio::runtime::TryCurrentError>());
    // Nothing was registered for a runtime, and a runtime works afterwards.
    let rt = paused_runtime();
    let _in_runtime = rt.enter();
    assert_eq!(Wheel::try_current().unwrap().stats().registered, 0);
}

/// `Wheel::try_current` in a runtime is that runtime's default wheel, the
/// one `current()` and the free functions use, from any thread in its
/// context; another runtime's is another wheel.
#[test]
fn try_current_is_the_runtimes_default_wheel() {
    let rt = paused_runtime();
    let other = paused_runtime();
    rt.block_on(async {
        let wheel = Wheel::try_current().unwrap();
        wheel.schedule(Duration::from_secs(60), || ()).unwrap();
        assert_eq!(Wheel::current().pending(), 1);
        let mut s = sleep(ms(10));
        assert!(poll!(&mut s).is_pending());
        assert_eq!(wheel.pending(), 2, "the free functions' wheel");
    });
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let _in_runtime = rt.enter();
            assert_eq!(Wheel::try_current().unwrap().pending(), 1);
        });
    });
    let _in_other = other.enter();
    assert_eq!(Wheel::try_current().unwrap().pending(), 0);
}
