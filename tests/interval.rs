//! `Interval`: when ticks complete and what they return, the three
//! `MissedTickBehavior`s (checked against `tokio::time::interval` in the same
//! situations), resets, accessors, the `Stream` impl and the free functions.

mod common;

use std::future::poll_fn;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use tokio_wheel::{Interval, MissedTickBehavior, Wheel};

use common::{first_tick_at_or_after, ms, panic_message, paused_current_thread, tick_wheel};

/// Polls the interval once, without waiting.
async fn poll_tick(interval: &mut Interval) -> Poll<Instant> {
    poll_fn(|cx| Poll::Ready(interval.poll_tick(cx))).await
}

#[test]
fn interval_is_unpin_send_sync_and_a_stream() {
    fn assert_unpin_send_sync<T: Unpin + Send + Sync + std::fmt::Debug>() {}
    fn assert_stream<S: futures::Stream<Item = Instant>>() {}
    assert_unpin_send_sync::<Interval>();
    assert_stream::<Interval>();
    assert_eq!(MissedTickBehavior::default(), MissedTickBehavior::Burst);
}

#[tokio::test(start_paused = true)]
async fn first_tick_completes_at_once_and_returns_start() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let mut every = wheel.interval(ms(100));
    assert_eq!(poll_tick(&mut every).await, Poll::Ready(t0), "first tick");
    assert_eq!(Instant::now(), t0, "no time passed");
    assert!(
        poll_tick(&mut every).await.is_pending(),
        "second tick waits"
    );

    // interval_at: the first tick is at `start` (on a tick here), not now.
    let start = t0 + ms(500);
    let mut later = wheel.interval_at(start, ms(100));
    assert!(poll_tick(&mut later).await.is_pending());
    assert_eq!(later.tick().await, start);
    assert_eq!(Instant::now(), start);
    assert_eq!(later.tick().await, start + ms(100));
    assert_eq!(Instant::now(), start + ms(100));

    // A `start` between ticks completes at the next tick, returning `start`.
    let odd = Instant::now() + ms(33);
    let mut odd_iv = wheel.interval_at(odd, ms(100));
    assert_eq!(odd_iv.tick().await, odd);
    assert_eq!(Instant::now(), first_tick_at_or_after(t0, ms(10), odd));
}

/// Tick `k` returns `start + k * period` and completes at the first wheel
/// tick at or after it, for a start and period that are not tick-aligned.
#[tokio::test(start_paused = true)]
async fn ticks_complete_at_the_first_wheel_tick_at_or_after_each_instant() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 16);
    let start = t0 + ms(7);
    let period = ms(33);
    let mut every = wheel.interval_at(start, period);
    for k in 0..40u32 {
        let due = start + period * k;
        let got = every.tick().await;
        assert_eq!(got, due, "tick {k} returns its scheduled instant");
        assert_eq!(
            Instant::now(),
            first_tick_at_or_after(t0, ms(10), due),
            "tick {k} completes at the first wheel tick at or after {:?}",
            due - t0
        );
    }
}

/// Rounding up to the wheel's tick (up to 9 ms late on a 10 ms wheel, more
/// than Tokio's 5 ms slack) is not a miss: a `Delay` interval keeps its
/// schedule over 100 periods whose instants are not tick-aligned.
#[tokio::test(start_paused = true)]
async fn tick_rounding_does_not_shift_a_delay_interval() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let start = t0 + ms(3);
    let period = ms(33);
    let mut every = wheel.interval_at(start, period);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut max_late = Duration::ZERO;
    for k in 0..=100u32 {
        let due = start + period * k;
        assert_eq!(every.tick().await, due, "tick {k} drifted");
        let late = Instant::now() - due;
        assert!(late < ms(10), "tick {k} {late:?} late");
        max_late = max_late.max(late);
    }
    assert_eq!(
        Instant::now(),
        first_tick_at_or_after(t0, ms(10), start + period * 100)
    );
    assert!(
        max_late > ms(5),
        "the test needs lateness over 5 ms: {max_late:?}"
    );
}

/// What one run of the miss scenario saw: per tick, (returned, delivered)
/// as offsets from the start.
type Trace = Vec<(Duration, Duration)>;

/// Ticks `n` times; after tick `stall_after`, the loop body stalls on Tokio's
/// timer until `stall_until` (an offset from the start), missing ticks.
macro_rules! miss_scenario {
    ($interval:expr, $t0:expr, $n:expr, $stall_after:expr, $stall_until:expr) => {{
        let mut iv = $interval;
        let t0: Instant = $t0;
        let mut trace: Trace = Vec::new();
        for i in 0..$n {
            let got = iv.tick().await;
            trace.push((got - t0, Instant::now() - t0));
            if i == $stall_after {
                tokio::time::sleep_until(t0 + $stall_until).await;
            }
        }
        trace
    }};
}

async fn wheel_trace(behavior: MissedTickBehavior, period: Duration, stall: Duration) -> Trace {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 32);
    let mut iv = wheel.interval(period);
    iv.set_missed_tick_behavior(behavior);
    assert_eq!(iv.missed_tick_behavior(), behavior);
    miss_scenario!(iv, t0, 10, 1, stall)
}

async fn tokio_trace(behavior: MissedTickBehavior, period: Duration, stall: Duration) -> Trace {
    let t0 = Instant::now();
    let mut iv = tokio::time::interval(period);
    iv.set_missed_tick_behavior(match behavior {
        MissedTickBehavior::Burst => tokio::time::MissedTickBehavior::Burst,
        MissedTickBehavior::Delay => tokio::time::MissedTickBehavior::Delay,
        MissedTickBehavior::Skip => tokio::time::MissedTickBehavior::Skip,
    });
    miss_scenario!(iv, t0, 10, 1, stall)
}

fn offsets(ms_pairs: &[(u64, u64)]) -> Trace {
    ms_pairs.iter().map(|&(a, b)| (ms(a), ms(b))).collect()
}

#[tokio::test(start_paused = true)]
async fn burst_fires_missed_ticks_at_once_and_keeps_the_schedule() {
    let trace = wheel_trace(MissedTickBehavior::Burst, ms(100), ms(350)).await;
    let expected = offsets(&[
        (0, 0),
        (100, 100),
        // Stalled until 350: the missed ticks come at once...
        (200, 350),
        (300, 350),
        // ...and the schedule is the original one.
        (400, 400),
        (500, 500),
        (600, 600),
        (700, 700),
        (800, 800),
        (900, 900),
    ]);
    assert_eq!(trace, expected);
}

#[tokio::test(start_paused = true)]
async fn delay_shifts_the_schedule_to_the_late_delivery() {
    let trace = wheel_trace(MissedTickBehavior::Delay, ms(100), ms(350)).await;
    let expected = offsets(&[
        (0, 0),
        (100, 100),
        (200, 350),
        // next = delivered + period
        (450, 450),
        (550, 550),
        (650, 650),
        (750, 750),
        (850, 850),
        (950, 950),
        (1050, 1050),
    ]);
    assert_eq!(trace, expected);
}

#[tokio::test(start_paused = true)]
async fn skip_goes_on_with_the_next_tick_of_the_original_schedule() {
    let trace = wheel_trace(MissedTickBehavior::Skip, ms(100), ms(350)).await;
    let expected = offsets(&[
        (0, 0),
        (100, 100),
        (200, 350),
        // 300 is skipped: next is the schedule's first instant after 350.
        (400, 400),
        (500, 500),
        (600, 600),
        (700, 700),
        (800, 800),
        (900, 900),
        (1000, 1000),
    ]);
    assert_eq!(trace, expected);

    // Not tick-aligned: the period is 33 ms, the stall ends at 200 ms. The
    // late tick (due 66) is delivered at 200; next is 231 = 7 * 33, the
    // schedule's first instant after 200, delivered at the 240 ms wheel tick.
    let trace = wheel_trace(MissedTickBehavior::Skip, ms(33), ms(200)).await;
    assert_eq!(
        &trace[..5],
        &offsets(&[(0, 0), (33, 40), (66, 200), (231, 240), (264, 270)])[..]
    );
    for (i, (returned, _)) in trace.iter().enumerate() {
        assert_eq!(
            returned.as_millis() % 33,
            0,
            "tick {i} left the original schedule: {trace:?}"
        );
    }
}

/// A miss made by not polling a registered tick at all (the task is busy
/// elsewhere while time moves on), rather than by a slow loop body.
#[tokio::test(start_paused = true)]
async fn a_registered_tick_left_unpolled_is_a_miss() {
    for (behavior, expect_next) in [
        (MissedTickBehavior::Burst, 200),
        (MissedTickBehavior::Delay, 550),
        (MissedTickBehavior::Skip, 500),
    ] {
        let t0 = Instant::now();
        let wheel = tick_wheel(10, 32);
        let mut iv = wheel.interval(ms(100));
        iv.set_missed_tick_behavior(behavior);
        assert_eq!(iv.tick().await, t0);
        assert!(poll_tick(&mut iv).await.is_pending(), "registered for 100");
        tokio::time::advance(ms(450)).await;
        assert_eq!(iv.tick().await, t0 + ms(100), "{behavior:?}");
        assert_eq!(Instant::now(), t0 + ms(450));
        assert_eq!(iv.tick().await, t0 + ms(expect_next), "{behavior:?}");
    }
}

/// The wheel's interval returns the same instants as `tokio::time::interval`
/// when ticks are missed, and delivers each at the first wheel tick at or
/// after Tokio's delivery.
#[tokio::test(start_paused = true)]
async fn missed_ticks_match_tokio_interval() {
    let behaviors = [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ];
    for behavior in behaviors {
        for (period, stall) in [(100, 350), (100, 300), (33, 350), (70, 1000), (250, 990)] {
            let (period, stall) = (ms(period), ms(stall));
            let ours = wheel_trace(behavior, period, stall).await;
            let theirs = tokio_trace(behavior, period, stall).await;
            let what = format!("{behavior:?}, period {period:?}, stall until {stall:?}");
            let returned = |t: &Trace| t.iter().map(|p| p.0).collect::<Vec<_>>();
            assert_eq!(returned(&ours), returned(&theirs), "{what}");
            let origin = Instant::now();
            for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
                let rounded = first_tick_at_or_after(origin, ms(10), origin + t.1) - origin;
                assert_eq!(o.1, rounded, "{what}: delivery of tick {i}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn reset_reset_at_and_reset_immediately() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 32);
    let mut iv = wheel.interval(ms(100));
    assert_eq!(iv.tick().await, t0);

    // reset: next is one period from now.
    tokio::time::sleep(ms(30)).await;
    iv.reset();
    assert_eq!(iv.tick().await, t0 + ms(130));
    assert_eq!(Instant::now(), t0 + ms(130));
    assert_eq!(iv.tick().await, t0 + ms(230));

    // reset_immediately: next is now, at once; then a period from now.
    tokio::time::sleep(ms(30)).await;
    iv.reset_immediately();
    assert_eq!(poll_tick(&mut iv).await, Poll::Ready(t0 + ms(260)));
    assert_eq!(iv.tick().await, t0 + ms(360));
    assert_eq!(Instant::now(), t0 + ms(360));

    // reset_at: next at the deadline (rounded up to a tick for delivery),
    // then every period after it.
    iv.reset_at(t0 + ms(505));
    assert_eq!(iv.tick().await, t0 + ms(505));
    assert_eq!(Instant::now(), t0 + ms(510));
    assert_eq!(iv.tick().await, t0 + ms(605));
    assert_eq!(Instant::now(), t0 + ms(610));

    // reset_at while the next tick is registered in the wheel (705): earlier...
    assert!(poll_tick(&mut iv).await.is_pending());
    assert_eq!(wheel.pending(), 1);
    iv.reset_at(t0 + ms(655));
    assert_eq!(iv.tick().await, t0 + ms(655));
    assert_eq!(Instant::now(), t0 + ms(660));

    // ...and later (registered for 755, moved to 900): never at 755.
    assert!(poll_tick(&mut iv).await.is_pending());
    iv.reset_at(t0 + ms(900));
    assert_eq!(iv.tick().await, t0 + ms(900));
    assert_eq!(Instant::now(), t0 + ms(900));

    // reset on a registered tick, with a pending poll in between.
    assert!(poll_tick(&mut iv).await.is_pending());
    tokio::time::sleep(ms(50)).await;
    iv.reset();
    assert_eq!(iv.tick().await, t0 + ms(1050));
    assert_eq!(Instant::now(), t0 + ms(1050));
}

#[tokio::test(start_paused = true)]
async fn accessors() {
    let wheel = tick_wheel(10, 32);
    let mut iv = wheel.interval(ms(250));
    assert_eq!(iv.period(), ms(250));
    assert_eq!(iv.missed_tick_behavior(), MissedTickBehavior::Burst);
    for b in [
        MissedTickBehavior::Skip,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Burst,
    ] {
        iv.set_missed_tick_behavior(b);
        assert_eq!(iv.missed_tick_behavior(), b);
    }
    let free = tokio_wheel::interval(ms(40));
    assert_eq!(free.period(), ms(40));
    assert_eq!(free.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert!(format!("{iv:?}").contains("Interval"));
}

#[tokio::test(start_paused = true)]
async fn interval_is_a_stream_of_tick_instants() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 32);
    let ticks: Vec<Instant> = wheel.interval(ms(100)).take(5).collect().await;
    let expected: Vec<Instant> = (0..5).map(|k| t0 + ms(100) * k).collect();
    assert_eq!(ticks, expected);
    assert_eq!(Instant::now(), t0 + ms(400));

    // By reference, with other stream combinators.
    let mut iv = wheel.interval_at(t0 + ms(1005), ms(50));
    let offsets: Vec<Duration> = (&mut iv).take(3).map(|t| t - t0).collect().await;
    assert_eq!(offsets, [ms(1005), ms(1055), ms(1105)]);
    assert_eq!(Instant::now(), t0 + ms(1110));
    assert_eq!(iv.next().await, Some(t0 + ms(1155)));
}

#[test]
fn zero_period_panics_with_a_message() {
    let wheel = Wheel::new();
    let err = catch_unwind(AssertUnwindSafe(|| wheel.interval(Duration::ZERO)))
        .expect_err("a zero period must panic");
    let msg = panic_message(&*err);
    assert!(msg.contains("period") && msg.contains("non-zero"), "{msg}");

    let err = catch_unwind(AssertUnwindSafe(|| {
        wheel.interval_at(Instant::now(), Duration::ZERO)
    }))
    .expect_err("a zero period must panic");
    assert!(panic_message(&*err).contains("non-zero"));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let err = catch_unwind(|| tokio_wheel::interval(Duration::ZERO)).expect_err("free fn");
        assert!(panic_message(&*err).contains("non-zero"));
        let err = catch_unwind(|| tokio_wheel::interval_at(Instant::now(), Duration::ZERO))
            .expect_err("free fn");
        assert!(panic_message(&*err).contains("non-zero"));
    });
}

#[tokio::test(start_paused = true)]
async fn free_functions_interval_and_interval_at() {
    let t0 = Instant::now();
    let mut iv = tokio_wheel::interval(ms(100));
    for k in 0..4u32 {
        assert_eq!(iv.tick().await, t0 + ms(100) * k);
        assert_eq!(Instant::now(), t0 + ms(100) * k);
    }
    // It ran on the runtime's default wheel.
    let default = Wheel::current();
    assert!(default.stats().fired >= 3, "{:?}", default.stats());

    let start = Instant::now() + ms(250);
    let mut at = tokio_wheel::interval_at(start, ms(1000));
    assert!(
        poll_tick(&mut at).await.is_pending(),
        "first tick is at start"
    );
    assert_eq!(at.tick().await, start);
    assert_eq!(Instant::now(), start);
    assert_eq!(at.tick().await, start + ms(1000));
    assert_eq!(Instant::now(), start + ms(1000));
}

/// A tick taken leaves nothing registered until the interval is polled
/// again, as with `tokio::time::Interval` (tokio #5551): a task that takes a
/// tick and then waits on something else is not woken at the next tick, and
/// whichever task polls next is the one woken.
#[tokio::test(start_paused = true)]
async fn a_taken_tick_registers_nothing_until_the_next_poll() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 32);
    let mut iv = wheel.interval(ms(100));
    assert_eq!(iv.tick().await, t0, "the first tick completes at once");

    let mut first = tokio_test::task::spawn(());
    assert!(first.enter(|cx, _| iv.poll_tick(cx)).is_pending());
    assert_eq!(wheel.stats().pending, 1);
    tokio::time::advance(ms(100)).await;
    assert!(first.is_woken());
    let tick = first.enter(|cx, _| iv.poll_tick(cx));
    assert_eq!(tick, Poll::Ready(t0 + ms(100)));
    let stats = wheel.stats();
    assert_eq!((stats.registered, stats.fired, stats.pending), (1, 1, 0));

    // Not polled: not woken at the next tick, nor the one after.
    tokio::time::advance(ms(250)).await;
    assert!(!first.is_woken(), "woken by a tick it did not wait for");
    assert_eq!(wheel.stats().pending, 0);

    // Another task polls: the tick at 200, due since, registers and comes
    // at the driver's next pass (see `Sleep`'s "The first poll"), then the
    // one at 300 at once (`Burst`), and the one after wakes that task only.
    let mut second = tokio_test::task::spawn(());
    assert!(second.enter(|cx, _| iv.poll_tick(cx)).is_pending());
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    assert!(second.is_woken());
    let tick = second.enter(|cx, _| iv.poll_tick(cx));
    assert_eq!(tick, Poll::Ready(t0 + ms(200)));
    let tick = second.enter(|cx, _| iv.poll_tick(cx));
    assert_eq!(tick, Poll::Ready(t0 + ms(300)));
    assert!(second.enter(|cx, _| iv.poll_tick(cx)).is_pending());
    tokio::time::advance(ms(100)).await;
    assert!(second.is_woken());
    assert!(!first.is_woken());
    assert_eq!(
        second.enter(|cx, _| iv.poll_tick(cx)),
        Poll::Ready(t0 + ms(400))
    );
}

/// A period shorter than the wheel's tick: the next tick falls in the one
/// the wheel has just fired, so it completes at once, and ticks come in
/// bursts, each returning its scheduled instant, never before it.
#[tokio::test(start_paused = true)]
async fn a_period_shorter_than_the_wheels_tick_delivers_bursts() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 16);
    let period = ms(3);
    let mut every = wheel.interval_at(t0 + ms(1), period);
    for k in 0..30u32 {
        let due = t0 + ms(1) + period * k;
        assert_eq!(every.tick().await, due, "tick {k}");
        assert_eq!(
            Instant::now(),
            first_tick_at_or_after(t0, ms(10), due),
            "tick {k} completes at the first wheel tick at or after it"
        );
    }
}

/// One step of [`ticks_follow_their_schedule_never_early_never_lost`].
#[derive(Debug, Clone)]
enum Op {
    /// Moves the paused clock on by this many ms.
    Advance(u64),
    /// Polls the interval from task A (`false`) or task B (`true`).
    Poll(bool),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        2 => (0u64..=60).prop_map(Op::Advance),
        3 => any::<bool>().prop_map(Op::Poll),
    ]
}

fn behavior(i: u8) -> MissedTickBehavior {
    [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ][usize::from(i % 3)]
}

/// The tick after one due at `due` and delivered at `delivered`, as the
/// docs of `Interval` and `MissedTickBehavior` give it: one period on,
/// unless delivered more than the wheel's tick plus 5 ms late.
fn next_due(
    behavior: MissedTickBehavior,
    due: Instant,
    delivered: Instant,
    period: Duration,
    tick: Duration,
) -> Instant {
    let late = delivered - due;
    if late <= tick + ms(5) {
        return due + period;
    }
    match behavior {
        MissedTickBehavior::Burst => due + period,
        MissedTickBehavior::Delay => delivered + period,
        _ => {
            let behind = late.as_nanos() % period.as_nanos();
            delivered + period - Duration::from_nanos(behind as u64)
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        // PROPTEST_CASES for a deeper run.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(128),
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Random polls from two tasks and moves of the paused clock, on small
    /// wheels: every tick an interval returns is the one its schedule says
    /// (the first at `start`, each next one period on, or as its
    /// `MissedTickBehavior` says after a missed one), is returned no earlier
    /// than its instant, and by the first tick of the wheel at or after it;
    /// and the last task to get `Pending` is woken by then: on-time and
    /// missed ticks, next ticks already due (a period shorter than the
    /// wheel's tick) and changes of task.
    #[test]
    fn ticks_follow_their_schedule_never_early_never_lost(
        tick_ms in proptest::sample::select(vec![1u64, 2, 5, 10, 20]),
        slots in proptest::sample::select(vec![4usize, 8, 64]),
        period_ms in 1u64..=100,
        start_ms in 0u64..=50,
        behavior_index in 0u8..3,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        paused_current_thread().block_on(async move {
            let t0 = Instant::now();
            let tick = ms(tick_ms);
            let period = ms(period_ms);
            let behavior = behavior(behavior_index);
            let wheel = tick_wheel(tick_ms, slots);
            let mut iv = wheel.interval_at(t0 + ms(start_ms), period);
            iv.set_missed_tick_behavior(behavior);
            let mut tasks = [tokio_test::task::spawn(()), tokio_test::task::spawn(())];
            let mut due = t0 + ms(start_ms);
            // The task whose poll was `Pending` last, if no poll since.
            let mut waiting: Option<usize> = None;
            // Whether each task's last poll took a tick: nothing holds its
            // waker then, so it is not woken (as with tokio's interval).
            let mut took = [false; 2];
            for op in ops {
                match op {
                    Op::Advance(d) => tokio::time::advance(ms(d)).await,
                    Op::Poll(b) => {
                        let t = usize::from(b);
                        let now = Instant::now();
                        match tasks[t].enter(|cx, _| iv.poll_tick(cx)) {
                            Poll::Ready(got) => {
                                assert_eq!(got, due, "a tick off its schedule at {:?}", now - t0);
                                assert!(got <= now, "a tick returned early");
                                due = next_due(behavior, got, now, period, tick);
                                waiting = None;
                                took[t] = true;
                            }
                            // Even past its tick: a next deadline that fell
                            // due before its registration is linked all the
                            // same, and fires at the driver's next pass.
                            Poll::Pending => {
                                waiting = Some(t);
                                took[t] = false;
                            }
                        }
                    }
                }
                // The wheel's driver runs on this thread.
                for _ in 0..8 {
                    tokio::task::yield_now().await;
                }
                for t in 0..2 {
                    assert!(!took[t] || !tasks[t].is_woken(), "task {t} woken after taking a tick");
                }
                if let Some(t) = waiting {
                    if Instant::now() >= first_tick_at_or_after(t0, tick, due) {
                        assert!(tasks[t].is_woken(), "task {t} not woken for the tick at {:?}", due - t0);
                    }
                }
            }
        });
    }
}
