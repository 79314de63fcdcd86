//! Regression tests for bugs found in review, each named after what broke.

mod common;

use std::future::{Future, IntoFuture};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use common::{panic_message, CountingWaker};
use futures::FutureExt;
use tokio::runtime::Runtime;
use tokio::time::Instant;
use tokio_wheel::Wheel;

fn one_worker() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Polling a registered sleep in the context of a runtime that has shut down
/// used to spin: each poll spawned a driver that the runtime dropped at once,
/// whose hand-over woke the sleep again. It must panic with a clear message,
/// as `tokio::time::sleep` does there.
#[test]
fn poll_on_a_shut_down_runtime_panics_instead_of_spinning() {
    let wheel = Wheel::new();
    let rt = one_worker();
    let handle = rt.handle().clone();
    let mut sleep = {
        let _enter = rt.enter();
        let mut sleep = wheel.sleep(Duration::from_secs(1));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        sleep
    };
    drop(rt);
    let _enter = handle.enter();
    let (_counter, waker) = CountingWaker::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        // A correct sleep panics on the first poll; a spinning one keeps
        // waking itself. Bound the loop so a regression fails, not hangs.
        for _ in 0..1000 {
            let _ = Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker));
        }
    }));
    let message = panic_message(&*result.expect_err("polling must panic"));
    assert!(message.contains("shutting down"), "message: {message}");
    assert_eq!(wheel.pending(), 0, "the panicking sleep unregistered");
    drop(sleep);
}

/// A blocking task waiting on a wheel sleep used to keep `Runtime::drop`
/// waiting forever; now the sleep panics and the drop returns.
#[test]
fn dropping_a_runtime_with_a_blocked_waiter_returns() {
    let wheel = Wheel::new();
    let rt = one_worker();
    let w = wheel.clone();
    let started = Arc::new(std::sync::Barrier::new(2));
    let s = started.clone();
    rt.spawn_blocking(move || {
        s.wait();
        let _ = catch_unwind(AssertUnwindSafe(|| {
            tokio::runtime::Handle::current().block_on(w.sleep(Duration::from_secs(3600)))
        }));
    });
    started.wait();
    std::thread::sleep(Duration::from_millis(50));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(rt);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("Runtime::drop returned");
    assert_eq!(wheel.pending(), 0);
}

/// A current-thread runtime whose clock is paused, and a wheel built 300 ms
/// (of real time) later, outside it: the wheel's origin is that far ahead of
/// the runtime's clock.
fn paused_runtime_and_a_wheel_ahead_of_it() -> (Runtime, Wheel) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    (rt, Wheel::new())
}

/// A wheel built after a paused runtime's clock started reads ahead of that
/// clock: its ticks used to say "due" while the sleep's deadline was still
/// ahead, and the sleep completed at once. Never early, whatever the clocks.
#[test]
fn wheel_clock_ahead_of_the_runtime_never_fires_early() {
    let (rt, wheel) = paused_runtime_and_a_wheel_ahead_of_it();
    rt.block_on(async {
        for d in [1, 50, 200, 400] {
            let start = Instant::now();
            wheel.sleep(Duration::from_millis(d)).await;
            assert!(
                start.elapsed() >= Duration::from_millis(d),
                "sleep({d} ms) completed after {:?}",
                start.elapsed()
            );
        }
    });
}

/// A fired sleep completes without reading the clock when the wheel's tick
/// proves its deadline passed, but a deadline before the wheel's origin (tick
/// 0) proves nothing: with the wheel's clock ahead of the runtime's, a reset
/// to such a deadline fires the entry on the spot, and its poll must read the
/// clock, find the deadline ahead and wait.
#[test]
fn a_reset_before_the_wheels_origin_does_not_complete_early() {
    let (rt, wheel) = paused_runtime_and_a_wheel_ahead_of_it();
    rt.block_on(async {
        let start = Instant::now();
        // Due after the wheel's origin: a tick of 1 or more.
        let mut sleep = wheel.sleep(Duration::from_millis(400));
        assert!(futures::poll!(&mut sleep).is_pending());
        // Earlier, still ahead of the clock, but before the origin.
        let deadline = start + Duration::from_millis(50);
        sleep.reset(deadline);
        (&mut sleep).await;
        assert!(
            Instant::now() >= deadline,
            "completed {:?} before its deadline",
            deadline - Instant::now()
        );
        assert_eq!(wheel.stats().rearmed, 1, "{:?}", wheel.stats());
    });
}

/// The same for an interval, whose ticks complete without the lock once the
/// wheel's `fired_upto` reaches their tick: a tick before the wheel's origin
/// (tick 0) must not, and each tick completes no earlier than its instant,
/// the task polling in between with the same waker.
#[test]
fn an_interval_before_the_wheels_origin_never_ticks_early() {
    let (rt, wheel) = paused_runtime_and_a_wheel_ahead_of_it();
    rt.block_on(async {
        let start = Instant::now();
        let mut ticks = wheel.interval(Duration::from_millis(70));
        for k in 0..10u32 {
            // A poll first (pending but for the first tick), then the wait.
            let first = futures::poll!(std::pin::pin!(ticks.tick()));
            let due = match first {
                std::task::Poll::Ready(due) => due,
                std::task::Poll::Pending => ticks.tick().await,
            };
            assert_eq!(due, start + Duration::from_millis(70) * k);
            assert!(
                Instant::now() >= due,
                "tick {k} came {:?} early",
                due - Instant::now()
            );
        }
        // The ticks after the origin went through the wheel.
        let stats = wheel.stats();
        assert!(
            stats.fired > 0 && stats.fired == stats.registered,
            "{stats:?}"
        );
    });
}

/// A wheel bound to a running runtime keeps firing even when its first timer
/// was polled on a current-thread runtime that is then kept idle (outside
/// `block_on`), which used to strand the driver there.
#[test]
fn bound_wheel_fires_although_first_polled_on_an_idle_runtime() {
    let main = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let idle = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let wheel = Wheel::builder()
        .runtime(main.handle().clone())
        .build()
        .unwrap();
    let mut long = wheel.sleep(Duration::from_secs(3600));
    idle.block_on(async { assert!((&mut long).now_or_never().is_none()) });
    let w = wheel.clone();
    let fired = main.block_on(async move {
        tokio::time::timeout(Duration::from_secs(10), w.sleep(Duration::from_millis(50))).await
    });
    assert!(
        fired.is_ok(),
        "the 50 ms sleep fired; stats {:?}",
        wheel.stats()
    );
    assert!((&mut long).now_or_never().is_none());
}

/// A thread going back and forth between runtimes used to evict a runtime's
/// default wheel and make a second one for it, splitting its timers.
#[test]
fn a_runtime_keeps_one_default_wheel_across_runtime_switches() {
    let (a, b) = (current_thread(), current_thread());
    let mut sleep = {
        let _enter = a.enter();
        tokio_wheel::sleep(Duration::from_secs(60))
    };
    a.block_on(async { assert!((&mut sleep).now_or_never().is_none()) });
    b.block_on(async { drop(tokio_wheel::sleep(Duration::from_secs(1))) });
    a.block_on(async {
        assert_eq!(Wheel::current().pending(), 1, "A's timer is in A's wheel");
        assert!((&mut sleep).now_or_never().is_none());
    });
}

struct MakesATimer(tokio::runtime::Handle);

impl IntoFuture for MakesATimer {
    type Output = ();
    type IntoFuture = std::future::Ready<()>;

    fn into_future(self) -> Self::IntoFuture {
        let _enter = self.0.enter();
        drop(tokio_wheel::sleep(Duration::from_secs(1)));
        std::future::ready(())
    }
}

/// `timeout`'s `into_future` used to run inside the default-wheel lookup, so
/// a free function called from it panicked with "already borrowed".
#[test]
fn into_future_may_use_the_free_functions() {
    let (a, b) = (current_thread(), current_thread());
    let hb = b.handle().clone();
    a.block_on(async {
        drop(tokio_wheel::sleep(Duration::from_secs(1)));
        let t = tokio_wheel::timeout(Duration::from_secs(1), MakesATimer(hb));
        assert_eq!(t.await, Ok(()));
    });
}

/// Wakes, then panics: an executor bug or a hostile waker.
struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("waker panicked on purpose");
    }
}

/// A waker that panics inside the driver used to drop the other wakers of the
/// same tick unwoken: their entries had fired, so nothing woke them again.
#[tokio::test(start_paused = true)]
async fn a_panicking_waker_does_not_lose_the_other_timers_of_its_tick() {
    let wheel = Wheel::builder().shards(1).build().unwrap();
    let deadline = Instant::now() + Duration::from_millis(100);
    let done = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let (w, done) = (wheel.clone(), done.clone());
            tokio::spawn(async move {
                w.sleep_until(deadline).await;
                done.lock().unwrap().push(i);
            })
        })
        .collect();
    while wheel.pending() < 10 {
        tokio::task::yield_now().await;
    }
    // Registered last, so it heads the slot's list and is woken first.
    let mut bad = wheel.sleep_until(deadline);
    let bad_waker = Waker::from(Arc::new(PanickingWaker));
    assert!(Pin::new(&mut bad)
        .poll(&mut Context::from_waker(&bad_waker))
        .is_pending());
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("every good timer fired")
            .unwrap();
    }
    assert_eq!(done.lock().unwrap().len(), 10);
    drop(bad);
}
