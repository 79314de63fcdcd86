//! `Sleep`: when it fires, registration, cancellation, wakers and `reset`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::poll_fn;
use futures::{poll, FutureExt};
use tokio::time::Instant;
use tokio_wheel::{Sleep, Timeout, Wheel};

use common::{first_tick_at_or_after, ms, poll_with, yield_until, CountingWaker, Rng};

fn wheel(tick_ms: u64, slots: usize) -> Wheel {
    Wheel::builder()
        .tick(ms(tick_ms))
        .slots(slots)
        .build()
        .expect("valid settings")
}

#[test]
fn wheel_sleep_and_timeout_are_send_sync_unpin() {
    fn assert_send_sync_unpin<T: Send + Sync + Unpin>() {}
    fn assert_clone<T: Clone>() {}
    assert_send_sync_unpin::<Wheel>();
    assert_clone::<Wheel>();
    assert_send_sync_unpin::<Sleep>();
    assert_send_sync_unpin::<Timeout<Sleep>>();
    assert_send_sync_unpin::<Timeout<std::future::Ready<u32>>>();
    assert_send_sync_unpin::<Timeout<std::future::Pending<()>>>();
    assert_send_sync_unpin::<Timeout<tokio::sync::oneshot::Receiver<u8>>>();
}

#[tokio::test(start_paused = true)]
async fn sleep_25ms_on_10ms_tick_completes_at_30ms() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    let sleep = wheel.sleep(ms(25));
    assert_eq!(sleep.deadline(), t0 + ms(25));
    sleep.await;
    assert_eq!(Instant::now(), t0 + ms(30));

    let t1 = Instant::now();
    wheel.sleep_until(t1 + ms(40)).await;
    assert_eq!(
        Instant::now(),
        t1 + ms(40),
        "a deadline on a tick fires on that tick"
    );
    let stats = wheel.stats();
    assert_eq!((stats.registered, stats.fired, stats.cancelled), (2, 2, 0));
    assert_eq!(wheel.pending(), 0);
}

/// Never early, never a full tick late: every timer completes at exactly the
/// first tick at or after its deadline, whatever the tick, the ring size, the
/// moment it was registered, or how many revolutions away it is.
#[tokio::test(start_paused = true)]
async fn fires_exactly_at_first_tick_at_or_after_deadline() {
    // (register at ms after t0, sleep for ms)
    let cases: &[(u64, u64)] = &[
        (0, 1),
        (0, 9),
        (0, 10),
        (0, 11),
        (0, 25),
        (0, 27),
        (0, 28),
        (0, 29),
        (0, 55),
        (0, 56),
        (0, 79),
        (0, 80),
        (0, 81),
        (0, 160),
        (0, 161),
        (0, 799),
        (3, 7),
        (3, 8),
        (5, 75),
        (10, 80),
        (28, 28),
        (40, 40),
        (80, 80),
        (80, 160),
        (123, 457),
        (1000, 1),
        (1000, 5120),
        (1000, 5121),
    ];
    let t0 = Instant::now();
    // (tick ms, slots): spans of 80 ms, 28 ms, 1 ms, 13 ms and 5.12 s.
    let wheels: Vec<Wheel> = [(10, 8), (7, 4), (1, 1), (13, 1), (10, 512)]
        .iter()
        .map(|&(t, s)| wheel(t, s))
        .collect();
    let mut tasks = Vec::new();
    for w in &wheels {
        for &(offset, dur) in cases {
            let w = w.clone();
            tasks.push(tokio::spawn(async move {
                if offset > 0 {
                    tokio::time::sleep(ms(offset)).await;
                }
                let sleep = w.sleep(ms(dur));
                let deadline = sleep.deadline();
                assert_eq!(deadline, t0 + ms(offset + dur));
                sleep.await;
                (
                    w.resolution(),
                    w.slots(),
                    offset,
                    dur,
                    deadline,
                    Instant::now(),
                )
            }));
        }
    }
    for task in tasks {
        let (tick, slots, offset, dur, deadline, fired) = task.await.unwrap();
        let expected = first_tick_at_or_after(t0, tick, deadline);
        assert_eq!(
            fired - t0,
            expected - t0,
            "tick {tick:?}, {slots} slots, sleep({dur} ms) registered at {offset} ms"
        );
    }
    for w in &wheels {
        assert_eq!(w.pending(), 0);
        let stats = w.stats();
        assert_eq!(stats.registered, cases.len() as u64);
        assert_eq!(stats.fired, cases.len() as u64);
    }
}

/// Exact multiples of the ring's span share a slot with the current tick:
/// they must fire after exactly that many revolutions.
#[tokio::test(start_paused = true)]
async fn exact_multiples_of_the_span_fire_exactly_then() {
    for slots in [4usize, 8] {
        let t0 = Instant::now();
        let w = wheel(10, slots);
        let span = ms(10) * slots as u32;
        let mut tasks = Vec::new();
        for k in 1..=3u32 {
            for d in [span * k, span * k - ms(1), span * k + ms(1)] {
                let s = w.sleep(d);
                tasks.push(tokio::spawn(async move {
                    s.await;
                    (d, Instant::now())
                }));
            }
        }
        for t in tasks {
            let (d, at) = t.await.unwrap();
            let expected = first_tick_at_or_after(t0, ms(10), t0 + d);
            assert_eq!(at - t0, expected - t0, "{slots} slots, sleep({d:?})");
        }
        // Registered on a tick boundary, a span away: same slot as "now".
        let t1 = Instant::now();
        assert_eq!((t1 - t0).as_nanos() % ms(10).as_nanos(), 0);
        w.sleep(span).await;
        assert_eq!(
            Instant::now() - t1,
            span,
            "{slots} slots: one span from a tick"
        );
        let t2 = Instant::now();
        w.sleep(span * 2).await;
        assert_eq!(
            Instant::now() - t2,
            span * 2,
            "{slots} slots: two spans from a tick"
        );
    }
}

/// The same at the wheel's level: the waker of a timer several revolutions
/// away is not woken when the ring passes its slot, only at its own tick.
#[tokio::test(start_paused = true)]
async fn timers_in_one_slot_are_woken_only_at_their_own_revolution() {
    for slots in [1usize, 4, 8] {
        let t0 = Instant::now();
        let w = wheel(10, slots);
        let span = 10 * slots as u64;
        // Every timer lands in slot 0 (or 1): 1, 2 and 3 revolutions, and
        // one tick past each.
        let mut timers: Vec<(u64, Sleep, Arc<CountingWaker>, std::task::Waker)> = Vec::new();
        for k in 1..=3 {
            for at in [span * k, span * k + 10] {
                let (count, waker) = CountingWaker::new();
                let mut s = w.sleep(ms(at));
                assert!(poll_with(&mut s, &waker).is_pending());
                timers.push((at, s, count, waker));
            }
        }
        let last = span * 3 + 10;
        let mut now = 0;
        while now < last {
            now += 10;
            // Halfway through the tick, after the driver has run.
            tokio::time::sleep_until(t0 + ms(now) + ms(5)).await;
            for (at, s, count, _) in &timers {
                let expected = usize::from(*at <= now);
                assert_eq!(
                    count.count(),
                    expected,
                    "{slots} slots: timer due at {at} ms, woken {} times by {now} ms",
                    count.count()
                );
                assert_eq!(
                    s.is_elapsed(),
                    *at <= now,
                    "{slots} slots, {at} ms at {now} ms"
                );
            }
        }
        for (_, s, _, waker) in &mut timers {
            assert!(poll_with(s, waker).is_ready());
        }
        let stats = w.stats();
        assert_eq!(
            (stats.registered, stats.fired),
            (6, 6),
            "{slots} slots: {stats:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn zero_and_past_deadlines_complete_on_first_poll_without_registering() {
    let wheel = wheel(10, 512);
    assert_eq!(wheel.sleep(Duration::ZERO).now_or_never(), Some(()));
    assert_eq!(wheel.sleep_until(Instant::now()).now_or_never(), Some(()));

    let t0 = Instant::now();
    tokio::time::advance(ms(500)).await;
    let mut past = wheel.sleep_until(t0 + ms(20));
    assert!(!past.is_elapsed(), "never polled");
    assert_eq!((&mut past).now_or_never(), Some(()));
    assert!(past.is_elapsed());
    assert_eq!((&mut past).now_or_never(), Some(()), "stays complete");

    let stats = wheel.stats();
    assert_eq!(stats.registered, 0, "{stats:?}");
    assert_eq!(stats.driver_starts, 0, "{stats:?}");
    assert_eq!(wheel.pending(), 0);
}

/// A sleep made with a duration reads the clock once, when it is made. If its
/// deadline passes before its first poll, that poll registers it like any
/// other instead of reading the clock again, and it completes at its tick:
/// never before the deadline, never after the tick.
#[tokio::test(start_paused = true)]
async fn a_sleep_due_before_its_first_poll_completes_at_its_tick() {
    let wheel = wheel(10, 512);
    let t0 = Instant::now();

    // Its tick (30 ms) has passed too: done without the clock moving.
    let s = wheel.sleep(ms(30));
    tokio::time::advance(ms(30)).await;
    s.await;
    assert_eq!(Instant::now(), t0 + ms(30));

    // Due at 35 ms, first polled at 37 ms: done at the 40 ms tick.
    let s = wheel.sleep(ms(5));
    tokio::time::advance(ms(7)).await;
    s.await;
    assert_eq!(Instant::now(), t0 + ms(40));

    let stats = wheel.stats();
    assert_eq!((stats.registered, stats.fired), (2, 2), "{stats:?}");
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn huge_durations_saturate_and_stay_pending() {
    for (tick, slots) in [(10, 512), (1, 1), (1, 4)] {
        let wheel = wheel(tick, slots);
        let now = Instant::now();
        let mut max = wheel.sleep(Duration::MAX);
        assert!(
            max.deadline() > now + Duration::from_secs(86_400 * 365 * 25),
            "Duration::MAX should be far in the future, got {:?}",
            max.deadline() - now
        );
        let far = now + Duration::from_secs(86_400 * 365 * 100);
        let mut until = wheel.sleep_until(far);
        assert_eq!(until.deadline(), far);
        let mut timeout = wheel.timeout(Duration::MAX, std::future::pending::<()>());
        // Past what u64 nanoseconds from the wheel's origin can count.
        let beyond = now.checked_add(Duration::from_secs(86_400 * 365 * 1000));
        let mut beyond = beyond.map(|at| wheel.sleep_until(at));
        if let Some(s) = &mut beyond {
            assert!(poll!(&mut *s).is_pending());
        }

        assert!(poll!(&mut max).is_pending());
        assert!(poll!(&mut until).is_pending());
        assert!(poll!(&mut timeout).is_pending());
        // `beyond` is past what the wheel can hold (292 years from its
        // origin): it waits on Tokio's timer, exact and never early, so it
        // is not in the wheel's count.
        let registered = 3;
        assert_eq!(wheel.pending(), registered);

        // Past the range of one Tokio timer (about 2.2 years) in one step.
        tokio::time::advance(Duration::from_secs(86_400 * 365 * 3)).await;
        tokio::time::sleep(ms(100)).await;
        assert!(poll!(&mut max).is_pending());
        assert!(poll!(&mut until).is_pending());
        assert!(poll!(&mut timeout).is_pending());
        if let Some(s) = &mut beyond {
            assert!(poll!(&mut *s).is_pending());
            assert!(!s.is_elapsed());
        }
        assert!(!max.is_elapsed());
        assert_eq!(wheel.pending(), registered);
        assert_eq!(wheel.stats().fired, 0);
        drop((max, until, timeout, beyond));
        assert_eq!(wheel.pending(), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_timer_beyond_the_span_waits_its_revolutions() {
    // 4 slots of 10 ms: a 40 ms ring. 1234 ms is 30 revolutions and a bit.
    let t0 = Instant::now();
    let wheel = wheel(10, 4);
    let mut s = wheel.sleep(ms(1234));
    assert!(poll!(&mut s).is_pending());
    tokio::time::sleep(ms(1250)).await;
    assert!(s.is_elapsed());
    s.await;
    let fired = wheel.stats();
    assert_eq!((fired.fired, fired.pending), (1, 0));
    // And it did not fire any earlier: a second one, watched.
    let t1 = Instant::now();
    let w = wheel.clone();
    let task = tokio::spawn(async move {
        w.sleep(ms(1234)).await;
        Instant::now()
    });
    tokio::time::sleep(ms(1239)).await;
    assert!(!task.is_finished(), "fired a revolution early");
    assert_eq!(task.await.unwrap() - t1, ms(1240));
    assert!(t1 > t0);
}

/// A `Sleep` keeps what it needs of its wheel: it completes after every
/// `Wheel` handle is gone.
#[tokio::test(start_paused = true)]
async fn a_sleep_outlives_its_wheel_handles() {
    let t0 = Instant::now();
    let s = wheel(10, 512).sleep(ms(25));
    s.await;
    assert_eq!(Instant::now(), t0 + ms(30));

    let w = wheel(10, 512);
    let mut s = w.sleep(ms(40));
    assert!(poll!(&mut s).is_pending());
    drop(w);
    s.await;
    assert_eq!(Instant::now(), t0 + ms(70));
}

#[tokio::test(start_paused = true)]
async fn only_the_latest_waker_is_woken() {
    let wheel = wheel(10, 512);
    let (a, waker_a) = CountingWaker::new();
    let (b, waker_b) = CountingWaker::new();
    let mut s = wheel.sleep(ms(30));
    assert!(poll_with(&mut s, &waker_a).is_pending());
    assert_eq!(wheel.pending(), 1);
    assert!(poll_with(&mut s, &waker_b).is_pending());
    assert_eq!(wheel.pending(), 1, "a second poll does not register again");
    drop(waker_a);
    assert_eq!(
        Arc::strong_count(&a),
        1,
        "the wheel let go of the old waker"
    );

    tokio::time::sleep(ms(29)).await;
    assert_eq!((a.count(), b.count()), (0, 0), "woken before the deadline");
    tokio::time::sleep(ms(11)).await;
    assert_eq!(a.count(), 0, "the replaced waker was woken");
    assert_eq!(b.count(), 1, "the latest waker was not woken exactly once");
    assert!(s.is_elapsed());
    assert!(poll_with(&mut s, &waker_b).is_ready());
    assert_eq!(wheel.stats().registered, 1);
}

#[tokio::test(start_paused = true)]
async fn registration_is_lazy() {
    let wheel = wheel(10, 512);
    let never_polled: Vec<Sleep> = (1..=1000).map(|i| wheel.sleep(ms(i))).collect();
    assert_eq!(wheel.pending(), 0);
    tokio::time::sleep(ms(2000)).await;
    assert!(never_polled.iter().all(|s| !s.is_elapsed()));
    drop(never_polled);
    let stats = wheel.stats();
    assert_eq!(
        (
            stats.registered,
            stats.cancelled,
            stats.fired,
            stats.driver_starts
        ),
        (0, 0, 0, 0),
        "{stats:?}"
    );

    let mut s = wheel.sleep(ms(100));
    assert_eq!(wheel.pending(), 0);
    assert!(poll!(&mut s).is_pending());
    assert_eq!(wheel.pending(), 1);
    assert_eq!(wheel.stats().registered, 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_100k_polled_sleeps_cancels_them_all() {
    const N: usize = 100_000;
    let wheel = Wheel::new();
    let waker = futures::task::noop_waker();
    let mut rng = Rng::new(7);
    let mut sleeps: Vec<Sleep> = (0..N)
        .map(|_| wheel.sleep(ms(rng.range(1, 60_000))))
        .collect();
    assert_eq!(wheel.pending(), 0);
    for s in &mut sleeps {
        assert!(poll_with(s, &waker).is_pending());
    }
    assert_eq!(wheel.pending(), N);
    assert_eq!(wheel.stats().pending, N);
    drop(sleeps);
    assert_eq!(wheel.pending(), 0);
    let stats = wheel.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(stats.registered, N as u64);
    assert_eq!(stats.cancelled, N as u64);
    assert_eq!(stats.fired, 0);
}

#[tokio::test(start_paused = true)]
async fn reset_later_does_not_fire_at_the_old_deadline() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    let mut s = wheel.sleep(ms(30));
    assert!(poll!(&mut s).is_pending());
    s.reset(t0 + ms(75));
    assert_eq!(s.deadline(), t0 + ms(75));

    // Past the old deadline, not polled in between.
    tokio::time::sleep(ms(35)).await;
    assert!(!s.is_elapsed(), "elapsed at the old deadline");
    assert!(poll!(&mut s).is_pending(), "completed at the old deadline");
    assert_eq!(wheel.pending(), 1);

    (&mut s).await;
    assert_eq!(Instant::now(), t0 + ms(80));
    assert!(s.is_elapsed());
    assert_eq!(wheel.pending(), 0);
}

/// An idle timeout pushed back on every frame, polled after each one as a
/// connection task's `select!` does: the task is never woken at an old
/// deadline (the entry moves with the deadline), and the wheel counts one
/// timer, registered once and fired once, however many resets.
#[tokio::test(start_paused = true)]
async fn reset_later_wakes_no_one_at_the_old_tick_and_counts_one_timer() {
    let wheel = wheel(10, 64);
    let (wakes, waker) = CountingWaker::new();
    let mut idle = wheel.sleep(ms(100));
    assert!(poll_with(&mut idle, &waker).is_pending());
    for frame in 0..20 {
        tokio::time::sleep(ms(60)).await;
        idle.reset(Instant::now() + ms(100));
        assert!(poll_with(&mut idle, &waker).is_pending(), "frame {frame}");
        assert_eq!(wakes.count(), 0, "woken at an old deadline (frame {frame})");
    }
    let last = idle.deadline();
    tokio::time::sleep_until(last).await;
    yield_until("the idle timer fires", || wakes.count() == 1).await;
    assert!(poll_with(&mut idle, &waker).is_ready());
    assert_eq!(Instant::now(), last);
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.cancelled),
        (1, 1, 0),
        "one timer, however many resets"
    );
}

/// The idle-timeout pattern with frames far more often than the timeout: a
/// reset leaves the entry where it is (the driver files it again when it
/// gets there), so resets touch only the `Sleep`; it never wakes the task
/// before the timeout really expires, and completes exactly at the last
/// deadline's tick.
#[tokio::test(start_paused = true)]
async fn frequent_resets_never_wake_the_task_before_it_expires() {
    let wheel = wheel(10, 64);
    let (wakes, waker) = CountingWaker::new();
    let mut idle = wheel.sleep(ms(1000));
    assert!(poll_with(&mut idle, &waker).is_pending());
    for frame in 0..50 {
        tokio::time::sleep(ms(100)).await;
        idle.reset(Instant::now() + ms(1000));
        assert!(poll_with(&mut idle, &waker).is_pending(), "frame {frame}");
        assert_eq!(wakes.count(), 0, "woken before it expired (frame {frame})");
    }
    let last = idle.deadline();
    tokio::time::sleep(ms(990)).await;
    assert_eq!(wakes.count(), 0, "woken 10 ms before it expired");
    assert!(poll_with(&mut idle, &waker).is_pending());
    tokio::time::sleep_until(last).await;
    yield_until("the idle timer fires", || wakes.count() == 1).await;
    assert!(poll_with(&mut idle, &waker).is_ready());
    assert_eq!(Instant::now(), last);
    let stats = wheel.stats();
    assert_eq!((stats.registered, stats.fired), (1, 1), "one timer");
    assert_eq!(stats.rearmed, 0, "never woken early");
    // The entry is filed again about once per second-long wait, not once a
    // frame: 50 frames 100 ms apart plus the last wait span about 6 s.
    assert!(
        (4..=8).contains(&stats.refiled),
        "filed again {} times",
        stats.refiled
    );
}

/// Waits until the driver has filed a pushed-back entry again, then yields
/// a while more, so that a wake-up the filing wrongly sent has been seen.
async fn refiled_once(wheel: &Wheel) {
    yield_until("the driver files the entry again", || {
        wheel.stats().refiled == 1
    })
    .await;
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}

/// A deadline pushed back while registered, then silence: the entry stays
/// where it was, and when the driver gets there it files the entry again
/// for the new deadline without waking the task, which is woken once, at the
/// new deadline's tick.
#[tokio::test(start_paused = true)]
async fn a_pushed_back_deadline_is_filed_again_without_waking_the_task() {
    let t0 = Instant::now();
    let wheel = wheel(10, 64);
    let (wakes, waker) = CountingWaker::new();
    let mut idle = wheel.sleep(ms(1000));
    assert!(poll_with(&mut idle, &waker).is_pending());
    tokio::time::sleep(ms(100)).await;
    idle.reset(Instant::now() + ms(1000)); // 1100 ms: the entry stays at 1000
    tokio::time::sleep_until(t0 + ms(1090)).await;
    refiled_once(&wheel).await;
    assert_eq!(wakes.count(), 0, "woken at the old deadline");
    assert!(poll_with(&mut idle, &waker).is_pending());
    assert!(!idle.is_elapsed());
    tokio::time::sleep_until(t0 + ms(1100)).await;
    yield_until("the entry fires at the new deadline", || wakes.count() == 1).await;
    assert!(poll_with(&mut idle, &waker).is_ready());
    assert_eq!(Instant::now(), t0 + ms(1100));
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.rearmed, stats.refiled),
        (1, 1, 0, 1),
        "one timer, fired once, never woken early"
    );
}

/// A deadline pushed back further than a tracked `Sleep` keeps the tick of
/// its entry for (2^24 - 1 ticks: 4.66 hours at a 1 ms tick): its polls read
/// the entry's slot instead, and nothing else changes: the entry is filed
/// again without a wake-up, and the sleep completes at its deadline's tick.
#[tokio::test(start_paused = true)]
async fn a_deadline_pushed_back_beyond_the_kept_range_still_completes_at_its_tick() {
    let t0 = Instant::now();
    let wheel = wheel(1, 64);
    let (wakes, waker) = CountingWaker::new();
    let mut idle = wheel.sleep_until(t0 + ms(1000));
    assert!(poll_with(&mut idle, &waker).is_pending());
    let far = t0 + ms(1000) + ms(1 << 24) + ms(500);
    idle.reset(far);
    assert!(poll_with(&mut idle, &waker).is_pending());
    tokio::time::sleep_until(t0 + ms(1001)).await;
    refiled_once(&wheel).await;
    assert_eq!(wakes.count(), 0, "woken at the old deadline");
    assert!(poll_with(&mut idle, &waker).is_pending());
    idle.reset(far + ms(3)); // further still
    assert!(poll_with(&mut idle, &waker).is_pending());
    tokio::time::sleep_until(far).await;
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    assert_eq!(wakes.count(), 0, "woken before the deadline");
    assert!(poll_with(&mut idle, &waker).is_pending());
    tokio::time::sleep_until(far + ms(3)).await;
    yield_until("the entry fires at the deadline", || wakes.count() == 1).await;
    assert!(poll_with(&mut idle, &waker).is_ready());
    assert_eq!(Instant::now(), far + ms(3));
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.rearmed, stats.refiled),
        (1, 1, 0, 2),
        "one timer, fired once, never woken early, filed again for each push back"
    );
}

/// A tracked `Sleep` whose entry fired at its deadline, pushed back beyond the
/// range it keeps its entry's tick for before any poll saw the firing: the
/// poll must not take the entry for one still pending (it would never be
/// woken again), but find it fired, link it again, and complete at the new
/// deadline. Another sleep keeps the driver planned soon after, so that a
/// poll taking a wrong kept tick for a pending one would not read the slot.
#[tokio::test(start_paused = true)]
async fn a_fired_entry_pushed_back_beyond_the_kept_range_is_linked_again() {
    let t0 = Instant::now();
    let wheel = wheel(1, 64);
    let (wakes, waker) = CountingWaker::new();
    let (_, other_waker) = CountingWaker::new();
    let mut other = wheel.sleep_until(t0 + ms(1550));
    assert!(poll_with(&mut other, &other_waker).is_pending());
    let mut s = wheel.sleep_until(t0 + ms(1000));
    assert!(poll_with(&mut s, &waker).is_pending());
    s.reset(t0 + ms(1500)); // tracked: the entry stays at 1000 ms
    assert!(poll_with(&mut s, &waker).is_pending());
    tokio::time::sleep_until(t0 + ms(1500)).await;
    yield_until("the entry fires at 1500 ms", || wakes.count() == 1).await;
    let far = t0 + ms(1500) + ms(1 << 24) + ms(100);
    s.reset(far);
    assert!(poll_with(&mut s, &waker).is_pending());
    tokio::time::sleep_until(far).await;
    yield_until("the entry fires at the new deadline", || wakes.count() == 2).await;
    assert!(poll_with(&mut s, &waker).is_ready());
    assert_eq!(Instant::now(), far);
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.rearmed, stats.refiled),
        (2, 1, 1),
        "two timers; this one filed again once by the driver and linked again once by its \
         poll"
    );
}

/// The first push back comes after the entry fired but before a poll saw it
/// (a connection's frame and its idle deadline in the same tick: the task
/// is woken, reads the frame and resets first). The entry is not tracked
/// then: the next poll finds it fired with the deadline not passed and
/// links it again, and the sleep completes at the new deadline, not at the
/// old one.
#[tokio::test(start_paused = true)]
async fn a_first_push_back_after_the_entry_fired_unseen_completes_at_the_new_deadline() {
    let t0 = Instant::now();
    let wheel = wheel(10, 64);
    let (wakes, waker) = CountingWaker::new();
    let mut s = wheel.sleep_until(t0 + ms(100));
    assert!(poll_with(&mut s, &waker).is_pending());
    tokio::time::sleep_until(t0 + ms(100)).await;
    yield_until("the entry fires at the old deadline", || wakes.count() == 1).await;
    s.reset(t0 + ms(300));
    assert!(
        poll_with(&mut s, &waker).is_pending(),
        "completed at the old deadline"
    );
    tokio::time::sleep_until(t0 + ms(290)).await;
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    assert_eq!(wakes.count(), 1, "woken before the new deadline");
    tokio::time::sleep_until(t0 + ms(300)).await;
    yield_until("the entry fires at the new deadline", || wakes.count() == 2).await;
    assert!(poll_with(&mut s, &waker).is_ready());
    assert_eq!(Instant::now(), t0 + ms(300));
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.rearmed, stats.refiled),
        (1, 1, 1, 0),
        "one timer, linked again once by its poll (which `fired` does not count again), never \
         filed again by the driver"
    );
}

/// A deadline pushed back (the entry stays, and its `Sleep` keeps the tick it
/// is filed at), then brought earlier than it was: the entry moves, and the
/// `Sleep` keeps the new tick, so its poll after the wake at the earlier
/// deadline completes rather than taking the old tick for one not yet fired.
/// Another sleep, due before the old tick, keeps the driver planned there,
/// so that a poll still keeping the old tick would not read the slot.
#[tokio::test(start_paused = true)]
async fn a_pushed_back_deadline_brought_earlier_completes_there() {
    let t0 = Instant::now();
    let wheel = wheel(10, 64);
    let (wakes, waker) = CountingWaker::new();
    let (_, other_waker) = CountingWaker::new();
    let mut other = wheel.sleep_until(t0 + ms(900));
    assert!(poll_with(&mut other, &other_waker).is_pending());
    let mut s = wheel.sleep_until(t0 + ms(1000));
    assert!(poll_with(&mut s, &waker).is_pending());
    s.reset(t0 + ms(1500)); // tracked: the entry stays at 1000 ms
    assert!(poll_with(&mut s, &waker).is_pending());
    s.reset(t0 + ms(500)); // moved to 500 ms
    assert!(poll_with(&mut s, &waker).is_pending());
    tokio::time::sleep_until(t0 + ms(500)).await;
    yield_until("the entry fires at the earlier deadline", || {
        wakes.count() == 1
    })
    .await;
    assert!(
        poll_with(&mut s, &waker).is_ready(),
        "woken at the earlier deadline, but still pending"
    );
    assert_eq!(Instant::now(), t0 + ms(500));
}

/// A deadline pushed back, then a poll with another task's waker: the swap
/// keeps where the entry is filed, so the new waker is woken at the new
/// deadline and the sleep completes there. (An earlier design forgot it on a
/// swap: the entry fired, the lock-free poll took it for pending, and the
/// sleep hung.)
#[tokio::test(start_paused = true)]
async fn a_waker_swap_after_a_push_back_still_completes_at_the_deadline() {
    let t0 = Instant::now();
    let wheel = Wheel::builder().shards(1).build().unwrap();
    let (a, waker_a) = CountingWaker::new();
    let (b, waker_b) = CountingWaker::new();
    let mut s = wheel.sleep_until(t0 + ms(1000));
    assert!(poll_with(&mut s, &waker_a).is_pending());
    s.reset(t0 + ms(1500)); // the entry stays at 1000 ms
    assert!(poll_with(&mut s, &waker_b).is_pending()); // the swap
    tokio::time::sleep_until(t0 + ms(1200)).await;
    refiled_once(&wheel).await;
    assert_eq!((a.count(), b.count()), (0, 0), "woken at the old deadline");
    assert!(poll_with(&mut s, &waker_b).is_pending());
    tokio::time::sleep_until(t0 + ms(1500)).await;
    yield_until("the entry fires at the new deadline", || b.count() == 1).await;
    assert!(poll_with(&mut s, &waker_b).is_ready());
    assert_eq!(Instant::now(), t0 + ms(1500));
    assert_eq!(a.count(), 0, "the old waker is never woken");
}

/// The wheel keeps a pushed-back deadline by the entry's key, and a key
/// given back is the next registration's (one shard, and its slab hands out
/// the key given back last): whichever way a `Sleep` whose deadline was
/// pushed back lets go of its entry, the next `Sleep` to take the key fires
/// at its own deadline, not at the one pushed back before.
#[tokio::test(start_paused = true)]
async fn a_key_given_back_after_a_push_back_does_not_move_the_next_sleep() {
    let wheel = Wheel::builder().shards(1).build().unwrap();
    let (_, waker) = CountingWaker::new();
    let far = Duration::from_secs(3600);
    let exits = [
        "dropped",
        "completed",
        "reset into the past",
        "re-armed",
        "fired, then reset earlier",
    ];
    for exit in exits {
        let start = Instant::now();
        let mut old = wheel.sleep(ms(50));
        assert!(poll_with(&mut old, &waker).is_pending());
        // Pushed back: its entry stays at 50 ms.
        old.reset(start + ms(60));
        match exit {
            "dropped" => {
                old.reset(start + far);
                drop(old);
            }
            "completed" => {
                (&mut old).await;
                assert_eq!(Instant::now(), start + ms(60), "{exit}");
            }
            "reset into the past" => {
                old.reset(start + far);
                old.reset(start);
                assert!(poll_with(&mut old, &waker).is_ready(), "{exit}");
            }
            "re-armed" => {
                // Fires at 60 ms (filed again there at 50), is pushed back
                // once more before its poll sees it, and is linked again.
                tokio::time::sleep_until(start + ms(60)).await;
                yield_until("the entry fires", || wheel.pending() == 0).await;
                let rearmed = wheel.stats().rearmed;
                old.reset(start + far);
                assert!(poll_with(&mut old, &waker).is_pending(), "{exit}");
                assert_eq!(wheel.stats().rearmed, rearmed + 1, "{exit}");
                drop(old);
            }
            "fired, then reset earlier" => {
                tokio::time::sleep_until(start + ms(60)).await;
                yield_until("the entry fires", || wheel.pending() == 0).await;
                // Pushed back after it fired, then to an earlier tick than
                // 60 ms's, whichever the tick.
                old.reset(start + far);
                old.reset(start + ms(45));
                assert!(poll_with(&mut old, &waker).is_ready(), "{exit}");
            }
            _ => unreachable!(),
        }
        assert_eq!(wheel.pending(), 0, "{exit}");
        let refiled = wheel.stats().refiled;
        let at = Instant::now();
        let new = wheel.sleep(ms(50));
        tokio::time::timeout(ms(51), new)
            .await
            .unwrap_or_else(|_| panic!("after a sleep {exit}: pending past its deadline"));
        assert_eq!(Instant::now(), at + ms(50), "after a sleep {exit}");
        assert_eq!(wheel.stats().refiled, refiled, "after a sleep {exit}");
    }
}

/// The same through tasks: a sleep reset in one task and awaited in another
/// (wakers of one runtime share a vtable, so both take the lock-free path).
#[tokio::test(start_paused = true)]
async fn a_sleep_reset_in_one_task_and_awaited_in_another_completes() {
    let t0 = Instant::now();
    let wheel = Wheel::builder().shards(1).build().unwrap();
    let s = wheel.sleep_until(t0 + ms(1000));
    // Handed back in an array: a task's output that is itself a future
    // reads like a forgotten `.await`.
    let [mut s] = tokio::spawn(async move {
        let mut s = s;
        assert!(poll!(&mut s).is_pending());
        s.reset(t0 + ms(1500));
        [s]
    })
    .await
    .unwrap();
    let done = tokio::spawn(async move {
        tokio::time::timeout(Duration::from_secs(10), &mut s)
            .await
            .map(|()| Instant::now())
    })
    .await
    .unwrap();
    assert_eq!(
        done,
        Ok(t0 + ms(1500)),
        "a 1.5 s sleep still pending after 10 s"
    );
}

/// A reset to an instant already passed is ready on the very next poll,
/// without waiting for the wheel's driver, as `tokio::time` is; the task that
/// waits on it is woken.
#[tokio::test(start_paused = true)]
async fn reset_to_a_passed_instant_is_ready_on_the_next_poll() {
    let wheel = wheel(10, 512);
    let (wakes, waker) = CountingWaker::new();
    let mut s = wheel.sleep(Duration::from_secs(10));
    assert!(poll_with(&mut s, &waker).is_pending());
    tokio::time::sleep(ms(35)).await;
    for past in [ms(5), ms(0)] {
        let mut again = wheel.sleep(Duration::from_secs(10));
        assert!(poll_with(&mut again, &waker).is_pending());
        again.reset(Instant::now() - past);
        assert!(poll_with(&mut again, &waker).is_ready(), "{past:?} ago");
        assert!(again.is_elapsed());
    }
    s.reset(Instant::now() - ms(5));
    assert_eq!(
        wakes.count(),
        3,
        "the registered waker is woken by each reset"
    );
    assert!(
        s.is_elapsed(),
        "elapsed as soon as it is reset into the past"
    );
    assert!(poll_with(&mut s, &waker).is_ready());
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn reset_later_while_awaited_completes_only_at_the_new_deadline() {
    let t0 = Instant::now();
    let wheel = wheel(10, 8);
    let s = Arc::new(Mutex::new(wheel.sleep(ms(20))));
    let s2 = s.clone();
    let task = tokio::spawn(async move {
        poll_fn(|cx| s2.lock().unwrap().poll_unpin(cx)).await;
        Instant::now()
    });
    yield_until("the sleep registers", || wheel.pending() == 1).await;
    // Later, by more than one revolution of the 80 ms ring.
    s.lock().unwrap().reset(t0 + ms(215));
    assert_eq!(task.await.unwrap(), t0 + ms(220));
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn reset_earlier_wakes_the_waiting_task_without_a_repoll() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    let s = Arc::new(Mutex::new(wheel.sleep(Duration::from_secs(10))));
    let s2 = s.clone();
    let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let polls2 = polls.clone();
    let task = tokio::spawn(async move {
        poll_fn(|cx| {
            polls2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            s2.lock().unwrap().poll_unpin(cx)
        })
        .await;
        Instant::now()
    });
    yield_until("the sleep registers", || wheel.pending() == 1).await;
    let polls_before = polls.load(std::sync::atomic::Ordering::SeqCst);

    tokio::time::sleep(ms(12)).await;
    s.lock().unwrap().reset(t0 + ms(25));
    assert_eq!(
        polls.load(std::sync::atomic::Ordering::SeqCst),
        polls_before,
        "the task was polled in between"
    );
    let fired = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("reset earlier never woke the task")
        .unwrap();
    assert_eq!(fired, t0 + ms(30));
    assert_eq!(wheel.pending(), 0);
}

/// Reset to an earlier deadline: completes at once if the deadline has
/// passed (as `tokio::time` does), else at the deadline's tick; never later,
/// never earlier.
#[tokio::test(start_paused = true)]
async fn reset_to_a_past_deadline_completes_at_its_tick_or_at_once() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    for (wait, past) in [(17, 0), (17, 5), (17, 15), (25, 12), (3, 1), (40, 39)] {
        let start = Instant::now();
        let s = Arc::new(Mutex::new(wheel.sleep(Duration::from_secs(10))));
        let s2 = s.clone();
        let task = tokio::spawn(async move {
            poll_fn(|cx| s2.lock().unwrap().poll_unpin(cx)).await;
            Instant::now()
        });
        yield_until("the sleep registers", || wheel.pending() == 1).await;
        tokio::time::sleep(ms(wait)).await;
        let reset_at = Instant::now();
        let deadline = start + ms(past);
        s.lock().unwrap().reset(deadline);
        let done = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("never woken")
            .unwrap();
        let expected = if deadline <= reset_at {
            reset_at
        } else {
            first_tick_at_or_after(t0, ms(10), deadline)
        };
        assert_eq!(
            done - t0,
            expected - t0,
            "started at {:?}, reset at {:?} to {:?}",
            start - t0,
            reset_at - t0,
            deadline - t0
        );
    }
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn reset_after_firing_makes_it_pending_again() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    let mut s = wheel.sleep(ms(30));
    (&mut s).await;
    assert_eq!(Instant::now(), t0 + ms(30));
    assert!(s.is_elapsed());
    assert_eq!(wheel.pending(), 0);

    s.reset(Instant::now() + ms(45));
    assert!(!s.is_elapsed(), "still elapsed after reset");
    assert!(
        poll!(&mut s).is_pending(),
        "a reset sleep completed at once"
    );
    assert_eq!(wheel.pending(), 1);
    (&mut s).await;
    assert_eq!(Instant::now(), t0 + ms(80));
    assert!(s.is_elapsed());
    assert_eq!(wheel.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn is_elapsed_transitions() {
    let t0 = Instant::now();
    let wheel = wheel(10, 512);
    let mut s = wheel.sleep(ms(30));
    assert!(!s.is_elapsed(), "fresh");
    assert!(poll!(&mut s).is_pending());
    assert!(!s.is_elapsed(), "registered");
    tokio::time::sleep(ms(29)).await;
    assert!(!s.is_elapsed(), "before the deadline");
    // The wheel fires it at 30 ms; this task does not poll it.
    tokio::time::sleep(ms(6)).await;
    assert!(s.is_elapsed(), "fired, not yet polled");
    assert!(poll!(&mut s).is_ready());
    assert!(s.is_elapsed(), "completed");
    s.reset(t0 + ms(60));
    assert!(!s.is_elapsed(), "reset to the future");
    (&mut s).await;
    assert!(s.is_elapsed());
    assert_eq!(Instant::now(), t0 + ms(60));

    // A never-polled sleep is not elapsed even past its deadline.
    let never = wheel.sleep(ms(10));
    tokio::time::sleep(ms(50)).await;
    assert!(!never.is_elapsed());
}

#[tokio::test(start_paused = true)]
async fn many_timers_in_one_tick_all_fire_together() {
    let t0 = Instant::now();
    let wheel = wheel(10, 16);
    let tasks: Vec<_> = (0..500u64)
        .map(|i| {
            // Deadlines spread over (100, 110] ms: all due at tick 11.
            let s = wheel.sleep_until(t0 + ms(100) + Duration::from_micros(1 + i * 19));
            tokio::spawn(async move {
                s.await;
                Instant::now()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), t0 + ms(110));
    }
    let stats = wheel.stats();
    assert_eq!(
        (stats.registered, stats.fired, stats.pending),
        (500, 500, 0)
    );
}

/// A sleep due at its first poll on a live clock yields once (see "The first
/// poll" in `Sleep`'s docs) without touching the wheel: no registration, no
/// driver started, and done on the next poll, not at the wheel's next tick
/// (`tests/coop.rs` checks the budget).
#[tokio::test]
async fn a_due_first_poll_yields_without_the_wheel_on_a_live_clock() {
    let wheel = wheel(100, 64);
    for _ in 0..1000 {
        let start = Instant::now();
        let (counter, waker) = CountingWaker::new();
        let mut s = wheel.sleep(Duration::ZERO);
        let pending = poll_with(&mut s, &waker).is_pending();
        if start.elapsed() >= ms(1) {
            // Preempted between making and polling: the deadline is older
            // than a millisecond by then, and the poll may complete. Proves
            // nothing; again.
            continue;
        }
        assert!(pending, "due at once on a live clock");
        assert_eq!(counter.count(), 1, "the poll woke its task");
        assert!(
            poll_with(&mut s, &waker).is_ready(),
            "done on the next poll"
        );
        let stats = wheel.stats();
        assert_eq!(stats.registered, 0);
        assert_eq!(stats.driver_starts, 0);
        assert_eq!(stats.pending, 0);
        return;
    }
    panic!("every run was preempted");
}
