//! `tokio::time::advance` and `pause` with wheel timers, the way tests
//! written for `tokio::time` use them (`tokio_test::task`, `is_woken`).
//!
//! Tokio wakes its own due timers inside the runtime's park, before the task
//! that called `advance` resumes; the wheel's timers are woken at the same
//! point (by the waker of the driver's Tokio timer), not on the driver task's
//! next turn.

use std::future::pending;
use std::time::Duration;

use tokio_test::task;
use tokio_wheel::Wheel;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_woken_by_the_advance_that_reaches_it() {
    let mut t = task::spawn(tokio_wheel::timeout(ms(100), pending::<()>()));
    assert!(t.poll().is_pending());
    tokio::time::advance(ms(50)).await;
    assert!(t.poll().is_pending());
    tokio::time::advance(ms(50)).await;
    assert!(t.is_woken(), "due, but not woken when advance returned");
    assert!(matches!(t.poll(), std::task::Poll::Ready(Err(_))));
}

#[tokio::test(start_paused = true)]
async fn an_advance_short_of_the_deadline_wakes_nothing() {
    let wheel = Wheel::new();
    let mut t = task::spawn(wheel.sleep(ms(100)));
    assert!(t.poll().is_pending());
    // The driver's timer fires at each step, one tick short of the deadline.
    for _ in 0..9 {
        tokio::time::advance(ms(10)).await;
    }
    assert!(t.poll().is_pending(), "woken before its deadline");
    tokio::time::advance(ms(9)).await;
    assert!(t.poll().is_pending(), "woken before its deadline");
    tokio::time::advance(ms(1)).await;
    assert!(t.is_woken());
    assert!(t.poll().is_ready());
}

#[tokio::test(start_paused = true)]
async fn one_advance_over_many_ticks_wakes_every_sleep_due_by_then() {
    let wheel = Wheel::new();
    let mut due: Vec<_> = (1..=20)
        .map(|i| task::spawn(wheel.sleep(ms(10 * i))))
        .collect();
    let mut later = task::spawn(wheel.sleep(ms(300)));
    for t in &mut due {
        assert!(t.poll().is_pending());
    }
    assert!(later.poll().is_pending());
    tokio::time::advance(ms(200)).await;
    for (i, t) in due.iter_mut().enumerate() {
        assert!(t.is_woken(), "sleep {i} not woken");
        assert!(t.poll().is_ready());
    }
    assert!(!later.is_woken());
    assert!(later.poll().is_pending());
}

#[tokio::test(start_paused = true)]
async fn an_interval_tick_is_woken_by_advance() {
    let mut every = tokio_wheel::interval(ms(100));
    every.tick().await;
    let mut t = task::spawn(async { every.tick().await });
    assert!(t.poll().is_pending());
    tokio::time::advance(ms(100)).await;
    assert!(t.is_woken());
    assert!(t.poll().is_ready());
}

/// `pause()` inside a running runtime freezes the clock off Tokio's
/// millisecond grid, and Tokio's own timers then wake up to 2 ms after their
/// deadline. A 1 ms wheel's ticks are not on that grid either: side by side
/// with Tokio's, each timer completes never before its deadline and at most
/// one wheel tick after Tokio's timer for the same deadline (README,
/// "Semantics").
#[test]
fn after_pause_in_a_running_runtime_at_most_one_tick_after_tokio() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let wheel = Wheel::builder().tick(ms(1)).build().unwrap();
        // Off the millisecond grid, as real time leaves it.
        std::thread::sleep(Duration::from_micros(300));
        tokio::time::pause();
        for step in 0..=20u64 {
            let deadline =
                tokio::time::Instant::now() + ms(1) + Duration::from_micros(step * 50 + 1);
            let on_tokio = async {
                tokio::time::sleep_until(deadline).await;
                tokio::time::Instant::now()
            };
            let on_wheel = async {
                wheel.sleep_until(deadline).await;
                tokio::time::Instant::now()
            };
            let (tokio_done, wheel_done) = tokio::join!(on_tokio, on_wheel);
            assert!(
                wheel_done >= deadline,
                "early by {:?}",
                deadline - wheel_done
            );
            assert!(
                wheel_done <= tokio_done + ms(1),
                "step {step}: {:?} after tokio's",
                wheel_done - tokio_done
            );
        }
    });
}

/// Up to 4096 timers held by the wheel, the due ones are woken inside the
/// `advance` that reaches them (a larger wheel leaves its firing to the
/// driver task, so that a mass expiry never holds up Tokio's own timers).
#[tokio::test(start_paused = true)]
async fn four_thousand_pending_are_all_woken_by_advance() {
    let wheel = Wheel::new();
    let mut due: Vec<_> = (0..4000u64)
        .map(|i| task::spawn(wheel.sleep(ms(10 + i % 90))))
        .collect();
    let mut later: Vec<_> = (0..96).map(|_| task::spawn(wheel.sleep(ms(500)))).collect();
    for t in due.iter_mut().chain(later.iter_mut()) {
        assert!(t.poll().is_pending());
    }
    assert_eq!(wheel.pending(), 4096);
    tokio::time::advance(ms(100)).await;
    for (i, t) in due.iter_mut().enumerate() {
        assert!(t.is_woken(), "sleep {i} not woken");
    }
    // Polled in rounds: each poll takes from Tokio's cooperative budget, as
    // Tokio's own sleeps' do.
    for chunk in due.chunks_mut(100) {
        for t in chunk {
            assert!(t.poll().is_ready());
        }
        tokio::task::yield_now().await;
    }
    assert!(later
        .iter_mut()
        .all(|t| !t.is_woken() && t.poll().is_pending()));
}

/// `max_wakeups_per_tick` paces the driver on a live runtime; on paused time
/// it must not hold back the wake-ups `advance` promises: all 20 due sleeps
/// are woken when `advance` returns, not 4 then, the rest a few yields later.
/// Both ways a due tick is reached: the driver task's first turn, and the
/// driver's timer firing in the park while the driver task waits on it.
#[tokio::test(start_paused = true)]
async fn advance_wakes_every_due_sleep_whatever_the_burst_cap() {
    for driver_waiting in [false, true] {
        let wheel = Wheel::builder().max_wakeups_per_tick(4).build().unwrap();
        let mut due: Vec<_> = (0..20).map(|_| task::spawn(wheel.sleep(ms(100)))).collect();
        for t in &mut due {
            assert!(t.poll().is_pending());
        }
        if driver_waiting {
            // The driver runs, finds nothing due and waits on its timer.
            tokio::time::advance(ms(10)).await;
            assert!(due.iter().all(|t| !t.is_woken()), "woken early");
        }
        let rest = if driver_waiting { 90 } else { 100 };
        tokio::time::advance(ms(rest)).await;
        let woken = due.iter().filter(|t| t.is_woken()).count();
        assert_eq!(
            woken, 20,
            "driver waiting: {driver_waiting}: only {woken} of 20 woken when advance returned"
        );
        for t in &mut due {
            assert!(t.poll().is_ready());
        }
    }
}
