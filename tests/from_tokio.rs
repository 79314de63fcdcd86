//! `docs/from-tokio.md`, checked: one test per group of its table. Each test
//! uses tokio-wheel the way code ported from `tokio::time` does, and where the
//! table says "same", runs `tokio::time` beside it on paused time and compares.
//!
//! A wheel completes a timer at the first of its ticks at or after the
//! deadline, so "same" for a completion time means: never before tokio's, and
//! less than one tick of the wheel after it.

use std::error::Error as _;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tokio_wheel::Wheel;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The default wheel's tick: how late a wheel timer may complete.
fn tick() -> Duration {
    Wheel::current().resolution()
}

/// `ours` completed no earlier than `tokio`, and less than one tick later.
#[track_caller]
fn within_a_tick(ours: Instant, tokio: Instant) {
    assert!(ours >= tokio, "early: {:?} before tokio", tokio - ours);
    assert!(
        ours - tokio < tick(),
        "{:?} after tokio, a tick is {:?}",
        ours - tokio,
        tick()
    );
}

/// Polls `f` once, with a waker that does nothing.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

/// Runs both futures side by side and returns each one's output with the
/// instant it completed at.
async fn side_by_side<T, O>(tokio: T, ours: O) -> ((T::Output, Instant), (O::Output, Instant))
where
    T: Future,
    O: Future,
{
    tokio::join!(
        async {
            let v = tokio.await;
            (v, Instant::now())
        },
        async {
            let v = ours.await;
            (v, Instant::now())
        }
    )
}

/// The `use` line of a program written for `tokio::time`, with only the
/// crate name changed, and each item used the way tokio's docs use it.
mod ported {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::sync::oneshot;
    use tokio_wheel::{
        error::Elapsed, interval, interval_at, sleep, sleep_until, timeout, timeout_at, Duration,
        Instant, Interval, MissedTickBehavior, Sleep, Timeout,
    };

    pin_project_lite::pin_project! {
        /// tokio's "a `Sleep` in a struct" example, pinned by projection.
        pub struct HasSleep {
            #[pin]
            pub sleep: Sleep,
        }
    }

    impl Future for HasSleep {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.project().sleep.poll(cx)
        }
    }

    impl HasSleep {
        pub fn push_back(self: Pin<&mut Self>, by: Duration) {
            let deadline = Instant::now() + by;
            self.project().sleep.reset(deadline);
        }
    }

    /// The other way tokio's docs keep a `Sleep` in a struct.
    pub struct BoxedSleep {
        pub sleep: Pin<Box<Sleep>>,
    }

    /// Names `Timeout` as a return type.
    pub fn with_deadline<F: Future>(future: F) -> Timeout<F> {
        timeout(Duration::from_millis(10), future)
    }

    /// Names `Elapsed` as an error type.
    pub async fn answer_within(d: Duration) -> Result<u32, Elapsed> {
        timeout(d, async { 42 }).await
    }

    /// Names `Interval` as a field.
    pub struct Ticker {
        pub interval: Interval,
    }

    pub async fn run() {
        let start = Instant::now();

        // tokio::time::sleep's example.
        sleep(Duration::from_millis(100)).await;
        assert!(start.elapsed() >= Duration::from_millis(100));

        // tokio::time::sleep_until's example.
        let at = Instant::now() + Duration::from_millis(100);
        sleep_until(at).await;
        assert!(Instant::now() >= at);

        // tokio::time::Sleep's example: pinned, raced in `select!`, reset.
        let sleep = sleep(Duration::from_millis(10));
        tokio::pin!(sleep);
        let mut fired = 0;
        while fired < 3 {
            tokio::select! {
                () = &mut sleep => {
                    fired += 1;
                    sleep.as_mut().reset(Instant::now() + Duration::from_millis(50));
                },
            }
        }
        assert!(!sleep.is_elapsed());
        assert!(sleep.deadline() > Instant::now());

        let mut has = Box::pin(HasSleep {
            sleep: tokio_wheel::sleep(Duration::from_millis(10)),
        });
        has.as_mut().push_back(Duration::from_millis(20));
        let before = Instant::now();
        has.await;
        assert!(before.elapsed() >= Duration::from_millis(20));

        let mut boxed = BoxedSleep {
            sleep: Box::pin(tokio_wheel::sleep(Duration::from_millis(10))),
        };
        boxed.sleep.as_mut().await;
        assert!(boxed.sleep.is_elapsed());

        // tokio::time::timeout's example: nobody sends.
        let (tx, rx) = oneshot::channel::<u32>();
        assert!(timeout(Duration::from_millis(10), rx).await.is_err());
        drop(tx);

        // tokio::time::timeout_at's example.
        let (tx, rx) = oneshot::channel::<u32>();
        let res = timeout_at(Instant::now() + Duration::from_millis(10), rx).await;
        assert!(res.is_err());
        drop(tx);

        assert_eq!(with_deadline(async { 1 }).await, Ok(1));
        assert_eq!(answer_within(Duration::from_secs(1)).await, Ok(42));

        // tokio::time::interval's example: the first tick is at once.
        let mut every = interval(Duration::from_millis(10));
        let first = Instant::now();
        assert_eq!(every.tick().await, first);
        assert_eq!(every.tick().await, first + Duration::from_millis(10));
        assert_eq!(every.tick().await, first + Duration::from_millis(20));

        // tokio::time::interval_at's example.
        let start = Instant::now() + Duration::from_millis(50);
        let mut ticker = Ticker {
            interval: interval_at(start, Duration::from_millis(10)),
        };
        ticker
            .interval
            .set_missed_tick_behavior(MissedTickBehavior::Delay);
        assert_eq!(ticker.interval.tick().await, start);
        assert_eq!(
            ticker.interval.tick().await,
            start + Duration::from_millis(10)
        );
        assert_eq!(
            ticker.interval.missed_tick_behavior(),
            MissedTickBehavior::Delay
        );

        // An interval raced in `select!`, as tokio's users do.
        let mut heartbeat = interval(Duration::from_millis(30));
        heartbeat.tick().await;
        let stop = tokio_wheel::sleep(Duration::from_millis(100));
        tokio::pin!(stop);
        let mut beats = 0;
        loop {
            tokio::select! {
                _ = heartbeat.tick() => beats += 1,
                () = &mut stop => break,
            }
        }
        assert_eq!(beats, 3, "at 30, 60 and 90 ms");
    }
}

#[tokio::test(start_paused = true)]
async fn the_use_line_of_tokio_time_ported() {
    ported::run().await;
}

/// `Duration`, `Instant` and `MissedTickBehavior` are tokio's own types.
#[test]
fn reexports_are_tokios_types() {
    use std::any::TypeId;

    assert_eq!(
        TypeId::of::<tokio_wheel::Instant>(),
        TypeId::of::<tokio::time::Instant>()
    );
    assert_eq!(
        TypeId::of::<tokio_wheel::Duration>(),
        TypeId::of::<tokio::time::Duration>()
    );
    assert_eq!(
        TypeId::of::<tokio_wheel::Duration>(),
        TypeId::of::<std::time::Duration>()
    );
    assert_eq!(
        TypeId::of::<tokio_wheel::MissedTickBehavior>(),
        TypeId::of::<tokio::time::MissedTickBehavior>()
    );

    // Code that names tokio's types takes the crate's values unchanged.
    fn tokio_behavior(b: tokio::time::MissedTickBehavior) -> tokio::time::MissedTickBehavior {
        b
    }
    fn tokio_instant(i: tokio::time::Instant) -> tokio::time::Instant {
        i
    }
    assert_eq!(
        tokio_behavior(tokio_wheel::MissedTickBehavior::Skip),
        tokio::time::MissedTickBehavior::Skip
    );
    assert_eq!(
        tokio_wheel::MissedTickBehavior::default(),
        tokio::time::MissedTickBehavior::Burst
    );
    let now = tokio_wheel::Instant::now();
    assert_eq!(tokio_instant(now), now);
}

#[tokio::test(start_paused = true)]
async fn sleep_and_sleep_until_complete_with_tokios_up_to_a_tick() {
    // Deadlines on and off the wheel's grid, and one past several levels.
    for d in [1, 10, 33, 250, 999, 70_001, 400_001] {
        let ((_, t), (_, o)) =
            side_by_side(tokio::time::sleep(ms(d)), tokio_wheel::sleep(ms(d))).await;
        within_a_tick(o, t);
    }
    for d in [7, 100, 1234] {
        let at = Instant::now() + ms(d);
        let ((_, t), (_, o)) =
            side_by_side(tokio::time::sleep_until(at), tokio_wheel::sleep_until(at)).await;
        assert_eq!(t, at);
        within_a_tick(o, t);
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_already_passed_is_ready_on_the_first_poll_as_tokios() {
    let past = Instant::now();
    tokio::time::sleep(ms(5)).await;

    let mut t = Box::pin(tokio::time::sleep_until(past));
    let mut o = tokio_wheel::sleep_until(past);
    assert_eq!(poll_once(&mut t), Poll::Ready(()));
    assert_eq!(poll_once(&mut o), Poll::Ready(()));

    let mut t = Box::pin(tokio::time::sleep(Duration::ZERO));
    let mut o = tokio_wheel::sleep(Duration::ZERO);
    assert_eq!(poll_once(&mut t), Poll::Ready(()));
    assert_eq!(poll_once(&mut o), Poll::Ready(()));

    let pending = std::future::pending::<()>;
    let mut t = Box::pin(tokio::time::timeout(Duration::ZERO, pending()));
    let mut o = tokio_wheel::timeout(Duration::ZERO, pending());
    assert!(matches!(poll_once(&mut t), Poll::Ready(Err(_))));
    assert!(matches!(poll_once(&mut o), Poll::Ready(Err(_))));

    let mut t = Box::pin(tokio::time::timeout_at(past, pending()));
    let mut o = tokio_wheel::timeout_at(past, pending());
    assert!(matches!(poll_once(&mut t), Poll::Ready(Err(_))));
    assert!(matches!(poll_once(&mut o), Poll::Ready(Err(_))));
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Wakes {
    fn new() -> (std::sync::Arc<Wakes>, std::task::Waker) {
        let wakes = std::sync::Arc::new(Wakes::default());
        (wakes.clone(), wakes.clone().into())
    }

    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Runs `attempt` until one run takes less than a millisecond of the clock,
/// and returns that run's result. A due wheel timer yields at its first poll
/// only if its deadline passed less than a millisecond before (see
/// `Sleep`'s docs); a thread preempted for longer between making a timer and
/// polling it finds an older deadline, for which tokio's answer depends on
/// when its driver last ran. Such a run proves nothing either way.
fn in_under_a_millisecond<T>(mut attempt: impl FnMut() -> T) -> T {
    for _ in 0..1000 {
        let start = Instant::now();
        let out = attempt();
        if start.elapsed() < ms(1) {
            return out;
        }
    }
    panic!("no run took less than a millisecond");
}

/// What a due timer's first two polls return, and how often the first woke
/// the task: `(first is pending, woken, second is ready)`.
fn first_two_polls<F: Future + Unpin>(mut timer: F) -> (bool, usize, bool) {
    let (wakes, waker) = Wakes::new();
    let mut cx = Context::from_waker(&waker);
    let first = Pin::new(&mut timer).poll(&mut cx).is_pending();
    let woken = wakes.count();
    let second = Pin::new(&mut timer).poll(&mut cx).is_ready();
    (first, woken, second)
}

/// On a live clock tokio rounds a deadline up to its next millisecond and
/// fires it at its driver's next turn, so a timer due now is pending at its
/// first poll: `sleep(ZERO)`, a deadline just passed, `timeout(ZERO, ..)` of
/// a pending future, an interval's first tick. The wheel's yields once
/// (pending, its task woken) and completes on the next poll.
#[tokio::test]
async fn a_timer_due_now_is_pending_once_on_a_live_clock_as_tokios() {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let pending = std::future::pending::<()>;

    // Tokio's: pending at the first poll, on a current-thread runtime whose
    // driver cannot run while this task does.
    assert!(poll_once(&mut Box::pin(tokio::time::sleep(Duration::ZERO))).is_pending());
    assert!(poll_once(&mut Box::pin(tokio::time::sleep_until(Instant::now()))).is_pending());
    let mut t = Box::pin(tokio::time::timeout(Duration::ZERO, pending()));
    assert!(poll_once(&mut t).is_pending());
    assert!(tokio::time::interval(ms(100))
        .poll_tick(&mut cx)
        .is_pending());

    // The wheel's: pending once, woken, then ready.
    let once = (true, 1, true);
    let zero = in_under_a_millisecond(|| first_two_polls(tokio_wheel::sleep(Duration::ZERO)));
    assert_eq!(zero, once, "sleep(ZERO)");
    let now = in_under_a_millisecond(|| first_two_polls(tokio_wheel::sleep_until(Instant::now())));
    assert_eq!(now, once, "sleep_until(now)");
    let timeout = in_under_a_millisecond(|| {
        let (wakes, waker) = Wakes::new();
        let mut cx = Context::from_waker(&waker);
        let mut t = tokio_wheel::timeout(Duration::ZERO, pending());
        let first = Pin::new(&mut t).poll(&mut cx);
        let second = Pin::new(&mut t).poll(&mut cx);
        (first.is_pending(), wakes.count(), second)
    });
    assert!(
        matches!(timeout, (true, 1, Poll::Ready(Err(_)))),
        "timeout(ZERO)"
    );
    let tick = in_under_a_millisecond(|| {
        let (wakes, waker) = Wakes::new();
        let mut cx = Context::from_waker(&waker);
        let start = Instant::now();
        let mut every = tokio_wheel::interval(ms(100));
        let first = every.poll_tick(&mut cx);
        let second = every.poll_tick(&mut cx);
        // The instant of the first tick: when the interval was made.
        let at_start = matches!(second, Poll::Ready(t) if t >= start && t <= Instant::now());
        (first.is_pending(), wakes.count(), at_start)
    });
    assert_eq!(tick, once, "an interval's first tick");

    // A ready future still wins against a zero timeout at the first poll,
    // as with tokio, which polls it first.
    let mut t = Box::pin(tokio::time::timeout(Duration::ZERO, std::future::ready(1)));
    assert_eq!(poll_once(&mut t), Poll::Ready(Ok(1)));
    let mut o = tokio_wheel::timeout(Duration::ZERO, std::future::ready(1));
    assert_eq!(poll_once(&mut o), Poll::Ready(Ok(1)));
}

/// The case that showed the difference: a biased `select!` with an
/// interval's first tick first and a read that is already ready second. On a
/// live clock the read wins the first round with tokio, and with the wheel.
#[tokio::test]
async fn a_ready_read_beats_an_intervals_first_tick_in_a_biased_select_as_with_tokio() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (mut client, mut server) = tokio::io::duplex(64);
    let mut buf = [0; 1];
    let mut conclusive = 0;
    for _ in 0..1000 {
        client.write_all(b"x").await.unwrap();
        let mut t = tokio::time::interval(ms(1000));
        let tokio_won = tokio::select! {
            biased;
            _ = t.tick() => "tick",
            _ = server.read(&mut buf) => "read",
        };
        assert_eq!(tokio_won, "read", "tokio's interval");

        client.write_all(b"x").await.unwrap();
        let start = Instant::now();
        let mut o = tokio_wheel::interval(ms(1000));
        let ours_won = tokio::select! {
            biased;
            _ = o.tick() => "tick",
            _ = server.read(&mut buf) => "read",
        };
        if ours_won == "tick" {
            // Only a thread preempted for a millisecond or more between
            // making the interval and polling it (see `in_under_a_millisecond`):
            // then the byte is still there for the next round.
            assert!(start.elapsed() >= ms(1), "the wheel's first tick won");
            server.read_exact(&mut buf).await.unwrap();
            continue;
        }
        conclusive += 1;
        if conclusive == 20 {
            return;
        }
    }
    panic!("only {conclusive} rounds ran within a millisecond");
}

/// On paused time tokio's driver has processed the clock's every move by the
/// time a task runs again, so a timer due now is ready at its first poll,
/// and the wheel's too: the tick wins the same `select!`.
#[tokio::test(start_paused = true)]
async fn a_due_intervals_first_tick_wins_a_biased_select_on_paused_time_as_with_tokio() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (mut client, mut server) = tokio::io::duplex(64);
    let mut buf = [0; 1];
    for _ in 0..3 {
        client.write_all(b"xx").await.unwrap();
        let mut t = tokio::time::interval(ms(1000));
        let mut o = tokio_wheel::interval(ms(1000));
        let tokio_won = tokio::select! {
            biased;
            _ = t.tick() => "tick",
            _ = server.read_exact(&mut buf) => "read",
        };
        let ours_won = tokio::select! {
            biased;
            _ = o.tick() => "tick",
            _ = server.read_exact(&mut buf) => "read",
        };
        assert_eq!((tokio_won, ours_won), ("tick", "tick"));
        server.read_exact(&mut [0; 2]).await.unwrap();
        tokio::time::sleep(ms(7)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn timeout_and_timeout_at_as_tokios() {
    // The future first: a ready future wins even against a zero duration.
    assert_eq!(
        tokio::time::timeout(Duration::ZERO, async { 1 }).await,
        Ok(1)
    );
    assert_eq!(
        tokio_wheel::timeout(Duration::ZERO, async { 1 }).await,
        Ok(1)
    );

    // Any `IntoFuture`, as tokio's.
    struct Later;
    impl std::future::IntoFuture for Later {
        type Output = u8;
        type IntoFuture = std::future::Ready<u8>;
        fn into_future(self) -> Self::IntoFuture {
            std::future::ready(8)
        }
    }
    assert_eq!(tokio::time::timeout(ms(1), Later).await, Ok(8));
    assert_eq!(tokio_wheel::timeout(ms(1), Later).await, Ok(8));

    // Elapsed: at tokio's deadline, up to a tick.
    for d in [10, 45, 1000] {
        let pending = std::future::pending::<()>;
        let ((t, tt), (o, ot)) = side_by_side(
            tokio::time::timeout(ms(d), pending()),
            tokio_wheel::timeout(ms(d), pending()),
        )
        .await;
        assert!(t.is_err() && o.is_err());
        within_a_tick(ot, tt);

        let at = Instant::now() + ms(d);
        let ((t, tt), (o, ot)) = side_by_side(
            tokio::time::timeout_at(at, pending()),
            tokio_wheel::timeout_at(at, pending()),
        )
        .await;
        assert!(t.is_err() && o.is_err());
        assert_eq!(tt, at);
        within_a_tick(ot, tt);
    }

    // A future that completes before the deadline: its output, both.
    let ((t, _), (o, _)) = side_by_side(
        tokio::time::timeout(ms(100), async {
            tokio::time::sleep(ms(30)).await;
            "t"
        }),
        tokio_wheel::timeout(ms(100), async {
            tokio::time::sleep(ms(30)).await;
            "o"
        }),
    )
    .await;
    assert_eq!((t, o), (Ok("t"), Ok("o")));
}

#[tokio::test(start_paused = true)]
async fn huge_durations_saturate_to_tokios_deadline() {
    for d in [Duration::MAX, Duration::from_secs(86_400 * 365 * 40)] {
        let t = tokio::time::sleep(d);
        let o = tokio_wheel::sleep(d);
        assert_eq!(o.deadline(), t.deadline());
    }
    let mut o = tokio_wheel::timeout(Duration::MAX, std::future::pending::<()>());
    assert!(poll_once(&mut o).is_pending());
}

#[tokio::test(start_paused = true)]
async fn sleep_deadline_is_elapsed_and_reset_as_tokios() {
    let at = Instant::now() + ms(100);
    let t = tokio::time::sleep_until(at);
    let o = tokio_wheel::sleep_until(at);
    tokio::pin!(t);
    assert_eq!(o.deadline(), t.deadline());
    assert_eq!(o.deadline(), at);
    let mut o = o;

    // Never polled: not elapsed, even past the deadline.
    assert!(!t.is_elapsed() && !o.is_elapsed());

    // Polled once, then left alone past the deadline: elapsed for both.
    assert!(poll_once(&mut t).is_pending());
    assert!(poll_once(&mut o).is_pending());
    assert!(!t.is_elapsed() && !o.is_elapsed());
    tokio::time::sleep(ms(100) + 2 * tick()).await;
    assert!(t.is_elapsed() && o.is_elapsed());
    assert_eq!(poll_once(&mut t), Poll::Ready(()));
    assert_eq!(poll_once(&mut o), Poll::Ready(()));

    // Reset after completion: pending again, until the new deadline.
    let later = Instant::now() + ms(73);
    t.as_mut().reset(later);
    o.reset(later);
    assert_eq!(o.deadline(), t.deadline());
    assert!(!t.is_elapsed() && !o.is_elapsed());
    let ((_, tt), (_, ot)) = side_by_side(t.as_mut(), &mut o).await;
    assert_eq!(tt, later);
    within_a_tick(ot, tt);
    assert!(t.is_elapsed() && o.is_elapsed());

    // Reset earlier while registered and pending.
    t.as_mut().reset(Instant::now() + ms(10_000));
    o.reset(Instant::now() + ms(10_000));
    assert!(poll_once(&mut t).is_pending());
    assert!(poll_once(&mut o).is_pending());
    let sooner = Instant::now() + ms(42);
    t.as_mut().reset(sooner);
    o.reset(sooner);
    let ((_, tt), (_, ot)) = side_by_side(t.as_mut(), &mut o).await;
    assert_eq!(tt, sooner);
    within_a_tick(ot, tt);

    // Reset later while registered: completes at the new deadline, not the old.
    t.as_mut().reset(Instant::now() + ms(20));
    o.reset(Instant::now() + ms(20));
    assert!(poll_once(&mut t).is_pending());
    assert!(poll_once(&mut o).is_pending());
    let pushed = Instant::now() + ms(300);
    t.as_mut().reset(pushed);
    o.reset(pushed);
    let ((_, tt), (_, ot)) = side_by_side(t.as_mut(), &mut o).await;
    assert_eq!(tt, pushed);
    within_a_tick(ot, tt);
}

/// `reset` to the clock's instant on a live clock. A `Sleep` that has
/// completed is pending once at its next poll, as tokio's is (its first poll
/// after the reset is a first poll). One still waiting in the wheel is ready
/// at once, where tokio's is pending once: the difference `docs/from-tokio.md`
/// states in the `reset` row.
#[tokio::test]
async fn reset_to_now_on_a_live_clock() {
    let mut t = Box::pin(tokio::time::sleep(Duration::ZERO));
    t.as_mut().await;
    t.as_mut().reset(Instant::now());
    assert!(poll_once(&mut t).is_pending(), "tokio's, completed");
    let completed = in_under_a_millisecond(|| {
        let mut o = tokio_wheel::sleep_until(Instant::now() - ms(10));
        assert_eq!(poll_once(&mut o), Poll::Ready(()));
        o.reset(Instant::now());
        first_two_polls(o)
    });
    assert_eq!(completed, (true, 1, true), "the wheel's, completed");

    let mut t = Box::pin(tokio::time::sleep(ms(10_000)));
    assert!(poll_once(&mut t).is_pending());
    t.as_mut().reset(Instant::now());
    assert!(poll_once(&mut t).is_pending(), "tokio's, waiting");
    let mut o = tokio_wheel::sleep(ms(10_000));
    assert!(poll_once(&mut o).is_pending());
    o.reset(Instant::now());
    assert_eq!(poll_once(&mut o), Poll::Ready(()), "the wheel's, waiting");

    // The same through an interval whose next tick waits.
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut t = tokio::time::interval(ms(10_000));
    t.tick().await;
    assert!(t.poll_tick(&mut cx).is_pending());
    t.reset_immediately();
    assert!(t.poll_tick(&mut cx).is_pending(), "tokio's interval");
    let mut o = tokio_wheel::interval(ms(10_000));
    o.tick().await;
    assert!(o.poll_tick(&mut cx).is_pending());
    o.reset_immediately();
    assert!(o.poll_tick(&mut cx).is_ready(), "the wheel's interval");
}

#[tokio::test(start_paused = true)]
async fn sleep_is_unpin_where_tokios_needs_pinning() {
    // tokio's `Sleep` must be pinned to be polled by reference; ours need not,
    // and the pinned forms still work.
    let mut o = tokio_wheel::sleep(ms(20));
    tokio::select! {
        () = &mut o => {}
        () = tokio::time::sleep(ms(1000)) => panic!("the wheel's sleep did not complete"),
    }
    assert!(o.is_elapsed());

    let mut boxed = Box::pin(tokio_wheel::sleep(ms(20)));
    boxed.as_mut().reset(Instant::now() + ms(5));
    boxed.as_mut().await;
    assert!(boxed.is_elapsed());
}

#[tokio::test(start_paused = true)]
async fn timeout_accessors_as_tokios() {
    use tokio::sync::oneshot;

    // get_ref, get_mut, into_inner: the inner future, side by side. tokio's
    // `Timeout` is never `Unpin`, so once pinned to be polled, `get_mut` and
    // `into_inner` are out of reach: use them before.
    let (t_tx, t_rx) = oneshot::channel::<u32>();
    let (o_tx, o_rx) = oneshot::channel::<u32>();
    let mut t = tokio::time::timeout(ms(100), t_rx);
    let mut o = tokio_wheel::timeout(ms(100), o_rx);
    assert!(t.get_ref().is_empty() && o.get_ref().is_empty());
    t_tx.send(1).unwrap();
    o_tx.send(1).unwrap();
    assert!(!t.get_ref().is_empty() && !o.get_ref().is_empty());
    assert_eq!(t.get_mut().try_recv(), Ok(1));
    assert_eq!(o.get_mut().try_recv(), Ok(1));
    let (t_rx, o_rx) = (t.into_inner(), o.into_inner());
    assert!(t_rx.is_terminated() && o_rx.is_terminated());

    // Ours is `Unpin` with an `Unpin` future: the accessors work after a poll
    // too, and into_inner cancels the registered timer at once.
    let (o_tx, o_rx) = oneshot::channel::<u32>();
    let mut o = tokio_wheel::timeout(ms(10), o_rx);
    assert!(poll_once(&mut o).is_pending());
    assert_eq!(Wheel::current().pending(), 1, "the timer is registered");
    o_tx.send(2).unwrap();
    assert_eq!(o.get_mut().try_recv(), Ok(2));
    let (o_tx, o_rx) = oneshot::channel::<u32>();
    *o.get_mut() = o_rx;
    let o_rx = o.into_inner();
    assert_eq!(
        Wheel::current().pending(),
        0,
        "into_inner cancels the timer"
    );
    tokio::time::sleep(ms(50)).await;
    o_tx.send(3).unwrap();
    assert_eq!(o_rx.await, Ok(3));

    // The output type is `Result<F::Output, Elapsed>`, as tokio's.
    let o: Result<u8, tokio_wheel::error::Elapsed> = tokio_wheel::timeout(ms(1), async { 3 }).await;
    let t: Result<u8, tokio::time::error::Elapsed> = tokio::time::timeout(ms(1), async { 3 }).await;
    assert_eq!((t, o), (Ok(3), Ok(3)));
}

/// The next tick of both intervals, side by side: the instants they return
/// are equal, and ours is delivered at most a tick after tokio's.
async fn next_tick_of_both(
    t: &mut tokio::time::Interval,
    o: &mut tokio_wheel::Interval,
) -> Instant {
    let ((ti, tt), (oi, ot)) = side_by_side(t.tick(), o.tick()).await;
    assert_eq!(oi, ti, "the tick's instant");
    within_a_tick(ot, tt);
    ti
}

#[tokio::test(start_paused = true)]
async fn interval_ticks_and_accessors_as_tokios() {
    let start = Instant::now();
    let mut t = tokio::time::interval(ms(100));
    let mut o = tokio_wheel::interval(ms(100));
    assert_eq!(o.period(), t.period());
    assert_eq!(o.missed_tick_behavior(), t.missed_tick_behavior());
    assert_eq!(
        o.missed_tick_behavior(),
        tokio::time::MissedTickBehavior::Burst
    );
    for k in 0..4 {
        assert_eq!(next_tick_of_both(&mut t, &mut o).await, start + ms(100) * k);
    }

    // A period off the wheel's grid: same instants, delivered up to a tick late.
    let mut t = tokio::time::interval(ms(37));
    let mut o = tokio_wheel::interval(ms(37));
    for _ in 0..6 {
        next_tick_of_both(&mut t, &mut o).await;
    }

    // interval_at, in the future and in the past.
    for start in [Instant::now() + ms(55), Instant::now() - ms(55)] {
        let mut t = tokio::time::interval_at(start, ms(40));
        let mut o = tokio_wheel::interval_at(start, ms(40));
        assert_eq!(next_tick_of_both(&mut t, &mut o).await, start);
        for _ in 0..3 {
            next_tick_of_both(&mut t, &mut o).await;
        }
    }

    // poll_tick: the first tick is ready, the next one pending.
    let mut t = tokio::time::interval(ms(100));
    let mut o = tokio_wheel::interval(ms(100));
    let now = Instant::now();
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(t.poll_tick(&mut cx), Poll::Ready(now));
    assert_eq!(o.poll_tick(&mut cx), Poll::Ready(now));
    assert!(t.poll_tick(&mut cx).is_pending());
    assert!(o.poll_tick(&mut cx).is_pending());
    let next = std::future::poll_fn(|cx| o.poll_tick(cx)).await;
    assert_eq!(next, now + ms(100));
}

#[tokio::test(start_paused = true)]
async fn interval_resets_as_tokios() {
    let mut t = tokio::time::interval(ms(100));
    let mut o = tokio_wheel::interval(ms(100));
    next_tick_of_both(&mut t, &mut o).await;

    // reset: one period from now, off the wheel's grid.
    tokio::time::sleep(ms(33)).await;
    t.reset();
    o.reset();
    let now = Instant::now();
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now + ms(100));
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now + ms(200));

    // reset_after: `after` from now, then every period.
    tokio::time::sleep(ms(12)).await;
    t.reset_after(ms(45));
    o.reset_after(ms(45));
    let now = Instant::now();
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now + ms(45));
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now + ms(145));

    // reset_at: at the instant, then every period.
    let at = Instant::now() + ms(77);
    t.reset_at(at);
    o.reset_at(at);
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, at);
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, at + ms(100));

    // reset_immediately: the next tick is now (ours up to a tick later),
    // and the schedule goes on from it.
    tokio::time::sleep(ms(21)).await;
    t.reset_immediately();
    o.reset_immediately();
    let now = Instant::now();
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now);
    assert_eq!(next_tick_of_both(&mut t, &mut o).await, now + ms(100));
}

#[tokio::test(start_paused = true)]
async fn missed_tick_behaviors_as_tokios() {
    use tokio::time::MissedTickBehavior::{Burst, Delay, Skip};

    // Ticks every 100 ms, a stall of 350 ms after the first: the instants
    // each behaviour then yields, as offsets from the start.
    let cases: [(tokio_wheel::MissedTickBehavior, [u64; 4]); 3] = [
        (Burst, [100, 200, 300, 400]),
        (Delay, [100, 450, 550, 650]),
        (Skip, [100, 400, 500, 600]),
    ];
    for (behavior, expected) in cases {
        let start = Instant::now();
        let mut t = tokio::time::interval(ms(100));
        let mut o = tokio_wheel::interval(ms(100));
        t.set_missed_tick_behavior(behavior);
        o.set_missed_tick_behavior(behavior);
        assert_eq!(o.missed_tick_behavior(), behavior);
        next_tick_of_both(&mut t, &mut o).await;
        tokio::time::sleep(ms(350)).await;
        for (i, offset) in expected.into_iter().enumerate() {
            let got = next_tick_of_both(&mut t, &mut o).await;
            assert_eq!(got, start + ms(offset), "{behavior:?}, tick {i}");
        }
        // The next case starts on the wheel's grid again.
        tokio::time::sleep_until(start + ms(1000)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn interval_is_a_stream_where_tokio_needs_interval_stream() {
    use futures::StreamExt;

    // tokio: `IntervalStream::new(interval)`; ours is a `Stream` itself, of
    // the same instants as tokio's ticks.
    let mut t = tokio::time::interval(ms(100));
    let o = tokio_wheel::interval(ms(100));
    let ((tokio_ticks, tt), (ours, ot)) = side_by_side(
        async {
            let mut v = Vec::new();
            for _ in 0..4 {
                v.push(t.tick().await);
            }
            v
        },
        o.take(4).collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(ours, tokio_ticks);
    within_a_tick(ot, tt);

    fn is_stream<S: futures::Stream<Item = Instant> + Unpin>(_: &S) {}
    is_stream(&tokio_wheel::interval(ms(1)));
}

#[tokio::test(start_paused = true)]
async fn elapsed_as_tokios() {
    let pending = std::future::pending::<()>;
    let t = tokio::time::timeout(ms(1), pending()).await.unwrap_err();
    let o = tokio_wheel::timeout(ms(1), pending()).await.unwrap_err();

    assert_eq!(o.to_string(), t.to_string());
    assert_eq!(o.to_string(), "deadline has elapsed");
    assert_eq!(format!("{o:?}"), format!("{t:?}"));
    assert!(o.source().is_none() && t.source().is_none());
    let again = tokio_wheel::timeout(ms(1), pending()).await.unwrap_err();
    assert_eq!(o, again);
    // Ours is also `Copy` (and so `Clone`) and `Hash`; tokio's is neither.
    let copied = o;
    assert_eq!(copied, o.clone());
    let mut set = std::collections::HashSet::new();
    set.insert(o);
    assert!(set.contains(&again));

    // Into `std::io::Error` of kind `TimedOut`, with `?` too.
    let t_io: std::io::Error = t.into();
    let o_io: std::io::Error = o.into();
    assert_eq!(o_io.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(o_io.kind(), t_io.kind());
    // The same `io::Error` as tokio's: a bare kind, with the kind's text.
    assert!(t_io.get_ref().is_none() && o_io.get_ref().is_none());
    assert_eq!(o_io.to_string(), t_io.to_string());

    async fn io_op() -> std::io::Result<()> {
        tokio_wheel::timeout(ms(1), std::future::pending::<()>()).await?;
        Ok(())
    }
    assert_eq!(
        io_op().await.unwrap_err().kind(),
        std::io::ErrorKind::TimedOut
    );

    // Into a boxed error, as any `std::error::Error`.
    async fn boxed() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        tokio_wheel::timeout(ms(1), std::future::pending::<()>()).await?;
        Ok(())
    }
    let err = boxed().await.unwrap_err();
    assert!(err.is::<tokio_wheel::error::Elapsed>());
}

#[test]
fn auto_traits_at_least_tokios() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    fn unpin<T: Unpin>() {}
    type BoxFutureSync = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;
    type BoxFutureSend = Pin<Box<dyn Future<Output = ()> + Send>>;

    // What tokio's own tests assert of its types...
    send_sync::<tokio::time::Sleep>();
    send_sync::<tokio::time::Timeout<BoxFutureSync>>();
    send::<tokio::time::Timeout<BoxFutureSend>>();
    send_sync::<tokio::time::Interval>();
    unpin::<tokio::time::Interval>();
    send_sync::<tokio::time::error::Elapsed>();
    unpin::<tokio::time::error::Elapsed>();

    // ...holds of ours.
    send_sync::<tokio_wheel::Sleep>();
    send_sync::<tokio_wheel::Timeout<BoxFutureSync>>();
    send::<tokio_wheel::Timeout<BoxFutureSend>>();
    send_sync::<tokio_wheel::Interval>();
    unpin::<tokio_wheel::Interval>();
    send_sync::<tokio_wheel::error::Elapsed>();
    unpin::<tokio_wheel::error::Elapsed>();

    // And more: tokio's `Sleep` and `Timeout` are never `Unpin`.
    unpin::<tokio_wheel::Sleep>();
    unpin::<tokio_wheel::Timeout<BoxFutureSend>>();
    unpin::<tokio_wheel::Timeout<std::future::Ready<()>>>();
}

#[tokio::test(start_paused = true)]
async fn futures_of_the_methods_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let mut o = tokio_wheel::interval(ms(10));
    is_send(&o.tick());
    is_send(&tokio_wheel::sleep(ms(1)));
    is_send(&tokio_wheel::timeout(ms(1), async {}));
    // Spawned on a multi-thread runtime's `spawn`, which requires `Send`.
    let handle = tokio::spawn(async move {
        o.tick().await;
        tokio_wheel::sleep(ms(1)).await;
    });
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn debug_for_every_type() {
    let sleep = tokio_wheel::sleep(ms(5));
    assert!(format!("{sleep:?}").starts_with("Sleep"));
    let timeout = tokio_wheel::timeout(ms(5), std::future::ready(1));
    assert!(format!("{timeout:?}").starts_with("Timeout"));
    let interval = tokio_wheel::interval(ms(5));
    assert!(format!("{interval:?}").starts_with("Interval"));
    let elapsed = tokio_wheel::timeout(ms(1), std::future::pending::<()>())
        .await
        .unwrap_err();
    assert_eq!(format!("{elapsed:?}"), "Elapsed(())");
}

/// The text of a panic's payload.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .unwrap_or_default(),
    }
}

#[test]
fn outside_a_runtime_both_panic_when_the_timer_is_made() {
    use std::panic::catch_unwind;

    assert!(catch_unwind(|| drop(tokio::time::sleep(ms(1)))).is_err());
    assert!(catch_unwind(|| drop(tokio_wheel::sleep(ms(1)))).is_err());
    assert!(catch_unwind(|| drop(tokio::time::timeout(ms(1), async {}))).is_err());
    assert!(catch_unwind(|| drop(tokio_wheel::timeout(ms(1), async {}))).is_err());
    assert!(catch_unwind(|| drop(tokio::time::interval(ms(1)))).is_err());
    assert!(catch_unwind(|| drop(tokio_wheel::interval(ms(1)))).is_err());
}

#[test]
fn a_runtime_without_timers_panics_with_tokios_message_at_the_first_pending_poll() {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _in_runtime = rt.enter();
    let tokio_msg = panic_message(catch_unwind(|| drop(tokio::time::sleep(ms(1)))).unwrap_err());
    assert!(tokio_msg.contains("timers are disabled"), "{tokio_msg}");

    // Made without a panic; the first poll that must register panics.
    let mut sleep = tokio_wheel::sleep(ms(1));
    let ours = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep)));
    assert_eq!(panic_message(ours.unwrap_err()), tokio_msg);

    // A timeout whose future is ready never needs the timer.
    let mut ready = tokio_wheel::timeout(ms(1), std::future::ready(5));
    assert_eq!(poll_once(&mut ready), Poll::Ready(Ok(5)));
}

/// With the feature `test-util`, the paused-time controls port too.
#[cfg(feature = "test-util")]
#[tokio::test]
async fn paused_time_controls_are_reexported() {
    use tokio_wheel::{advance, pause, resume, sleep, Instant};
    pause();
    let start = Instant::now();
    let mut t = tokio_test::task::spawn(sleep(ms(100)));
    assert!(t.poll().is_pending());
    advance(ms(100)).await;
    assert!(t.is_woken());
    assert!(t.poll().is_ready());
    assert_eq!(start.elapsed(), ms(100));
    resume();
}
