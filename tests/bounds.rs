//! `Builder::max_pending`: which calls are refused at the bound, what a
//! refusal carries, and when places come back.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use futures::{poll, FutureExt};
use tokio::time::Instant;
use tokio_wheel::error::Rejected;
use tokio_wheel::Wheel;

use common::{ms, yield_until, Log};

fn bounded(max: usize) -> Wheel {
    Wheel::builder()
        .tick(ms(10))
        .slots(64)
        .max_pending(max)
        .build()
        .unwrap()
}

fn assert_at_bound(err: &Rejected, max: usize) {
    assert_eq!(err.max_pending(), Some(max), "{err:?}");
    assert!(!err.is_shutdown());
    let text = err.to_string();
    assert!(
        text.contains(&max.to_string()) && text.contains("max_pending"),
        "the message names the bound: {text}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_third_try_sleep_or_schedule_is_refused_naming_the_bound() {
    let wheel = bounded(2);
    let a = wheel.try_sleep(ms(100)).unwrap();
    let b = wheel.try_sleep(ms(100)).unwrap();
    let err = wheel.try_sleep(ms(100)).unwrap_err();
    assert_at_bound(&err, 2);
    assert!(err.into_task().is_none(), "a refused sleep carries no task");
    let err = wheel.try_sleep_until(Instant::now() + ms(5)).unwrap_err();
    assert_at_bound(&err, 2);

    let log = Log::new();
    let l = log.clone();
    let err = wheel
        .schedule(ms(50), move || l.push("refused closure"))
        .unwrap_err();
    assert_at_bound(&err, 2);
    assert!(std::error::Error::source(&err).is_none());
    let task = err.into_task().expect("the refused callback comes back");
    assert!(format!("{task:?}").contains("closure"));
    assert!(log.is_empty(), "not run by the refusal");
    task.await;
    assert_eq!(log.snapshot(), ["refused closure"]);

    let l = log.clone();
    let err = wheel
        .schedule_future_at(
            Instant::now() + ms(50),
            async move { l.push("refused future") },
        )
        .unwrap_err();
    assert_at_bound(&err, 2);
    err.into_task().unwrap().await;
    assert_eq!(log.snapshot(), ["refused closure", "refused future"]);

    // Nothing refused was registered.
    assert_eq!(wheel.pending(), 0, "unpolled try_sleeps are not registered");
    drop((a, b));
    assert!(wheel.try_sleep(ms(100)).is_ok());
}

#[tokio::test(start_paused = true)]
async fn places_come_back_after_a_cancel_and_after_a_fire() {
    let wheel = bounded(2);
    let h1 = wheel.schedule(ms(100), || ()).unwrap();
    let _h2 = wheel.schedule(ms(30), || ()).unwrap();
    assert_at_bound(&wheel.schedule(ms(10), || ()).unwrap_err(), 2);

    // After a cancel.
    assert!(h1.cancel());
    let h3 = wheel.schedule(ms(100), || ()).unwrap();
    assert_at_bound(&wheel.try_sleep(ms(10)).unwrap_err(), 2);

    // After a fire (the 30 ms callback).
    tokio::time::sleep(ms(40)).await;
    let mut s = wheel.try_sleep(ms(10)).expect("the fired callback's place");
    assert_at_bound(&wheel.schedule(ms(10), || ()).unwrap_err(), 2);

    // A sleep that fired (still alive, completed) gives its place back too.
    (&mut s).await;
    let h4 = wheel
        .schedule(ms(500), || ())
        .expect("the fired sleep's place");
    drop(s);
    assert_at_bound(&wheel.try_sleep(ms(10)).unwrap_err(), 2);
    assert!(h3.cancel() && h4.cancel());
    assert_eq!(wheel.pending(), 0);
    let (x, y) = (wheel.try_sleep(ms(1)), wheel.try_sleep(ms(1)));
    assert!(x.is_ok() && y.is_ok(), "all places back");
}

/// Netty's `testPendingTimeouts` with a bound of 3: three pending, a fourth
/// refused; two cancelled and one fired leave none pending and every place
/// free.
#[tokio::test(start_paused = true)]
async fn pending_three_to_zero_after_two_cancels_and_a_fire() {
    let wheel = bounded(3);
    let fired = Arc::new(AtomicUsize::new(0));
    let t1 = wheel.schedule(ms(100), || ()).unwrap();
    let t2 = wheel.schedule(ms(100), || ()).unwrap();
    let f = fired.clone();
    wheel
        .schedule(ms(90), move || {
            f.fetch_add(1, SeqCst);
        })
        .unwrap();
    assert_eq!(wheel.pending(), 3);
    assert_at_bound(&wheel.schedule(ms(1), || ()).unwrap_err(), 3);
    assert!(t1.cancel() && t2.cancel());
    assert_eq!(wheel.pending(), 1);
    tokio::time::sleep(ms(90)).await;
    yield_until("the 90 ms task runs", || fired.load(SeqCst) == 1).await;
    assert_eq!(wheel.pending(), 0);
    let s = wheel.stats();
    assert_eq!(
        (s.pending, s.registered, s.fired, s.cancelled),
        (0, 3, 1, 2)
    );
    let all: Vec<_> = (0..3).map(|_| wheel.try_sleep(ms(5))).collect();
    assert!(all.iter().all(Result::is_ok), "three places free again");
}

/// Plain `sleep` and `timeout` are never refused, even at or past the bound;
/// they count, pushing the wheel past it, and `try_` calls are refused until
/// enough are released.
#[tokio::test(start_paused = true)]
async fn plain_sleeps_are_never_refused_but_count() {
    let t0 = Instant::now();
    let wheel = bounded(2);
    let mut sleeps: Vec<_> = (1..=4).map(|i| wheel.sleep(ms(100 * i))).collect();
    for s in &mut sleeps {
        assert!(poll!(s).is_pending());
    }
    let mut t = wheel.timeout(ms(50), std::future::pending::<()>());
    assert!(poll!(&mut t).is_pending());
    assert_eq!(wheel.pending(), 5, "past the bound of 2");
    assert_at_bound(&wheel.try_sleep(ms(1)).unwrap_err(), 2);
    assert_at_bound(&wheel.schedule(ms(1), || ()).unwrap_err(), 2);

    // They fire as usual.
    assert!(t.await.is_err());
    assert_eq!(Instant::now(), t0 + ms(50));
    (&mut sleeps[0]).await;
    assert_eq!(Instant::now(), t0 + ms(100));
    assert_eq!(wheel.pending(), 3);
    assert_at_bound(&wheel.try_sleep(ms(1)).unwrap_err(), 2);

    // Three registered, bound 2: one must go before a try_ fits.
    drop(sleeps.pop());
    assert_at_bound(&wheel.try_sleep(ms(1)).unwrap_err(), 2);
    drop(sleeps.pop());
    let ok = wheel.try_sleep(ms(1)).expect("below the bound again");
    assert_at_bound(&wheel.try_sleep(ms(1)).unwrap_err(), 2);
    drop(ok);
    drop(sleeps);
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn try_timeout_at_the_bound() {
    let wheel = bounded(1);
    let first = wheel
        .try_timeout(ms(500), std::future::pending::<()>())
        .unwrap();
    let err = wheel
        .try_timeout(ms(500), std::future::ready(2))
        .unwrap_err();
    assert_at_bound(&err, 1);
    assert!(err.into_task().is_none());
    let err = wheel
        .try_timeout_at(Instant::now() + ms(10), std::future::ready(3))
        .unwrap_err();
    assert_at_bound(&err, 1);
    assert!(first.await.is_err(), "times out");

    // Its place is back once it completed.
    let ready = wheel.try_timeout(ms(500), async { 4 }).unwrap();
    assert_eq!(ready.await, Ok(4));
    let at = Instant::now() + ms(20);
    let t = wheel
        .try_timeout_at(at, std::future::pending::<()>())
        .unwrap();
    assert!(wheel.try_timeout(ms(5), async {}).is_err());
    assert!(t.await.is_err());
    assert!(Instant::now() >= at);
    assert!(wheel.try_timeout(ms(5), async {}).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_try_sleep_that_never_registers_gives_its_place_back() {
    let wheel = bounded(1);

    // Dropped unpolled.
    let s = wheel.try_sleep(Duration::from_secs(5)).unwrap();
    assert!(wheel.try_sleep(ms(1)).is_err());
    drop(s);

    // Completed at its first poll (deadline already passed), still alive.
    let mut past = wheel.try_sleep_until(Instant::now()).unwrap();
    assert!(wheel.try_sleep(ms(1)).is_err());
    assert!((&mut past).now_or_never().is_some(), "due at once");
    let again = wheel.try_sleep(ms(1)).expect("place back after completing");
    drop(again);

    let mut zero = wheel.try_sleep(Duration::ZERO).unwrap();
    assert!((&mut zero).now_or_never().is_some());
    assert!(wheel.try_sleep(ms(1)).is_ok());
    assert_eq!(wheel.stats().registered, 0, "none of them registered");
    drop((past, zero));

    // A try_timeout whose future is ready at once never registers either.
    let t = wheel.try_timeout(ms(100), async { 1 }).unwrap();
    assert!(wheel.try_sleep(ms(1)).is_err());
    assert_eq!(t.await, Ok(1));
    assert!(wheel.try_sleep(ms(1)).is_ok());
}
