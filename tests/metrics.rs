//! `Wheel::stats`: every counter, lag with paused and with blocked real time
//! (and the warning it logs), and burst smoothing with
//! `Builder::max_wakeups_per_tick`.

mod common;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use futures::poll;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_wheel::error::BuildError;
use tokio_wheel::{Stats, Wheel};

use common::{alive_tasks, assert_non_decreasing, ms, tick_wheel, yield_until, Log};

#[tokio::test(start_paused = true)]
async fn registered_fired_cancelled_and_pending() {
    let wheel = tick_wheel(10, 64);
    assert_eq!(wheel.stats(), Stats::default(), "a new wheel");

    let never_polled = wheel.sleep(ms(10));
    let mut a = wheel.sleep(ms(30));
    let mut b = wheel.sleep(ms(40));
    let mut c = wheel.sleep(ms(50));
    for s in [&mut a, &mut b, &mut c] {
        assert!(poll!(s).is_pending());
    }
    let h1 = wheel.schedule(ms(20), || ()).unwrap();
    let h2 = wheel.schedule(ms(60), || ()).unwrap();
    let s = wheel.stats();
    assert_eq!(
        (s.pending, s.registered, s.fired, s.cancelled),
        (5, 5, 0, 0)
    );
    assert_eq!(s.pending, wheel.pending());

    drop(b);
    assert!(h2.cancel());
    let s = wheel.stats();
    assert_eq!(
        (s.pending, s.registered, s.fired, s.cancelled),
        (3, 5, 0, 2)
    );

    a.await;
    c.await;
    yield_until("the callback ran", || h1.is_expired()).await;
    drop(never_polled);
    let s = wheel.stats();
    assert_eq!(
        (s.pending, s.registered, s.fired, s.cancelled),
        (0, 5, 3, 2)
    );
    assert_eq!(s.driver_starts, 1);
    assert!(
        (1..=6).contains(&s.driver_wakeups),
        "wake-ups for 3 ticks: {s:?}"
    );
    assert_eq!(s.ticks, 3, "ticks 2, 3 and 5 had something due: {s:?}");
}

#[tokio::test(start_paused = true)]
async fn driver_starts_count_each_restart_after_idle() {
    let wheel = tick_wheel(10, 64);
    for round in 1..=3u64 {
        wheel.sleep(ms(20)).await;
        yield_until("the driver stops when idle", || alive_tasks() == 0).await;
        assert_eq!(wheel.stats().driver_starts, round);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let s = wheel.stats();
    assert!(s.driver_wakeups >= 3 && s.driver_wakeups <= 9, "{s:?}");
}

/// A 10 s timer on a 10 ms wheel: the driver visits one tick and skips the
/// 999 before it, waking a few times rather than 1000.
#[tokio::test(start_paused = true)]
async fn ticks_and_ticks_skipped_for_one_far_timer() {
    let wheel = tick_wheel(10, 512);
    wheel.sleep(Duration::from_secs(10)).await;
    let s = wheel.stats();
    assert!(s.ticks >= 1 && s.ticks <= 2, "{s:?}");
    assert!((998..=999).contains(&s.ticks_skipped), "{s:?}");
    assert_eq!(
        s.ticks + s.ticks_skipped,
        1000,
        "every tick is visited or skipped: {s:?}"
    );
    assert!(s.driver_wakeups <= 3, "{s:?}");
}

/// `max_batch` is the most timers woken and callbacks started for one tick.
#[tokio::test(start_paused = true)]
async fn max_batch_is_the_largest_tick() {
    let wheel = tick_wheel(10, 64);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let ran = ran.clone();
        wheel
            .schedule(ms(95), move || {
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    // 40 sleeps and 10 callbacks due in the 100 ms tick, 7 in the 200 ms one.
    let big: Vec<_> = (0..40).map(|i| wheel.sleep(ms(91 + i % 10))).collect();
    let small: Vec<_> = (0..7).map(|_| wheel.sleep(ms(200))).collect();
    let (_, _) = tokio::join!(join_all(big), join_all(small));
    yield_until("callbacks ran", || ran.load(SeqCst) == 10).await;
    let s = wheel.stats();
    assert_eq!(s.max_batch, 50, "{s:?}");
    assert_eq!(s.fired, 57);
    assert_eq!(s.ticks, 2);
}

#[tokio::test(start_paused = true)]
async fn lag_is_zero_with_paused_time() {
    let wheel = tick_wheel(10, 64);
    wheel.schedule(ms(33), || ()).unwrap();
    let sleeps: Vec<_> = [5, 17, 250, 1000, 6000]
        .into_iter()
        .map(|n| wheel.sleep(ms(n)))
        .collect();
    join_all(sleeps).await;
    let s = wheel.stats();
    assert_eq!(s.fired, 6);
    assert_eq!(
        (s.last_lag, s.max_lag),
        (Duration::ZERO, Duration::ZERO),
        "{s:?}"
    );
}

/// Real time: the only (current-thread) runtime thread is blocked for 100 ms
/// while a 20 ms timer is due. The driver runs that tick about 80 ms late,
/// records it, and warns about it (captured with a scoped subscriber).
#[test]
fn lag_is_measured_and_warned_when_the_runtime_is_blocked() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = Capture(events.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (blocked, recovered) = tracing::subscriber::with_default(subscriber, || {
        rt.block_on(async {
            let wheel = tick_wheel(10, 64);
            let blocker = tokio::spawn(async { std::thread::sleep(ms(100)) });
            let t0 = Instant::now();
            wheel.sleep(ms(20)).await;
            assert!(
                t0.elapsed() >= ms(100),
                "the sleep came before the block ended"
            );
            blocker.await.unwrap();
            let blocked = wheel.stats();

            wheel.sleep(ms(20)).await;
            (blocked, wheel.stats())
        })
    });
    assert!(blocked.last_lag >= ms(70), "{blocked:?}");
    assert_eq!(blocked.max_lag, blocked.last_lag);
    assert!(
        recovered.last_lag < blocked.max_lag,
        "an unblocked tick is less late: {recovered:?}"
    );
    assert_eq!(recovered.max_lag, blocked.max_lag);

    let events = events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|(level, msg)| *level == tracing::Level::WARN && msg.contains("late")),
        "no warning about the late tick: {events:?}"
    );
}

/// A `tracing` subscriber that keeps every event's level and message.
struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut msg = Message(String::new());
        event.record(&mut msg);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), msg.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

// ---------------------------------------------------------------------------
// Burst smoothing

const A: usize = 10_000;
const B: usize = 1_000;
const C: usize = 500;

/// What a burst run saw.
struct Burst {
    /// (group A done, group B done) each time the bystander task ran.
    observed: Vec<(usize, usize)>,
    /// The group of each sleep, in the order they completed.
    order: Vec<u8>,
    stats: Stats,
}

/// 10 000 sleeps due in the 50 ms tick (A), 1000 in the 60 ms tick (B) and
/// 500 at 200 ms (C), each in a task of its own on this current-thread
/// runtime. The clock jumps to 60 ms, so that the driver fires A and B in one
/// pass. A bystander task, woken by the first completion, records how far the
/// burst has got each time it is polled.
async fn burst(cap: Option<usize>) -> Burst {
    let t0 = Instant::now();
    let mut builder = Wheel::builder().tick(ms(10)).slots(64);
    if let Some(n) = cap {
        builder = builder.max_wakeups_per_tick(n);
    }
    let wheel = builder.build().unwrap();
    let done = Arc::new([
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ]);
    let first = Arc::new(Notify::new());
    let order = Log::new();
    let mut tasks = Vec::new();
    for (group, n, at) in [(0u8, A, ms(50)), (1, B, ms(60)), (2, C, ms(200))] {
        for i in 0..n {
            // Deadlines spread within the tick, at or before its instant.
            let deadline = t0 + at - Duration::from_micros((i % 10_000) as u64);
            let sleep = wheel.sleep_until(deadline);
            let (done, first, order) = (done.clone(), first.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                sleep.await;
                assert!(Instant::now() >= deadline, "early");
                done[group as usize].fetch_add(1, SeqCst);
                order.push(group);
                first.notify_one();
                Instant::now() - t0
            }));
        }
    }
    let observed = Arc::new(Mutex::new(Vec::new()));
    let bystander = {
        let (done, observed) = (done.clone(), observed.clone());
        tokio::spawn(async move {
            first.notified().await;
            loop {
                let seen = (done[0].load(SeqCst), done[1].load(SeqCst));
                observed.lock().unwrap().push(seen);
                if seen == (A, B) {
                    return;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    yield_until("all registered", || wheel.pending() == A + B + C).await;
    tokio::time::advance(ms(60)).await;
    let mut finished = Vec::new();
    for t in tasks {
        finished.push(t.await.unwrap());
    }
    bystander.await.unwrap();
    // A and B at 60 ms (the clock jumped there), C exactly at 200 ms.
    assert!(finished[..A + B].iter().all(|&d| d == ms(60)));
    assert!(finished[A + B..].iter().all(|&d| d == ms(200)));
    let observed = observed.lock().unwrap().clone();
    Burst {
        observed,
        order: order.snapshot(),
        stats: wheel.stats(),
    }
}

/// With `max_wakeups_per_tick(100)`, 10 000 timers due at once are delivered
/// in chunks: another task runs between them, long before the last one is
/// woken. All fire, none early, and timers of later ticks after those of
/// earlier ones.
#[tokio::test(start_paused = true)]
async fn max_wakeups_per_tick_lets_other_tasks_run_between_chunks() {
    let run = burst(Some(100)).await;
    assert_eq!(run.order.len(), A + B + C, "all fired");
    assert_non_decreasing(&run.order, "completion order across ticks");
    let during: Vec<_> = run.observed.iter().filter(|o| o.0 < A).collect();
    assert!(
        during.len() >= A / 100 / 2,
        "the bystander ran {} times before the last of the 10 000 woke: {:?}",
        during.len(),
        &run.observed[..run.observed.len().min(5)]
    );
    assert!(
        run.observed[0].0 <= 200,
        "first look after {:?}",
        run.observed[0]
    );
    assert!(
        run.observed.iter().all(|&(a, b)| b == 0 || a == A),
        "a timer of the 60 ms tick completed before the 50 ms tick was done"
    );
    assert_eq!(run.stats.max_batch, A as u64);
    assert_eq!(run.stats.fired, (A + B + C) as u64);
}

/// Without the cap, the same burst is woken in one go: the bystander only
/// runs once all 11 000 are done. (This is what makes the test above able to
/// fail.)
#[tokio::test(start_paused = true)]
async fn without_a_cap_other_tasks_wait_for_the_whole_batch() {
    let run = burst(None).await;
    assert_eq!(run.order.len(), A + B + C);
    assert_non_decreasing(&run.order, "completion order across ticks");
    assert_eq!(
        run.observed,
        [(A, B)],
        "the bystander ran only after the burst"
    );
}

#[test]
fn max_wakeups_per_tick_zero_is_a_build_error() {
    let err = Wheel::builder()
        .max_wakeups_per_tick(0)
        .build()
        .unwrap_err();
    assert_eq!(err, BuildError::ZeroWakeupsPerTick);
    assert!(err.to_string().contains("max_wakeups_per_tick"), "{err}");
    assert!(Wheel::builder().max_wakeups_per_tick(1).build().is_ok());
}
