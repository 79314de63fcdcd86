//! Model-based test of the public API on paused time.
//!
//! Random sequences of sleeps created, polled, reset and dropped while the
//! paused clock advances, on small wheels (2 to 16 slots, 1 to 20 ms ticks),
//! checked after every step against a model that knows, for every sleep,
//! whether it is idle, registered (and at which tick), fired or done:
//!
//! - a sleep is woken exactly when the clock reaches the first tick at or
//!   after the deadline it was registered for (tick `k` is the instant
//!   `origin + k * tick`, `origin` being the paused clock when the wheel was
//!   built): never before, and never later than that tick;
//! - a poll completes iff the clock is at or past its deadline (a registered
//!   sleep completes once woken, at its tick), with one latitude: a sleep
//!   made with a duration checked the clock when it was made, so if its
//!   deadline passes before its first poll, that poll may instead register it
//!   like any other (it then completes at its tick, at once if that has
//!   passed);
//! - `Wheel::pending()` counts the sleeps registered and not yet fired (a
//!   sleep fired but not yet polled is not pending), and the counters of
//!   `Wheel::stats()` and `Sleep::is_elapsed()` agree with the model.
//!
//! The model also expects no spurious wake-up: a sleep whose deadline was
//! moved later leaves its entry where it was, and the driver files the entry
//! again when it gets there, without waking the task. An extra wake is what
//! an entry firing early looks like from outside. (On one thread, with
//! paused time, no reset races the driver, the one case where a task is
//! woken at an old deadline, see `Stats::rearmed`.)
//!
//! The clock never moves by itself: the test task only ever yields (never
//! waits), so the runtime never idles and paused time does not auto-advance.
//! After each step the test yields until every wake the model expects has
//! been seen (bounded: a lost or late timer fails) and then a few times more,
//! which lets the wheel's driver task run to completion on the one thread.
//!
//! Each case runs on a thread of its own, watched: a driver that never
//! yields would hang the runtime, so a case that takes a minute is printed
//! and the binary exits. `PROPTEST_CASES` sets the number of cases (default
//! [`DEFAULT_CASES`]); failures are saved to `tests/regressions/model.txt`.

use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use proptest::test_runner::RngAlgorithm;
use tokio::time::Instant;
use tokio_wheel::{Sleep, Wheel};

/// Cases per property when `PROPTEST_CASES` is not set.
const DEFAULT_CASES: u32 = 1024;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        // Relative to the package root, where `cargo test` runs.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/regressions/model.txt",
        ))),
        // Much cheaper than the default ChaCha in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        // A failure is shrunk for at most this long (ms), so that a broken
        // wheel fails the run promptly rather than shrinking for ever.
        max_shrink_time: 30_000,
        ..ProptestConfig::default()
    }
}

/// Yields allowed for the driver to deliver the wakes the model expects.
const MAX_YIELDS: usize = 256;
/// Yields after that, so that a wake that should not happen has its chance.
const EXTRA_YIELDS: usize = 4;

/// A deadline, resolved against the clock when the operation runs.
#[derive(Debug, Clone, Copy)]
enum When {
    /// `now - n ms`.
    Past(u64),
    /// `now`: a zero duration.
    Now,
    /// `now + n ms`.
    Ms(u64),
    /// `now + n ms + off ns`: next to whole milliseconds.
    MsNanos(u64, i8),
    /// `origin + (current tick + k) * tick + off ns`: on and next to ticks.
    Tick { k: u64, off: i8 },
    /// `origin + (current revolution + revs) * tick * slots + off ns`: exact
    /// multiples of the ring's span and their neighbours.
    Span { revs: u64, off: i8 },
    /// `now + revs * span + extra ms`: well beyond the ring.
    Beyond { revs: u64, extra: u64 },
    /// `origin + (first revolution of the k-th level-2 slot after the
    /// current one + revs) * tick * slots + off ns`: past level 1's 512
    /// revolutions, on level 2, at and next to a level-2 slot's first
    /// revolution (its near list) and the start of its far list.
    Upper { k: u64, revs: u64, off: i8 },
}

/// How far to move the paused clock.
#[derive(Debug, Clone, Copy)]
enum Advance {
    Ms(u64),
    Nanos(u64),
    /// To `k` ticks after the next tick, `off` ns off it.
    ToTick {
        k: u64,
        off: i8,
    },
    /// Whole revolutions of the ring.
    Revs(u64),
    /// Level 1's whole span (512 revolutions) this many times, to reach
    /// timers on level 2.
    Upper(u64),
}

#[derive(Debug, Clone)]
enum Op {
    /// `sleep_until(when)`, or `sleep(when - now)` if `by_duration`.
    Create {
        when: When,
        by_duration: bool,
    },
    /// Creates a sleep and polls it at once.
    CreatePolled(When),
    Poll(Index),
    Drop(Index),
    Reset(Index, When),
    /// Polls a sleep with a new waker, as when it moves to another task.
    PollNewWaker(Index),
    Advance(Advance),
    /// Polls every woken sleep, as an executor runs woken tasks.
    PollWoken,
}

fn when() -> impl Strategy<Value = When> {
    prop_oneof![
        1 => (1u64..=50).prop_map(When::Past),
        1 => Just(When::Now),
        4 => (1u64..=400).prop_map(When::Ms),
        2 => (0u64..=100, -1i8..=1).prop_map(|(n, off)| When::MsNanos(n, off)),
        3 => (0u64..=40, -1i8..=1).prop_map(|(k, off)| When::Tick { k, off }),
        2 => (0u64..=4, -1i8..=1).prop_map(|(revs, off)| When::Span { revs, off }),
        1 => (1u64..=8, 0u64..=50).prop_map(|(revs, extra)| When::Beyond { revs, extra }),
        1 => (1u64..=2, 0u64..=2, -1i8..=1).prop_map(|(k, revs, off)| When::Upper { k, revs, off }),
    ]
}

fn advance() -> impl Strategy<Value = Advance> {
    prop_oneof![
        4 => (0u64..=60).prop_map(Advance::Ms),
        1 => (1u64..=3).prop_map(Advance::Nanos),
        3 => (0u64..=6, -1i8..=1).prop_map(|(k, off)| Advance::ToTick { k, off }),
        1 => (1u64..=3).prop_map(Advance::Revs),
        1 => (1u64..=2).prop_map(Advance::Upper),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (when(), any::<bool>()).prop_map(|(when, by_duration)| Op::Create { when, by_duration }),
        5 => when().prop_map(Op::CreatePolled),
        5 => any::<Index>().prop_map(Op::Poll),
        2 => any::<Index>().prop_map(Op::Drop),
        3 => (any::<Index>(), when()).prop_map(|(i, w)| Op::Reset(i, w)),
        2 => any::<Index>().prop_map(Op::PollNewWaker),
        6 => advance().prop_map(Op::Advance),
        2 => Just(Op::PollWoken),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=60)
}

/// A wheel's settings.
#[derive(Debug, Clone, Copy)]
struct Shape {
    tick_ms: u64,
    slots: usize,
    shards: usize,
    /// `Builder::max_wakeups_per_tick`: the driver yields between batches.
    max_wakeups: Option<usize>,
}

fn wheel_shape() -> impl Strategy<Value = Shape> {
    (
        1u64..=20,
        1u32..=4,
        0u32..=2,
        prop_oneof![3 => Just(None), 1 => (1usize..=3).prop_map(Some)],
    )
        .prop_map(|(tick_ms, s, sh, max_wakeups)| Shape {
            tick_ms,
            slots: 1 << s,
            shards: 1 << sh,
            max_wakeups,
        })
}

#[derive(Default)]
struct Flag(AtomicUsize);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Not in the wheel: never polled, or reset after completing.
    /// `checked`: made with a duration whose deadline was ahead of the clock
    /// then, and neither polled nor reset since.
    Idle { checked: bool },
    /// In the wheel, due at tick `entry`.
    Registered { entry: u64 },
    /// Woken by the wheel, not yet polled.
    Fired,
    /// Completed.
    Done,
}

struct Tracked {
    id: usize,
    sleep: Sleep,
    deadline: Instant,
    flag: Arc<Flag>,
    waker: Waker,
    wakes_seen: usize,
    st: St,
}

struct Model {
    wheel: Wheel,
    origin: Instant,
    tick: Duration,
    slots: u64,
    sleeps: Vec<Tracked>,
    next_id: usize,
    registered: u64,
    /// Entries that fired, the timer's own fire or not.
    fired: u64,
    cancelled: u64,
    /// Fired sleeps whose poll found the deadline ahead and linked them again.
    rearmed: u64,
    /// What happened, for failure messages.
    log: Vec<String>,
}

impl Model {
    fn new(shape: Shape) -> Model {
        let Shape {
            tick_ms,
            slots,
            shards,
            max_wakeups,
        } = shape;
        let origin = Instant::now();
        let tick = Duration::from_millis(tick_ms);
        let mut builder = Wheel::builder().tick(tick).slots(slots).shards(shards);
        if let Some(n) = max_wakeups {
            builder = builder.max_wakeups_per_tick(n);
        }
        let wheel = builder.build().unwrap();
        assert_eq!(wheel.slots(), slots);
        Model {
            wheel,
            origin,
            tick,
            slots: slots as u64,
            sleeps: Vec::new(),
            next_id: 0,
            registered: 0,
            fired: 0,
            cancelled: 0,
            rearmed: 0,
            log: Vec::new(),
        }
    }

    fn tick_nanos(&self) -> u128 {
        self.tick.as_nanos()
    }

    /// The first tick at or after `t` (tick 0 for anything before origin).
    fn ceil(&self, t: Instant) -> u64 {
        let n = t.saturating_duration_since(self.origin).as_nanos();
        n.div_ceil(self.tick_nanos()) as u64
    }

    /// The last tick at or before `t`.
    fn floor(&self, t: Instant) -> u64 {
        let n = t.saturating_duration_since(self.origin).as_nanos();
        (n / self.tick_nanos()) as u64
    }

    fn instant_of(&self, tick: u64) -> Instant {
        let n = u128::from(tick) * self.tick_nanos();
        self.origin + Duration::from_nanos(n as u64)
    }

    fn span(&self) -> Duration {
        self.tick * self.slots as u32
    }

    fn resolve(&self, when: When) -> Instant {
        let now = Instant::now();
        let nudge = |t: Instant, off: i8| match off {
            -1 => t.checked_sub(Duration::from_nanos(1)).unwrap_or(t),
            1 => t + Duration::from_nanos(1),
            _ => t,
        };
        match when {
            When::Past(n) => now.checked_sub(Duration::from_millis(n)).unwrap_or(now),
            When::Now => now,
            When::Ms(n) => now + Duration::from_millis(n),
            When::MsNanos(n, off) => nudge(now + Duration::from_millis(n), off),
            When::Tick { k, off } => nudge(self.instant_of(self.floor(now) + k), off),
            When::Span { revs, off } => {
                let rev = self.floor(now) / self.slots;
                nudge(self.instant_of((rev + revs) * self.slots), off)
            }
            When::Beyond { revs, extra } => {
                now + self.span() * revs as u32 + Duration::from_millis(extra)
            }
            When::Upper { k, revs, off } => {
                // The `k`-th level-2 slot after the current one, `revs`
                // revolutions into it.
                let rev = self.floor(now) / self.slots;
                let slot = ((rev >> 9) + k) << 9;
                nudge(self.instant_of((slot + revs) * self.slots), off)
            }
        }
    }

    fn create(&mut self, when: When, by_duration: bool) {
        let now = Instant::now();
        let mut deadline = self.resolve(when);
        if by_duration {
            deadline = deadline.max(now);
        }
        let sleep = if by_duration {
            self.wheel.sleep(deadline - now)
        } else {
            self.wheel.sleep_until(deadline)
        };
        assert_eq!(sleep.deadline(), deadline, "Sleep::deadline()");
        let flag = Arc::new(Flag::default());
        let waker = Waker::from(flag.clone());
        let id = self.next_id;
        self.next_id += 1;
        self.log.push(format!(
            "create #{id} deadline {:?} (tick {})",
            deadline - self.origin,
            self.ceil(deadline)
        ));
        self.sleeps.push(Tracked {
            id,
            sleep,
            deadline,
            flag,
            waker,
            wakes_seen: 0,
            st: St::Idle {
                checked: by_duration && deadline > now,
            },
        });
    }

    fn poll(&mut self, i: usize) {
        let now = Instant::now();
        let new_entry = self.ceil(self.sleeps[i].deadline);
        let t = &mut self.sleeps[i];
        let res = Pin::new(&mut t.sleep).poll(&mut Context::from_waker(&t.waker));
        let due = t.deadline <= now;
        let before = t.st;
        let (expect_ready, next) = match t.st {
            // Both outcomes keep the promise; which one depends on how far the
            // driver has advanced the wheel, which the model does not track.
            St::Idle { checked: true } if due => {
                if res.is_ready() {
                    (true, St::Done)
                } else {
                    (false, St::Registered { entry: new_entry })
                }
            }
            St::Idle { .. } | St::Fired if due => (true, St::Done),
            St::Idle { .. } | St::Fired => (false, St::Registered { entry: new_entry }),
            // Settled: a registered sleep has not reached its tick yet.
            St::Registered { .. } => (false, t.st),
            St::Done => (true, St::Done),
        };
        let id = t.id;
        self.log.push(format!(
            "poll #{id} at {:?}: {before:?} -> {res:?}",
            now - self.origin
        ));
        assert_eq!(
            res.is_ready(),
            expect_ready,
            "poll of #{id} ({before:?}, deadline {:?}) at {:?}\n{}",
            t.deadline - self.origin,
            now - self.origin,
            self.log.join("\n")
        );
        if res.is_ready() {
            assert!(now >= t.deadline, "completed before its deadline");
        }
        match (before, next) {
            (St::Fired, St::Registered { .. }) => self.rearmed += 1,
            (St::Idle { .. }, St::Registered { .. }) => self.registered += 1,
            _ => {}
        }
        t.st = next;
    }

    fn drop_sleep(&mut self, i: usize) {
        let t = self.sleeps.swap_remove(i);
        self.log.push(format!("drop #{} ({:?})", t.id, t.st));
        if let St::Registered { .. } = t.st {
            self.cancelled += 1;
        }
        drop(t.sleep);
    }

    fn reset(&mut self, i: usize, when: When) {
        let deadline = self.resolve(when);
        let now = Instant::now();
        let new_tick = self.ceil(deadline);
        let old_tick = self.ceil(self.sleeps[i].deadline);
        // A tick whose instant has come: a timer "registered" there is due
        // (the settle that follows expects its wake).
        let due_tick = self.floor(now);
        let t = &mut self.sleeps[i];
        t.sleep.reset(deadline);
        t.deadline = deadline;
        t.st = match t.st {
            St::Done | St::Idle { .. } => St::Idle { checked: false },
            // To another tick, earlier or later: the entry moves there (and
            // fires at once if that tick has passed: the settle that follows
            // sees the wake). Within the same tick it stays. A fired sleep
            // stays fired: its next poll completes or registers again.
            // Moved earlier to a deadline already passed: it fires at once,
            // by the clock, even before its tick (never early: the deadline
            // has passed), so that the next poll completes.
            St::Registered { .. } if new_tick < old_tick && deadline <= now => {
                St::Registered { entry: due_tick }
            }
            St::Registered { .. } if new_tick < old_tick => St::Registered { entry: new_tick },
            // Later: the task is woken at the new tick, not at the old one
            // (where the driver files the entry again).
            St::Registered { .. } if new_tick > old_tick => St::Registered { entry: new_tick },
            st => st,
        };
        self.log.push(format!(
            "reset #{} to {:?} (tick {new_tick}): {:?}",
            t.id,
            deadline - self.origin,
            t.st
        ));
    }

    /// Lets the driver run, then checks every sleep against the model.
    async fn settle(&mut self) {
        for _ in 0..MAX_YIELDS {
            if self.expected_wakes_seen() {
                break;
            }
            tokio::task::yield_now().await;
        }
        for _ in 0..EXTRA_YIELDS {
            tokio::task::yield_now().await;
        }
        self.check();
    }

    fn expected_wakes_seen(&self) -> bool {
        let now = Instant::now();
        self.sleeps.iter().all(|t| match t.st {
            St::Registered { entry } if self.instant_of(entry) <= now => {
                t.flag.0.load(Ordering::SeqCst) > t.wakes_seen
            }
            _ => true,
        })
    }

    fn check(&mut self) {
        let now = Instant::now();
        let at = now - self.origin;
        let mut pending = 0;
        for i in 0..self.sleeps.len() {
            let wakes = self.sleeps[i].flag.0.load(Ordering::SeqCst);
            let t = &self.sleeps[i];
            let new = wakes - t.wakes_seen;
            let id = t.id;
            let st = t.st;
            match st {
                St::Registered { entry } => {
                    let fire_at = self.instant_of(entry);
                    if fire_at <= now {
                        assert!(
                            new > 0,
                            "#{id} due at tick {entry} ({:?}) not woken at {at:?}: lost or late\n{}",
                            fire_at - self.origin,
                            self.log.join("\n")
                        );
                        assert!(fire_at >= self.origin);
                        self.fired += 1;
                        self.sleeps[i].st = St::Fired;
                    } else {
                        assert_eq!(
                            new,
                            0,
                            "#{id} due at tick {entry} ({:?}) woken early, at {at:?}\n{}",
                            fire_at - self.origin,
                            self.log.join("\n")
                        );
                        pending += 1;
                    }
                }
                _ => assert_eq!(
                    new,
                    0,
                    "#{id} ({st:?}) woken though not in the wheel, at {at:?}\n{}",
                    self.log.join("\n")
                ),
            }
            let t = &mut self.sleeps[i];
            t.wakes_seen = wakes;
            let elapsed = match t.st {
                St::Idle { .. } | St::Registered { .. } => false,
                St::Fired => t.deadline <= now,
                St::Done => true,
            };
            assert_eq!(t.sleep.is_elapsed(), elapsed, "is_elapsed of #{id}");
        }
        assert_eq!(
            self.wheel.pending(),
            pending,
            "pending() at {at:?}\n{}",
            self.log.join("\n")
        );
        let stats = self.wheel.stats();
        // A re-armed entry's earlier fire is not counted as the timer's.
        assert_eq!(
            (
                stats.registered,
                stats.fired,
                stats.cancelled,
                stats.rearmed
            ),
            (
                self.registered,
                self.fired - self.rearmed,
                self.cancelled,
                self.rearmed
            ),
            "stats (registered, fired, cancelled, rearmed) at {at:?}\n{}",
            self.log.join("\n")
        );
        assert_eq!(stats.pending, pending, "stats.pending");
    }

    async fn advance(&mut self, a: Advance) {
        let now = Instant::now();
        let by = match a {
            Advance::Ms(n) => Duration::from_millis(n),
            Advance::Nanos(n) => Duration::from_nanos(n),
            Advance::ToTick { k, off } => {
                let target = self.instant_of(self.floor(now) + 1 + k);
                let target = match off {
                    -1 => target - Duration::from_nanos(1),
                    1 => target + Duration::from_nanos(1),
                    _ => target,
                };
                target.saturating_duration_since(now)
            }
            Advance::Revs(n) => self.span() * n as u32,
            Advance::Upper(k) => self.span() * (512 * k) as u32,
        };
        self.log
            .push(format!("advance {by:?} to {:?}", now + by - self.origin));
        tokio::time::advance(by).await;
        assert_eq!(Instant::now(), now + by, "the paused clock moved by itself");
    }

    async fn apply(&mut self, op: &Op) {
        match *op {
            Op::Create { when, by_duration } => self.create(when, by_duration),
            Op::CreatePolled(when) => {
                self.create(when, false);
                self.poll(self.sleeps.len() - 1);
            }
            Op::Poll(i) if !self.sleeps.is_empty() => self.poll(i.index(self.sleeps.len())),
            Op::Drop(i) if !self.sleeps.is_empty() => self.drop_sleep(i.index(self.sleeps.len())),
            Op::Reset(i, when) if !self.sleeps.is_empty() => {
                self.reset(i.index(self.sleeps.len()), when)
            }
            Op::PollNewWaker(i) if !self.sleeps.is_empty() => {
                let i = i.index(self.sleeps.len());
                let t = &mut self.sleeps[i];
                t.flag = Arc::new(Flag::default());
                t.waker = Waker::from(t.flag.clone());
                t.wakes_seen = 0;
                self.log.push(format!("new waker for #{}", t.id));
                self.poll(i);
            }
            Op::Advance(a) => self.advance(a).await,
            Op::PollWoken => {
                for i in 0..self.sleeps.len() {
                    if self.sleeps[i].st == St::Fired {
                        self.poll(i);
                    }
                }
            }
            Op::Poll(_) | Op::Drop(_) | Op::Reset(..) | Op::PollNewWaker(_) => {}
        }
        self.settle().await;
    }

    /// Drops everything; the wheel ends empty and its driver stops.
    async fn finish(&mut self) {
        while !self.sleeps.is_empty() {
            self.drop_sleep(self.sleeps.len() - 1);
        }
        self.settle().await;
        assert_eq!(self.wheel.pending(), 0);
        // Past every tick the driver may still plan to wake at (the
        // farthest deadline made is `When::Upper`'s, about 1026 revolutions
        // out): it finds nothing and exits.
        tokio::time::advance(self.span() * (512 * 3) + Duration::from_secs(10)).await;
        for _ in 0..MAX_YIELDS {
            if tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
                == 0
            {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
            0,
            "the driver outlived the last timer"
        );
        self.check();
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // A failing case unwinds through here with a wheel that may be
        // broken: dropping its sleeps could panic again and abort the whole
        // binary before proptest shrinks and saves the case. Leak them.
        if std::thread::panicking() {
            for t in self.sleeps.drain(..) {
                std::mem::forget(t.sleep);
            }
        }
    }
}

/// How long one case may take before it counts as hung (a case takes about
/// a millisecond).
const HANG: Duration = Duration::from_secs(60);

/// Runs one case on a paused current-thread runtime of its own thread. A
/// wheel whose driver loops forever would hang the runtime's thread, and with
/// it the test binary: the case is then reported and the process exits
/// (proptest cannot shrink a case that never returns).
fn run_case<F, Fut>(test: &str, what: String, case: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(test.to_owned())
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap()
                .block_on(case());
            let _ = tx.send(());
        });
    let thread = thread.expect("spawn a case thread");
    match rx.recv_timeout(HANG) {
        Ok(()) => thread.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // Straight to stderr: the harness's capture of `eprintln!` is lost
            // when the process exits.
            let _ = writeln!(
                std::io::stderr(),
                "{test}: a case hung for {HANG:?} (a driver or wheel loop?): {what}"
            );
            std::process::exit(101);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// Random use of the public API agrees with the model at every step.
    #[test]
    fn sleeps_match_the_model(shape in wheel_shape(), ops in ops()) {
        run_case("sleeps_match_the_model", format!("{shape:?} {ops:?}"), move || async move {
            let mut m = Model::new(shape);
            m.settle().await;
            for op in &ops {
                m.apply(op).await;
            }
            m.finish().await;
        });
    }

    /// After 2^30 ms (about 12.4 days) of uptime, timers still fire exactly on
    /// their tick, whether the wheel was built at the start (its tick numbers
    /// are then large), with timers pending across the jump, or after it.
    #[test]
    fn long_uptime_fires_on_time(
        shape in wheel_shape(),
        before in prop::collection::vec(op(), 0..=8),
        jump_extra_ms in 0u64..=1_000,
        build_after in any::<bool>(),
        ops in ops(),
    ) {
        let jump = Duration::from_millis((1 << 30) + jump_extra_ms);
        let what = format!("{shape:?} before {before:?} jump {jump:?} build_after {build_after} {ops:?}");
        run_case("long_uptime_fires_on_time", what, move || async move {
            if build_after {
                tokio::time::advance(jump).await;
            }
            let mut m = Model::new(shape);
            m.settle().await;
            for op in &before {
                m.apply(op).await;
            }
            if !build_after {
                m.log.push(format!("jump {jump:?}"));
                tokio::time::advance(jump).await;
                m.settle().await;
                assert!(m.floor(Instant::now()) >= (1 << 30) / shape.tick_ms);
            }
            for op in &ops {
                m.apply(op).await;
            }
            m.finish().await;
        });
    }
}
