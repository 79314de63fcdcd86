//! `Timeout`: which side wins, what it costs the wheel, and `Elapsed`.

mod common;

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::poll;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_wheel::error::Elapsed;
use tokio_wheel::Wheel;

use common::ms;

fn wheel() -> Wheel {
    Wheel::builder().tick(ms(10)).slots(64).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn ok_when_the_future_finishes_first() {
    let t0 = Instant::now();
    let wheel = wheel();
    let res = wheel
        .timeout(ms(50), async {
            tokio::time::sleep(ms(20)).await;
            7
        })
        .await;
    assert_eq!(res, Ok(7));
    assert_eq!(
        Instant::now(),
        t0 + ms(20),
        "the timeout delayed the result"
    );
    assert_eq!(wheel.pending(), 0, "the timer outlived its timeout");
    let stats = wheel.stats();
    assert_eq!((stats.registered, stats.cancelled, stats.fired), (1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn err_when_the_deadline_passes_first() {
    let t0 = Instant::now();
    let wheel = wheel();
    let (_tx, rx) = oneshot::channel::<()>();
    let res = wheel.timeout(ms(25), rx).await;
    assert!(res.is_err(), "{res:?}");
    assert_eq!(
        Instant::now(),
        t0 + ms(30),
        "fires at the first tick at or after"
    );

    let t1 = Instant::now();
    let res = wheel
        .timeout_at(t1 + ms(40), std::future::pending::<u8>())
        .await;
    assert!(res.is_err());
    assert_eq!(Instant::now(), t1 + ms(40));

    let slow = async {
        tokio::time::sleep(ms(100)).await;
        1
    };
    let t2 = Instant::now();
    assert!(wheel.timeout(ms(60), slow).await.is_err());
    assert_eq!(Instant::now(), t2 + ms(60));
    assert_eq!(wheel.pending(), 0);
    assert_eq!(wheel.stats().fired, 3);
}

/// The inner future is polled first: when both are ready in the same poll,
/// the result wins.
#[tokio::test(start_paused = true)]
async fn ok_when_both_are_ready_at_the_same_tick() {
    let wheel = wheel();
    let inner = wheel.sleep(ms(25));
    let res = wheel.timeout(ms(25), inner).await;
    assert_eq!(res, Ok(()));
}

#[tokio::test(start_paused = true)]
async fn a_ready_future_never_registers_a_timer() {
    let wheel = wheel();
    assert_eq!(wheel.timeout(ms(10), async { 1 }).await, Ok(1));
    assert_eq!(
        wheel.timeout(Duration::ZERO, std::future::ready("x")).await,
        Ok("x")
    );
    let (tx, rx) = oneshot::channel();
    tx.send(5u8).unwrap();
    assert_eq!(
        wheel.timeout(Duration::from_secs(3600), rx).await,
        Ok(Ok(5))
    );
    assert_eq!(
        wheel.timeout_at(Instant::now() + ms(30), async { 2 }).await,
        Ok(2)
    );
    let stats = wheel.stats();
    assert_eq!(stats.registered, 0, "{stats:?}");
    assert_eq!(stats.driver_starts, 0, "{stats:?}");
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_zero_timeout_on_a_pending_future_elapses_at_once() {
    let wheel = wheel();
    let t0 = Instant::now();
    let res = wheel
        .timeout(Duration::ZERO, std::future::pending::<()>())
        .await;
    assert!(res.is_err());
    assert_eq!(Instant::now(), t0);
    assert_eq!(wheel.stats().registered, 0);
}

#[tokio::test(start_paused = true)]
async fn into_inner_releases_the_timer() {
    let wheel = wheel();
    let (tx, rx) = oneshot::channel::<u32>();
    let mut t = wheel.timeout(Duration::from_secs(5), rx);
    assert!(poll!(&mut t).is_pending());
    assert_eq!(wheel.pending(), 1);
    let rx = t.into_inner();
    assert_eq!(wheel.pending(), 0, "into_inner kept the timer");
    assert_eq!(wheel.stats().cancelled, 1);
    tx.send(9).unwrap();
    assert_eq!(rx.await, Ok(9));

    // Dropping a pending timeout releases it too.
    let mut t = wheel.timeout(Duration::from_secs(5), std::future::pending::<()>());
    assert!(poll!(&mut t).is_pending());
    assert_eq!(wheel.pending(), 1);
    drop(t);
    assert_eq!(wheel.pending(), 0);
    assert_eq!(wheel.stats().cancelled, 2);
}

/// A future that is ready on its `polls_left`-th poll.
#[derive(Debug)]
struct Countdown {
    polls_left: u32,
}

impl Future for Countdown {
    type Output = &'static str;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.polls_left == 0 {
            return Poll::Ready("done");
        }
        self.polls_left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[tokio::test(start_paused = true)]
async fn get_ref_get_mut_and_into_inner_reach_the_future() {
    let wheel = wheel();
    let mut t = wheel.timeout(ms(100), Countdown { polls_left: 1000 });
    assert_eq!(t.get_ref().polls_left, 1000);
    assert!(poll!(&mut t).is_pending());
    assert_eq!(t.get_ref().polls_left, 999);
    t.get_mut().polls_left = 0;
    assert_eq!(t.get_ref().polls_left, 0);
    assert_eq!(poll!(&mut t), Poll::Ready(Ok("done")));

    let t = wheel.timeout(ms(100), Countdown { polls_left: 3 });
    let inner = t.into_inner();
    assert_eq!(inner.polls_left, 3);
    assert_eq!(inner.await, "done");
}

/// `timeout` takes any `IntoFuture`.
struct Later(u8);

impl IntoFuture for Later {
    type Output = u8;
    type IntoFuture = futures::future::Ready<u8>;

    fn into_future(self) -> Self::IntoFuture {
        futures::future::ready(self.0)
    }
}

#[tokio::test(start_paused = true)]
async fn accepts_into_future() {
    let wheel = wheel();
    assert_eq!(wheel.timeout(ms(10), Later(4)).await, Ok(4));
    assert_eq!(wheel.timeout_at(Instant::now(), Later(5)).await, Ok(5));
}

#[tokio::test(start_paused = true)]
async fn elapsed_is_an_error_that_converts_to_io_timed_out() {
    let wheel = wheel();
    let err: Elapsed = wheel
        .timeout(ms(10), std::future::pending::<()>())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "deadline has elapsed");
    let dyn_err: &dyn std::error::Error = &err;
    assert!(dyn_err.source().is_none());

    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    // The same `io::Error` as tokio's `Elapsed` converts into: the bare kind.
    let tokio_io: std::io::Error = std::io::ErrorKind::TimedOut.into();
    assert_eq!(io.to_string(), tokio_io.to_string());
    assert!(io.into_inner().is_none());

    async fn with_question_mark(wheel: &Wheel) -> std::io::Result<()> {
        wheel.timeout(ms(10), std::future::pending::<()>()).await?;
        Ok(())
    }
    let e = with_question_mark(&wheel).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn timeout_on_an_unpolled_future_costs_nothing() {
    let wheel = wheel();
    let t = wheel.timeout(ms(10), std::future::pending::<()>());
    tokio::time::sleep(ms(100)).await;
    assert_eq!(wheel.pending(), 0);
    drop(t);
    assert_eq!(wheel.stats().registered, 0);
    // Made, then first polled once its deadline and tick have passed: it
    // registers like any timer (the clock was read when it was made, not
    // again), and elapses without the clock moving.
    let t = wheel.timeout(ms(10), std::future::pending::<()>());
    tokio::time::advance(ms(10)).await;
    let polled = Instant::now();
    assert!(t.await.is_err());
    assert_eq!(Instant::now(), polled);
    assert_eq!(wheel.stats().registered, 1);
}
