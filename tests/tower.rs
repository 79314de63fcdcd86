//! `tokio_wheel::tower`: the same behaviour and errors as `tower::timeout`,
//! on the wheel's timer.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{advance, Instant};
use tokio_test::task::spawn;
use tokio_wheel::tower::{Timeout, TimeoutLayer};
use tokio_wheel::Wheel;
use tower::timeout::error::Elapsed;
use tower::{service_fn, BoxError, Layer, Service, ServiceExt};

const TICK: Duration = Duration::from_millis(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn wheel() -> Wheel {
    Wheel::builder().tick(TICK).build().unwrap()
}

/// A service that answers `req` after `req` milliseconds.
fn after_ms() -> impl Service<u64, Response = u64, Error = Infallible, Future: Send> + Clone {
    service_fn(|req: u64| async move {
        tokio::time::sleep(ms(req)).await;
        Ok(req)
    })
}

#[tokio::test(start_paused = true)]
async fn a_fast_service_passes() {
    let wheel = wheel();
    let service = TimeoutLayer::with_wheel(&wheel, ms(100)).layer(after_ms());
    assert_eq!(service.clone().oneshot(0).await.unwrap(), 0);
    assert_eq!(service.oneshot(50).await.unwrap(), 50);
    let stats = wheel.stats();
    assert_eq!((stats.fired, stats.pending), (0, 0), "{stats:?}");
}

#[tokio::test(start_paused = true)]
async fn a_slow_service_fails_with_towers_elapsed() {
    let wheel = wheel();
    let service = TimeoutLayer::with_wheel(&wheel, ms(100)).layer(after_ms());
    let start = Instant::now();
    let err: BoxError = service.oneshot(10_000).await.unwrap_err();
    let elapsed = start.elapsed();
    assert!(
        elapsed >= ms(100) && elapsed <= ms(100) + TICK,
        "{elapsed:?}"
    );
    assert!(err.is::<Elapsed>(), "{err:?}");
    assert_eq!(err.to_string(), Elapsed::new().to_string());
    assert!(err.downcast::<Elapsed>().is_ok());
}

#[tokio::test(start_paused = true)]
async fn inner_errors_pass_through_boxed() {
    let wheel = wheel();
    let failing = service_fn(|()| async {
        Err::<(), _>(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "backend down",
        ))
    });
    let err = Timeout::with_wheel(failing, &wheel, ms(100))
        .oneshot(())
        .await
        .unwrap_err();
    assert!(!err.is::<Elapsed>());
    let err = err.downcast::<io::Error>().expect("the inner error, boxed");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    assert_eq!(err.to_string(), "backend down");
}

/// A service whose readiness fails.
#[derive(Clone)]
struct NotReady;

impl Service<()> for NotReady {
    type Response = ();
    type Error = io::Error;
    type Future = std::future::Ready<Result<(), io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Err(io::Error::other("overloaded")))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        unreachable!("never ready")
    }
}

#[tokio::test(start_paused = true)]
async fn poll_ready_forwards_and_boxes() {
    let wheel = wheel();
    let mut service = Timeout::with_wheel(NotReady, &wheel, ms(100));
    let err = std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap_err();
    assert_eq!(
        err.downcast::<io::Error>().unwrap().to_string(),
        "overloaded"
    );
    assert_eq!(wheel.stats().registered, 0, "no timer before call");
}

/// Ours against `tower::timeout::Timeout` on the same slow service: neither
/// early, ours at most one tick after tower's.
#[tokio::test(start_paused = true)]
async fn same_timing_as_tower_timeout_to_the_tick() {
    let wheel = wheel();
    // The timer starts at `call`, not when the service is made.
    let mut ours = TimeoutLayer::with_wheel(&wheel, ms(100)).layer(after_ms());
    let mut theirs = tower::timeout::TimeoutLayer::new(ms(100)).layer(after_ms());
    advance(ms(1_000)).await;

    let start = Instant::now();
    std::future::poll_fn(|cx| ours.poll_ready(cx))
        .await
        .unwrap();
    std::future::poll_fn(|cx| theirs.poll_ready(cx))
        .await
        .unwrap();
    let mut ours = spawn(ours.call(60_000));
    let mut theirs = spawn(theirs.call(60_000));
    assert!(ours.poll().is_pending());
    assert!(theirs.poll().is_pending());

    advance(ms(99)).await;
    assert!(ours.poll().is_pending(), "ours fired early");
    assert!(theirs.poll().is_pending(), "tower's fired early");

    advance(ms(1)).await;
    let Poll::Ready(Err(err)) = theirs.poll() else {
        panic!("tower's timeout is due at 100 ms");
    };
    assert!(err.is::<Elapsed>());

    advance(TICK).await;
    assert!(ours.is_woken(), "ours not woken within a tick of tower's");
    let Poll::Ready(Err(err)) = ours.poll() else {
        panic!("ours is due within a tick of 100 ms");
    };
    assert!(err.is::<Elapsed>(), "{err:?}");
    assert!(start.elapsed() <= ms(100) + TICK);
}

/// `TimeoutLayer::new` needs no runtime, and uses the default wheel of the
/// runtime where the request is called.
#[test]
fn new_uses_the_default_wheel_of_the_calling_runtime() {
    const LAYER: TimeoutLayer = TimeoutLayer::new(Duration::from_millis(50));
    let service = LAYER.layer(after_ms());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let err = service.oneshot(10_000).await.unwrap_err();
        assert!(err.is::<Elapsed>());
        let stats = Wheel::current().stats();
        assert_eq!((stats.registered, stats.fired), (1, 1), "{stats:?}");
    });
}

#[test]
fn send_sync() {
    fn check<T: Send + Sync>() {}
    check::<TimeoutLayer>();
    check::<Timeout<tower::util::BoxCloneSyncService<(), (), BoxError>>>();
}
