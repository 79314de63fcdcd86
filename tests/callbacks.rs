//! Callback timers (`schedule` and friends): when they run, cancelling,
//! handles, isolation from slow and panicking callbacks, self-rescheduling,
//! Netty's 100k-on-time test, past and huge deadlines.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_wheel::Wheel;

use common::{first_tick_at_or_after, ms, tick_wheel, yield_until, Log};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A flag a callback sets.
fn flag() -> (Arc<AtomicBool>, impl FnOnce() + Send + 'static) {
    let f = Arc::new(AtomicBool::new(false));
    let g = f.clone();
    (f, move || g.store(true, SeqCst))
}

#[tokio::test(start_paused = true)]
async fn runs_at_its_deadline_and_not_before() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    let log = Log::new();
    let (l2, l10) = (log.clone(), log.clone());
    let two = wheel
        .schedule(secs(2), move || l2.push(("2s", Instant::now())))
        .unwrap();
    let ten = wheel
        .schedule(secs(10), move || l10.push(("10s", Instant::now())))
        .unwrap();
    assert!(log.is_empty(), "nothing runs inside schedule");
    assert_eq!(wheel.pending(), 2);

    tokio::time::sleep(secs(3)).await;
    assert_eq!(
        log.snapshot(),
        [("2s", t0 + secs(2))],
        "the 2 s task, on time"
    );
    assert!(two.is_expired() && !two.is_cancelled());
    assert!(
        !ten.is_expired() && !ten.is_cancelled(),
        "10 s task not run at 3 s"
    );
    assert_eq!(wheel.pending(), 1);

    tokio::time::sleep(secs(7)).await;
    yield_until("the 10 s task runs", || log.len() == 2).await;
    assert_eq!(log.snapshot()[1], ("10s", t0 + secs(10)));
    assert!(ten.is_expired());
    assert_eq!(wheel.pending(), 0);
    let s = wheel.stats();
    assert_eq!((s.registered, s.fired, s.cancelled), (2, 2, 0), "{s:?}");
}

#[tokio::test(start_paused = true)]
async fn cancel_returns_true_once_and_the_task_never_runs() {
    let wheel = tick_wheel(10, 512);
    let (ran, task) = flag();
    let handle = wheel.schedule(ms(500), task).unwrap();
    assert_eq!(wheel.pending(), 1);
    let clone = handle.clone();
    assert!(handle.cancel());
    assert!(!handle.cancel(), "only once");
    assert!(!clone.cancel(), "clones share the callback");
    assert!(clone.is_cancelled() && !clone.is_expired());
    assert!(format!("{handle:?}").contains("cancelled"));
    assert_eq!(wheel.pending(), 0);
    tokio::time::sleep(secs(2)).await;
    assert!(!ran.load(SeqCst), "a cancelled task ran");
    assert!(handle.is_cancelled());
    assert_eq!(wheel.stats().cancelled, 1);

    // Cancel after it ran: false, and it stays expired.
    let (ran, task) = flag();
    let handle = wheel.schedule(ms(50), task).unwrap();
    tokio::time::sleep(ms(60)).await;
    assert!(ran.load(SeqCst));
    assert!(handle.is_expired());
    assert!(!handle.cancel(), "cancel after it ran");
    assert!(handle.is_expired() && !handle.is_cancelled());
    assert!(format!("{handle:?}").contains("expired"));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_does_not_cancel() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    let log = Log::new();
    let l = log.clone();
    drop(
        wheel
            .schedule(ms(250), move || l.push(Instant::now()))
            .unwrap(),
    );
    assert_eq!(wheel.pending(), 1, "still scheduled");
    tokio::time::sleep(secs(1)).await;
    assert_eq!(log.snapshot(), [t0 + ms(250)]);
}

#[tokio::test(start_paused = true)]
async fn schedule_future_spawns_the_future_at_its_deadline() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    let log = Log::new();
    let l = log.clone();
    let handle = wheel
        .schedule_future(ms(300), async move {
            l.push(("start", Instant::now()));
            tokio::time::sleep(secs(1)).await;
            l.push(("end", Instant::now()));
        })
        .unwrap();
    assert_eq!(handle.deadline(), t0 + ms(300));
    tokio::time::sleep(secs(2)).await;
    assert_eq!(
        log.snapshot(),
        [("start", t0 + ms(300)), ("end", t0 + ms(1300))]
    );
    assert!(handle.is_expired());

    let l = log.clone();
    let at = Instant::now() + ms(42);
    wheel
        .schedule_future_at(at, async move { l.push(("at", Instant::now())) })
        .unwrap();
    tokio::time::sleep(ms(100)).await;
    assert_eq!(
        log.snapshot()[2],
        ("at", first_tick_at_or_after(t0, ms(10), at))
    );
}

#[tokio::test(start_paused = true)]
async fn deadline_is_the_requested_instant() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 512);
    let h = wheel.schedule(ms(1234), || ()).unwrap();
    assert_eq!(h.deadline(), t0 + ms(1234));
    let at = t0 + ms(777);
    assert_eq!(wheel.schedule_at(at, || ()).unwrap().deadline(), at);
    assert_eq!(
        wheel.schedule_future(ms(5), async {}).unwrap().deadline(),
        t0 + ms(5)
    );
    assert_eq!(
        wheel.schedule_future_at(at, async {}).unwrap().deadline(),
        at
    );
    let huge = wheel.schedule(Duration::MAX, || ()).unwrap();
    assert!(huge.deadline() > t0 + secs(86_400 * 365 * 29), "saturated");
}

/// A callback that awaits for a long time (10 s) is a task of its own: other
/// callbacks and sleeps keep their exact instants.
#[tokio::test(start_paused = true)]
async fn a_slow_async_task_does_not_delay_other_timers() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    wheel
        .schedule_future(ms(100), async move {
            l1.push(("slow start", Instant::now()));
            tokio::time::sleep(secs(10)).await;
            l1.push(("slow end", Instant::now()));
        })
        .unwrap();
    wheel
        .schedule(ms(200), move || l2.push(("quick", Instant::now())))
        .unwrap();
    wheel.sleep(ms(300)).await;
    assert_eq!(Instant::now(), t0 + ms(300), "the sleep was delayed");
    assert_eq!(
        log.snapshot(),
        [("slow start", t0 + ms(100)), ("quick", t0 + ms(200))]
    );
    tokio::time::sleep(secs(10)).await;
    assert_eq!(log.snapshot()[2], ("slow end", t0 + ms(10_100)));
}

/// A callback whose work blocks for 800 ms, handed to `spawn_blocking` as
/// the `schedule` docs require, holds up neither the other callbacks nor the
/// sleeps of the wheel (real time, multi-thread runtime). A closure that
/// blocks a worker itself stalls Tokio's own timer driver, `tokio::time`
/// included (a 100 ms `tokio::time::sleep` took 820 ms), so no timer on
/// Tokio can promise that case; it is documented rather than tested.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn blocking_work_in_a_callback_does_not_delay_other_timers() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    wheel
        .schedule(ms(20), move || {
            tokio::task::spawn_blocking(move || {
                l1.push(("blocker start", Instant::now()));
                std::thread::sleep(ms(800));
                l1.push(("blocker end", Instant::now()));
            });
        })
        .unwrap();
    wheel
        .schedule(ms(100), move || l2.push(("other", Instant::now())))
        .unwrap();
    wheel.sleep(ms(150)).await;
    log.push(("sleep", Instant::now()));
    yield_until_real(|| log.len() == 4).await;

    let entries = log.snapshot();
    let at = |name: &str| entries.iter().find(|e| e.0 == name).unwrap().1;
    assert!(at("other") >= t0 + ms(100), "early: {entries:?}");
    assert!(at("sleep") >= t0 + ms(150), "early: {entries:?}");
    assert!(
        at("other") < at("blocker end") && at("sleep") < at("blocker end"),
        "timers waited for the blocking callback: {entries:?}"
    );
    assert!(
        at("other") - t0 < ms(500),
        "other callback far too late: {entries:?}"
    );
}

/// Waits in real time (bounded) for `cond`.
async fn yield_until_real(mut cond: impl FnMut() -> bool) {
    let give_up = Instant::now() + secs(10);
    while !cond() {
        assert!(Instant::now() < give_up, "condition not reached in 10 s");
        tokio::time::sleep(ms(5)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_task_does_not_kill_the_wheel() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    let log = Log::new();
    wheel
        .schedule(ms(100), || panic!("callback panics on purpose"))
        .unwrap();
    wheel
        .schedule_future(ms(100), async { panic!("future panics on purpose") })
        .unwrap();
    let l = log.clone();
    wheel
        .schedule(ms(100), move || l.push(("same tick", Instant::now())))
        .unwrap();
    let l = log.clone();
    wheel
        .schedule(ms(200), move || l.push(("later", Instant::now())))
        .unwrap();
    wheel.sleep(ms(300)).await;
    assert_eq!(Instant::now(), t0 + ms(300));
    let mut got = log.snapshot();
    got.sort();
    assert_eq!(got, [("later", t0 + ms(200)), ("same tick", t0 + ms(100))]);

    // The wheel goes on working after the panics.
    let l = log.clone();
    wheel
        .schedule(ms(50), move || l.push(("after", Instant::now())))
        .unwrap();
    wheel.sleep(ms(100)).await;
    assert_eq!(log.snapshot()[2], ("after", t0 + ms(350)));
    assert_eq!(wheel.stats().fired, 7);
    assert_eq!(wheel.pending(), 0);
}

/// A heartbeat: a callback that schedules itself again, `rounds` times.
fn beat(wheel: Wheel, period: Duration, log: Log<Instant>, rounds: usize) {
    log.push(Instant::now());
    if log.len() < rounds {
        let w = wheel.clone();
        wheel
            .schedule(period, move || beat(w, period, log, rounds))
            .expect("reschedule from inside a callback");
    }
}

/// On a small ring (8 slots x 10 ms = 80 ms), a callback re-schedules itself
/// 1 s ahead (12.5 revolutions) and 800 ms ahead (exactly 10): every round
/// runs exactly on time, never a revolution early.
#[tokio::test(start_paused = true)]
async fn a_task_that_reschedules_itself_beyond_one_revolution() {
    for period in [ms(1000), ms(800), ms(85)] {
        let wheel = tick_wheel(10, 8);
        assert_eq!(wheel.slots(), 8);
        let t0 = Instant::now();
        let log = Log::new();
        let (w, l) = (wheel.clone(), log.clone());
        wheel
            .schedule(period, move || beat(w, period, l, 6))
            .unwrap();
        tokio::time::sleep(period * 8).await;
        let mut expected = Vec::new();
        let mut at = t0;
        for _ in 0..6 {
            at = first_tick_at_or_after(t0, ms(10), at + period);
            expected.push(at);
        }
        assert_eq!(log.snapshot(), expected, "period {period:?}");
        assert_eq!(wheel.pending(), 0);
        assert_eq!(wheel.stats().fired, 6);
    }
}

/// Netty's `testExecutionOnTime`: 100 000 callbacks of 125 ms on a wheel
/// with a 200 ms tick each run no earlier than 125 ms and less than
/// 2 * (200 + 125) ms after they were scheduled. Paused time: the scheduling
/// is spread over 700 ms so that it falls at every phase of the tick.
#[tokio::test(start_paused = true)]
async fn netty_100k_callbacks_run_on_time() {
    const N: usize = 100_000;
    const DELAY: Duration = Duration::from_millis(125);
    let wheel = Wheel::builder().tick(ms(200)).build().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let min_ns = Arc::new(AtomicU64::new(u64::MAX));
    let max_ns = Arc::new(AtomicU64::new(0));
    for _ in 0..100 {
        for _ in 0..N / 100 {
            let scheduled = Instant::now();
            let (ran, min_ns, max_ns) = (ran.clone(), min_ns.clone(), max_ns.clone());
            wheel
                .schedule(DELAY, move || {
                    let d = scheduled.elapsed().as_nanos() as u64;
                    min_ns.fetch_min(d, SeqCst);
                    max_ns.fetch_max(d, SeqCst);
                    ran.fetch_add(1, SeqCst);
                })
                .unwrap();
        }
        tokio::time::sleep(ms(7)).await;
    }
    tokio::time::sleep(secs(1)).await;
    yield_until("all callbacks run", || ran.load(SeqCst) == N).await;
    let (lo, hi) = (
        Duration::from_nanos(min_ns.load(SeqCst)),
        Duration::from_nanos(max_ns.load(SeqCst)),
    );
    assert!(lo >= DELAY, "a callback ran early: {lo:?}");
    assert!(hi < 2 * (ms(200) + DELAY), "too late: {hi:?}");
    // With paused time, tighter: at most one tick after the deadline.
    assert!(hi <= DELAY + ms(200), "more than a tick late: {hi:?}");
    assert_eq!(wheel.pending(), 0);
    assert_eq!(wheel.stats().fired, N as u64);
}

#[tokio::test(start_paused = true)]
async fn a_past_deadline_runs_at_the_next_tick() {
    let t0 = Instant::now();
    let wheel = tick_wheel(10, 64);
    // Keep a driver busy with a far timer, so the wheel has advanced.
    let _far = wheel.schedule(secs(60), || ()).unwrap();
    for (wait, past) in [(ms(15), t0), (ms(5), t0 + ms(3)), (ms(40), t0 + ms(60))] {
        tokio::time::sleep(wait).await;
        let now = Instant::now();
        let log = Log::new();
        let l = log.clone();
        let h = wheel
            .schedule_at(past, move || l.push(Instant::now()))
            .unwrap();
        assert_eq!(h.deadline(), past);
        assert!(log.is_empty(), "ran inside schedule_at");
        let next_tick = first_tick_at_or_after(t0, ms(10), now + Duration::from_nanos(1));
        tokio::time::sleep_until(next_tick).await;
        yield_until("the past-due callback runs", || log.len() == 1).await;
        let ran = log.snapshot()[0];
        assert!(
            ran >= now && ran <= next_tick,
            "scheduled at {:?} (deadline {:?}), ran at {:?}, next tick {:?}",
            now - t0,
            past - t0,
            ran - t0,
            next_tick - t0
        );
        assert!(h.is_expired());
    }
}

/// `Duration::MAX` saturates to about 30 years: pending, never firing, no
/// overflow, even as the clock moves years ahead.
#[tokio::test(start_paused = true)]
async fn a_huge_delay_never_fires() {
    let wheel = tick_wheel(10, 512);
    let (ran, task) = flag();
    let handle = wheel.schedule(Duration::MAX, task).unwrap();
    let (ran_fut, task) = flag();
    let handle_fut = wheel
        .schedule_future(Duration::MAX, async move { task() })
        .unwrap();
    for _ in 0..5 {
        tokio::time::advance(secs(86_400 * 365)).await;
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(secs(60)).await;
    assert!(
        !ran.load(SeqCst) && !ran_fut.load(SeqCst),
        "fired after 5 years"
    );
    assert!(!handle.is_expired() && !handle_fut.is_expired());
    assert_eq!(wheel.pending(), 2);
    assert!(handle.cancel() && handle_fut.cancel());
    assert_eq!(wheel.pending(), 0);
}
