//! Switching `use tokio::time::{...}` to `use tokio_wheel::{...}`: the names
//! exist, are tokio's own where they are types tokio's code names, and behave
//! like tokio's.

use std::panic;
use std::sync::{Arc, Mutex};

// The `use` line of a program written for `tokio::time`, with only the crate
// name changed.
use tokio_wheel::{interval, sleep, timeout, Duration, Instant, MissedTickBehavior};

#[tokio::test(start_paused = true)]
async fn the_use_line_of_tokio_time_compiles_unchanged() {
    // `Instant` is the clock paused time moves, and `MissedTickBehavior` is
    // tokio's own type: code that names tokio's passes it to the wheel.
    fn tokio_instant(t: tokio::time::Instant) -> tokio::time::Instant {
        t
    }
    let start: Instant = tokio_instant(Instant::now());
    let mut every = interval(Duration::from_millis(100));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Skip);
    every.tick().await;
    sleep(Duration::from_millis(30)).await;
    assert!(
        timeout(Duration::from_millis(10), std::future::pending::<()>())
            .await
            .is_err()
    );
    assert_eq!(start.elapsed(), Duration::from_millis(40));
}

#[tokio::test(start_paused = true)]
async fn interval_reset_after_ticks_after_the_duration_then_every_period() {
    let mut every = interval(Duration::from_millis(100));
    every.tick().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    every.reset_after(Duration::from_millis(20));
    let now = Instant::now();
    assert_eq!(every.tick().await, now + Duration::from_millis(20));
    assert_eq!(every.tick().await, now + Duration::from_millis(120));
    // As tokio's: a duration too long to add saturates, it does not panic.
    every.reset_after(Duration::MAX);
    assert!(
        tokio::time::timeout(Duration::from_secs(3600), every.tick())
            .await
            .is_err()
    );
}

/// Runs `f`, which must panic, and returns where the panic says it was
/// (file and line).
fn panic_location(f: impl FnOnce() + panic::UnwindSafe) -> (String, u32) {
    static HOOK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
    let seen2 = seen.clone();
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| (l.file().to_owned(), l.line()));
        *seen2.lock().unwrap() = at;
    }));
    let result = panic::catch_unwind(f);
    panic::set_hook(previous);
    assert!(result.is_err(), "did not panic");
    let at = seen.lock().unwrap().take();
    at.expect("the panic had a location")
}

#[test]
fn a_zero_period_panics_in_the_callers_file_as_tokio_reports_it() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _in_runtime = rt.enter();
    let wheel = tokio_wheel::Wheel::new();
    type Case = fn(&tokio_wheel::Wheel);
    let cases: [Case; 4] = [
        |_| drop(interval(Duration::ZERO)),
        |_| drop(tokio_wheel::interval_at(Instant::now(), Duration::ZERO)),
        |w| drop(w.interval(Duration::ZERO)),
        |w| drop(w.interval_at(Instant::now(), Duration::ZERO)),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        let w = wheel.clone();
        let (file, _line) = panic_location(move || case(&w));
        assert_eq!(file, file!(), "case {i}: reported inside the crate");
    }
    // The same message as tokio's.
    let message = panic::catch_unwind(|| drop(tokio::time::interval(Duration::ZERO)))
        .unwrap_err()
        .downcast_ref::<&str>()
        .map(|s| s.to_string());
    let ours = panic::catch_unwind(|| drop(interval(Duration::ZERO)))
        .unwrap_err()
        .downcast_ref::<&str>()
        .map(|s| s.to_string());
    assert_eq!(ours, message);
}
