//! Loom models of the driver's protocol. Loom runs every interleaving (up to
//! a preemption bound) and each model asserts what must hold in all of them.
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_wheel_loom" cargo test --release --lib loom_
//! ```
//!
//! `LOOM_MAX_PREEMPTIONS` (default 3 here) trades depth for time.
//!
//! Built so, the crate's shard lock, stranded list, timer-waker locks and
//! hand-off atomics are loom's (`crate::sync`), so the models marked *real*
//! below run the very code a `Sleep`, a `TimerHandle`, the firing pass and
//! `Wheel::shutdown` run: `SleepEntry` (registration, waker swap, lock-free
//! poll, reset, drop), `callback::schedule` and `CallbackEntry::cancel`,
//! `WheelCore::{fire_due, shutdown}`. A driver is claimed up front in those,
//! since starting one needs a Tokio runtime.
//!
//! The driver-going-idle models run the real [`Handoff`] with a registration
//! written out (link under the shard lock, then plan), because the real one
//! would spawn a driver task. The `should_panic` models are deliberately
//! broken copies of a step, to show the models catch that bug.

use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Mutex;
use loom::thread;
use tokio::time::Instant;

use super::callback::{self, Cancel};
use super::fire::{Pass, Step as PassStep};
use super::handoff::{FiredUpto, Handoff, Plan, IDLE};
use super::{Config, Shards, SleepEntry, Step, WheelCore};
use crate::sync::Lock;
use crate::timer_task::TimerTask;
use crate::wheel::TimerWheel;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

// ---------------------------------------------------------------------------
// The real code.

const TICK: Duration = Duration::from_millis(10);

/// A deadline at tick `t`, as a `Sleep` keeps it (nanoseconds from origin).
fn deadline(t: u64) -> i64 {
    (t * TICK.as_nanos() as u64) as i64
}

/// A wheel of one shard, with a driver planned for tick 1 (so registrations
/// need not start one), whose origin is a second before now: deadlines at
/// its first ticks have passed by the clock, and a pass run up to them
/// stands for a driver running late.
fn wheel(max_pending: Option<usize>) -> Arc<Shards> {
    Arc::new(model_shards(max_pending))
}

/// The shards of [`wheel`], for a `Wheel` of the models elsewhere.
pub(crate) fn model_shards(max_pending: Option<usize>) -> Shards {
    let now = Instant::now();
    let origin = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
    let shards = WheelCore::new_shards(Config {
        origin,
        tick: TICK,
        slots: 8,
        shards: 1,
        runtime: None,
        max_pending,
        max_wakeups_per_tick: None,
    });
    assert!(shards.core().handoff.claim(1), "a driver runs");
    shards
}

/// The firing pass up to tick `t`, then the wakers woken, as the driver
/// does.
fn fire_upto(shards: &Shards, t: u64) -> usize {
    let core = shards.core();
    let mut p = Pass::default();
    core.fire_due(core.clock.instant_of(t).unwrap(), &mut p);
    let fired = p.fired.wakers.len() + p.fired.callbacks.len();
    for waker in p.fired.wakers.drain(..) {
        waker.wake();
    }
    fired
}

/// [`fire_upto`] as the driver task fires a large cascade: in steps that
/// link one cascaded entry each, the shard's lock let go in between, and
/// what each step fired woken before the next. Returns the sleeps woken.
fn fire_upto_in_steps(shards: &Shards, t: u64) -> usize {
    let core = shards.core();
    let mut p = Pass::default();
    core.begin_pass(core.clock.instant_of(t).unwrap(), &mut p);
    let mut fired = 0;
    loop {
        let step = core.fire_next_tick(&mut p, 1);
        fired += p.fired.wakers.len();
        for waker in p.fired.wakers.drain(..) {
            waker.wake();
        }
        p.fired.callbacks.clear();
        if step == PassStep::Done {
            break;
        }
    }
    core.end_pass(&mut p);
    fired
}

/// A waker that counts its wakes; `seen` is a loom atomic when a model
/// races on it, `count` is read after joining.
#[derive(Default)]
struct Counter {
    count: StdAtomicUsize,
    seen: AtomicUsize,
}

impl Counter {
    fn woken(&self) -> usize {
        self.count.load(SeqCst)
    }
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.count.fetch_add(1, SeqCst);
        self.seen.store(1, SeqCst);
    }
}

fn counter() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter::default());
    let w = Waker::from(c.clone());
    (c, w)
}

/// A sleep of `shards` due at tick `t`, registered by a first poll, and
/// its waker's counter.
fn registered(shards: &Shards, t: u64) -> (Arc<Counter>, Waker, SleepEntry) {
    let (c, waker) = counter();
    let mut entry = SleepEntry::new(shards.local().clone(), false, true);
    assert!(is_pending(&poll(&mut entry, t, &waker)));
    (c, waker, entry)
}

/// Asserts that exactly one place under `max_pending` (of 1) is free: what
/// a timer took was given back, and only once.
fn assert_one_place_free(core: &WheelCore) {
    assert!(core.admit().is_ok(), "the place was not given back");
    assert!(core.admit().is_err(), "the place was given back twice");
}

fn poll(entry: &mut SleepEntry, t: u64, waker: &Waker) -> Step {
    entry.poll(deadline(t), false, &mut Context::from_waker(waker))
}

/// [`poll`] as an interval's (`keep`: see "Completing without the lock" in
/// `entry.rs`).
fn poll_keeping(entry: &mut SleepEntry, t: u64, waker: &Waker) -> Step {
    entry.poll(deadline(t), true, &mut Context::from_waker(waker))
}

/// A poll racing a pass that fires the entry, from a thread of its own:
/// one made after the task was woken (`c.seen`, read before it) must see
/// the fire and complete; deciding `Pending` without the lock there would
/// lose the wake-up.
fn poll_racing_its_wake(entry: &mut SleepEntry, t: u64, waker: &Waker, c: &Counter) -> Step {
    let after_wake = c.seen.load(SeqCst) == 1;
    let step = poll(entry, t, waker);
    assert!(
        !after_wake || matches!(step, Step::Ready),
        "a poll after the wake decided Pending: lost wake-up"
    );
    step
}

fn is_pending(step: &Step) -> bool {
    matches!(step, Step::Pending)
}

/// A first poll of a new sleep of `shards` due at tick `t`, on a thread of
/// its own, which hands back what the poll came to and the entry.
fn first_poll_on_a_thread(
    shards: &Arc<Shards>,
    t: u64,
) -> (Arc<Counter>, thread::JoinHandle<(Step, SleepEntry)>) {
    let (c, waker) = counter();
    let shard = shards.local().clone();
    let sleeper = thread::spawn(move || {
        let mut entry = SleepEntry::new(shard, false, true);
        let step = poll(&mut entry, t, &waker);
        (step, entry)
    });
    (c, sleeper)
}

fn fell_back(step: &Step) -> bool {
    matches!(step, Step::FallBack(_))
}

/// Real: a `Sleep`'s first poll racing `Wheel::shutdown`. The sleep is
/// woken by shutdown's scan, or sees the flag and falls back; never left
/// pending with nobody to wake it.
#[test]
fn loom_registration_racing_shutdown() {
    model(|| {
        let shards = wheel(None);
        let (c, sleeper) = first_poll_on_a_thread(&shards, 5);
        let handed_back = shards.core().shutdown();
        let (step, entry) = sleeper.join().unwrap();
        let fell_back = fell_back(&step);
        assert!(handed_back.is_empty());
        assert!(
            fell_back || c.woken() == 1,
            "never woken: fell back {fell_back}, woken {}",
            c.woken()
        );
        drop(entry);
        assert_eq!(shards.pending(), 0, "entry left behind");
    });
}

/// Real: a poll with a new waker (the swap, under the lock) racing
/// `Wheel::shutdown`: the new waker is woken, or the poll falls back.
#[test]
fn loom_waker_swap_racing_shutdown() {
    model(|| {
        let shards = wheel(None);
        let (_, _first, mut entry) = registered(&shards, 5);
        let (c, second) = counter();
        let sleeper = thread::spawn(move || {
            let step = poll(&mut entry, 5, &second);
            (fell_back(&step), entry)
        });
        shards.core().shutdown();
        let (fell_back, entry) = sleeper.join().unwrap();
        assert!(
            fell_back || c.woken() == 1,
            "the new waker was never woken: fell back {fell_back}, woken {}",
            c.woken()
        );
        drop(entry);
    });
}

/// Real: a first poll racing a firing pass that reaches the sleep's tick.
/// The registration either lands before the pass (and the pass wakes it)
/// or finds the wheel past its tick and completes; never pending unwoken.
#[test]
fn loom_registration_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, sleeper) = first_poll_on_a_thread(&shards, 2);
        fire_upto(&shards, 2);
        let (step, entry) = sleeper.join().unwrap();
        let ready = matches!(step, Step::Ready | Step::Due);
        assert!(
            ready != (c.woken() == 1),
            "ready {ready}, woken {} times",
            c.woken()
        );
        drop(entry);
        assert_eq!(shards.pending(), 0);
    });
}

/// Real: `Sleep::reset` to an earlier deadline, already passed, racing the
/// pass that reaches the old one: the task is woken exactly once, by the
/// pass or by the reset.
#[test]
fn loom_reset_earlier_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, _waker, mut entry) = registered(&shards, 6);
        let resetter = thread::spawn(move || {
            entry.reset(deadline(6), deadline(3), false);
            entry
        });
        fire_upto(&shards, 6);
        let entry = resetter.join().unwrap();
        assert_eq!(c.woken(), 1, "woken once");
        drop(entry);
        assert_eq!(shards.pending(), 0);
    });
}

/// Real: dropping a registered `Sleep` racing the pass that fires it: its
/// waker is woken at most once, nothing is left in the wheel, and its place
/// under `max_pending` is given back exactly once.
#[test]
fn loom_cancel_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(Some(1));
        let (c, _waker, entry) = registered(&shards, 2);
        let dropper = thread::spawn(move || drop(entry));
        fire_upto(&shards, 2);
        dropper.join().unwrap();
        assert!(c.woken() <= 1);
        assert_eq!(shards.pending(), 0, "an entry was left behind");
        assert_one_place_free(shards.core());
    });
}

/// Real: dropping a registered `Sleep` racing a pass that links its
/// revolution's entries in steps (`TimerWheel::fire_within`), so the drop
/// may find its entry taken out of its slot and not yet linked again, at
/// the head of the list in transit or inside it. Its waker is woken at most
/// once, nothing is left in the wheel, and the other sleep of the slot
/// fires once, at its tick.
#[test]
fn loom_cancel_racing_a_cascade_in_steps() {
    model(|| {
        let shards = wheel(None);
        // Eight slots: tick 16 is at level 1, two revolutions on; the visit
        // of tick 8 takes it out, and the firing of 16 links it, a step of
        // one entry at a time.
        let (dropped, _w1, first) = registered(&shards, 16);
        let (kept, _w2, second) = registered(&shards, 16);
        let dropper = thread::spawn(move || drop(first));
        let fired = fire_upto_in_steps(&shards, 16);
        dropper.join().unwrap();
        assert!(dropped.woken() <= 1);
        assert_eq!(kept.woken(), 1, "the other entry was lost or fired twice");
        assert_eq!(fired, 1 + dropped.woken());
        drop(second);
        assert_eq!(shards.pending(), 0, "an entry was left behind");
    });
}

/// Real: dropping a registered `Sleep` racing the driver's linking of a
/// far list deferred by a cascade (`WheelCore::cascade_ahead`, one entry a
/// step, the shard's lock let go in between), so the drop may find its
/// entry at the head of the deferred list, inside it, or linked again. It
/// is never woken (it is dropped before its tick), nothing is left, and
/// the sleeps before and after it fire once each, at their ticks.
#[test]
fn loom_cancel_racing_a_deferred_cascade() {
    model(|| {
        let shards = wheel(None);
        // Eight slots: ticks 4096 to 8191 are one slot of level 2, and only
        // 4096 to 4103 are in its first revolution; 4104 and 4105 wait in its
        // far list once the wheel enters it.
        let (near, _w0, e0) = registered(&shards, 4096);
        let (dropped, _w1, first) = registered(&shards, 4104);
        let (kept, _w2, second) = registered(&shards, 4105);
        let core = shards.core();
        assert_eq!(fire_upto_in_steps(&shards, 4096), 1);
        assert_eq!(near.woken(), 1);
        let dropper = thread::spawn(move || drop(first));
        let mut p = Pass::default();
        core.begin_pass(core.clock.instant_of(4096).unwrap(), &mut p);
        while core.cascade_ahead(&mut p, 1) {}
        core.end_pass(&mut p);
        dropper.join().unwrap();
        assert_eq!(fire_upto(&shards, 4105), 1);
        assert_eq!((dropped.woken(), kept.woken()), (0, 1));
        drop((e0, second));
        assert_eq!(shards.pending(), 0, "an entry was left behind");
    });
}

/// Real: the lock-free poll of a sleep racing a pass that fires its tick
/// in steps of one cascaded entry, each step's wakers woken before the
/// next, with a callback of the same shard cascading at the same tick (so a
/// step can end between the sleeps' part and the callbacks'). A poll made
/// after the task was woken must see the fire: a waker handed out before
/// `fired_upto` reaches the tick would let it decide `Pending`.
#[test]
fn loom_lock_free_poll_racing_a_cascade_in_steps() {
    model(|| {
        let shards = wheel(None);
        let at = shards.core().clock.instant_of(16).unwrap();
        // Eight slots: tick 16 is at level 1, two revolutions on, until the
        // visit of tick 8 takes it out to be linked by 16.
        let (c, waker, mut entry) = registered(&shards, 16);
        let _callback = callback::schedule(&shards, TimerTask::call(at, || ())).unwrap();
        let s2 = shards.clone();
        let driver = thread::spawn(move || fire_upto_in_steps(&s2, 16));
        poll_racing_its_wake(&mut entry, 16, &waker, &c);
        assert_eq!(driver.join().unwrap(), 1);
    });
}

/// Real: the lock-free poll ("Polling without the lock" in `entry.rs`)
/// racing the pass that fires the entry. A poll made after the task was
/// woken must see the fire (and complete): deciding `Pending` without the
/// lock there would lose the wake-up.
#[test]
fn loom_lock_free_poll_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, mut entry) = registered(&shards, 2);
        let s2 = shards.clone();
        let driver = thread::spawn(move || fire_upto(&s2, 2));
        poll_racing_its_wake(&mut entry, 2, &waker, &c);
        assert_eq!(driver.join().unwrap(), 1);
    });
}

/// Real: an interval's poll, which completes without the lock once
/// `fired_upto` reaches its tick ("Completing without the lock" in
/// `entry.rs`), racing the pass that fires its entry, twice: the second
/// time under the key it kept (`TimerWheel::renew`). A poll made after the
/// wake completes; one made before it either waits (and is woken) or
/// completes while the pass still delivers. Each tick fires once, never
/// before its time, and the kept entry is freed with the `Sleep`.
#[test]
fn loom_lock_free_completion_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, mut entry) = registered(&shards, 2);
        for (round, t) in [(1, 2), (2, 4)] {
            let s2 = shards.clone();
            let driver = thread::spawn(move || fire_upto(&s2, t));
            let after_wake = c.seen.load(SeqCst) == 1;
            let step = poll_keeping(&mut entry, t, &waker);
            assert!(
                !after_wake || matches!(step, Step::Ready),
                "a poll after the wake decided Pending: lost wake-up"
            );
            assert!(
                !matches!(step, Step::Ready) || shards.local().may_have_fired(t),
                "completed before the pass fired tick {t}"
            );
            assert_eq!(driver.join().unwrap(), 1, "tick {t} fired once");
            if !matches!(step, Step::Ready) {
                assert!(matches!(poll_keeping(&mut entry, t, &waker), Step::Ready));
            }
            assert_eq!(c.woken(), round);
            c.seen.store(0, SeqCst);
            assert_eq!(shards.pending(), 0);
            // The next tick, linked again under the same key.
            entry.reset(deadline(t), deadline(t + 2), true);
            assert!(is_pending(&poll_keeping(&mut entry, t + 2, &waker)));
            assert_eq!(shards.pending(), 1);
            assert_eq!(fire_upto(&shards, t + 1), 0, "fired early");
        }
        assert_eq!(shards.local().lock().sleeps.len(), 1, "one key, kept");
        drop(entry);
        assert_eq!(shards.pending(), 0);
        assert_eq!(shards.local().lock().sleeps.len(), 0, "the kept key leaked");
    });
}

/// Real: a reset to a later deadline (the store into the `Sleep`'s deadline
/// slot, no lock) racing the pass that reaches its entry ("Moving a deadline
/// later without the lock" in `deadline.rs`). The pass files the entry again
/// for the new deadline, or, reading the old one, fires it and wakes the
/// task, whose poll finds the deadline not passed by the clock and links it
/// again. Either way it is never lost (see [`fires_once_at_the_new_deadline`]).
#[test]
fn loom_reset_later_racing_a_refiling_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, mut entry) = registered(&shards, 2);
        // The first push back shares the deadline: the entry stays at 2.
        entry.reset(deadline(2), deadline(3), false);
        let (entry, woken) = push_back_racing_a_pass(&shards, &c, entry, 3);
        fires_once_at_the_new_deadline(&shards, &c, &waker, entry, woken);
    });
}

/// Real: the first push back of a registered `Sleep`, which tracks its entry
/// under the lock and, while the wheel has not reached the entry's tick,
/// fills the slot from what the `Sleep` knows (`SleepEntry::track`), racing
/// the pass that fires that tick. The entry is tracked before the pass gets
/// there, which then files it again, or the pass fires it first and the
/// push back finds it fired and leaves it to the poll, which links it again:
/// tracked exactly when the pass did not fire it (a push back that took the
/// entry for pending after it fired would track it anyway). Either way it is
/// never lost (see [`fires_once_at_the_new_deadline`]).
#[test]
fn loom_first_push_back_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, entry) = registered(&shards, 2);
        assert!(entry.knows_its_waker(), "the push back would read the slab");
        let (entry, woken) = push_back_racing_a_pass(&shards, &c, entry, 2);
        assert_eq!(
            entry.is_tracked(),
            woken == 0,
            "tracked though fired, or not though pending"
        );
        fires_once_at_the_new_deadline(&shards, &c, &waker, entry, woken);
    });
}

/// The new deadline of [`push_back_racing_a_pass`]: 9 s ahead of the clock,
/// so no poll of these models completes.
const LATER: u64 = 1000;

/// Pushes the deadline of `entry`, due at tick `from`, back to [`LATER`]
/// from a thread of its own, while a pass runs up to `from`. Returns the
/// entry and how often its waker was woken meanwhile: at most once, by a
/// pass that fired the entry for its old deadline.
fn push_back_racing_a_pass(
    shards: &Shards,
    c: &Counter,
    mut entry: SleepEntry,
    from: u64,
) -> (SleepEntry, usize) {
    let resetter = thread::spawn(move || {
        entry.reset(deadline(from), deadline(LATER), false);
        entry
    });
    fire_upto(shards, from);
    let entry = resetter.join().unwrap();
    let woken = c.woken();
    assert!(woken <= 1, "woken {woken} times");
    (entry, woken)
}

/// After [`push_back_racing_a_pass`], which woke `entry`'s `waker` `woken`
/// times: the entry is still pending after the poll that follows (which
/// links it again if it fired), and is woken once at the new deadline's
/// tick, not before.
fn fires_once_at_the_new_deadline(
    shards: &Shards,
    c: &Counter,
    waker: &Waker,
    mut entry: SleepEntry,
    woken: usize,
) {
    assert!(is_pending(&poll(&mut entry, LATER, waker)));
    assert_eq!(shards.core().stats().rearmed, woken as u64);
    assert_eq!(shards.pending(), 1, "the entry was lost");
    fire_upto(shards, LATER - 1);
    assert_eq!(c.woken(), woken, "woken before the new deadline's tick");
    fire_upto(shards, LATER);
    assert_eq!(c.woken(), woken + 1, "not woken at the new deadline's tick");
    drop(entry);
    assert_eq!(shards.pending(), 0);
}

/// Real: the lock-free poll of a `Sleep` whose deadline was pushed back,
/// racing the pass that files its entry again (writing the slot's `filed`)
/// and then fires it at the new tick. A poll made after the task was woken
/// must see the fire and complete.
#[test]
fn loom_lock_free_poll_racing_a_refiling_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, mut entry) = registered(&shards, 2);
        entry.reset(deadline(2), deadline(3), false);
        poll_racing_a_refiling_pass(&shards, &c, &waker, &mut entry, 3);
    });
}

/// Real: as [`loom_lock_free_poll_racing_a_refiling_pass`], one refile
/// later. The pass has filed the entry again at 3 (the slot's `filed`) and
/// the `Sleep`, not polled since, still keeps 2; it pushes its deadline back
/// to 4 and polls without the lock while the pass files the entry at 4 (the
/// poll's read of the slot racing that write) and fires it there. A poll
/// made after the task was woken must complete.
#[test]
fn loom_lock_free_poll_racing_a_second_refiling_pass() {
    model(|| {
        let shards = wheel(None);
        let (c, waker, mut entry) = registered(&shards, 2);
        entry.reset(deadline(2), deadline(3), false);
        assert_eq!(fire_upto(&shards, 2), 0, "filed again at 3, not fired");
        entry.reset(deadline(3), deadline(4), false);
        poll_racing_a_refiling_pass(&shards, &c, &waker, &mut entry, 4);
    });
}

/// Polls `entry`, whose deadline was pushed back to tick `t`, without the
/// lock, while a pass on another thread files the entry again at `t` and
/// fires it there: it fires once, and a poll made after the task was woken
/// completes.
fn poll_racing_a_refiling_pass(
    shards: &Arc<Shards>,
    c: &Counter,
    waker: &Waker,
    entry: &mut SleepEntry,
    t: u64,
) {
    let s2 = shards.clone();
    let driver = thread::spawn(move || fire_upto(&s2, t));
    let step = poll_racing_its_wake(entry, t, waker, c);
    assert_eq!(driver.join().unwrap(), 1, "fired once, at tick {t}");
    if !matches!(step, Step::Ready) {
        assert!(matches!(poll(entry, t, waker), Step::Ready));
    }
    assert_eq!(c.woken(), 1);
}

/// Real: a `Sleep` whose deadline was pushed back (its entry tracked, its
/// slot holding the later tick) is dropped, and the next registration takes
/// its key, while a pass runs up to the new entry's tick. The pass refiles
/// the old entry or finds it gone, and fires the new one at its own tick
/// (or the registration finds the tick passed): never moves it by the old
/// deadline, as the old `Sleep` untracks its slot under the lock that
/// removes the entry (invariants 1 and 2 of `deadline.rs`).
#[test]
fn loom_key_given_back_by_a_tracked_sleep_racing_a_pass() {
    model(|| {
        let shards = wheel(None);
        let (_, _, mut old) = registered(&shards, 2);
        old.reset(deadline(2), deadline(40), false);
        let s2 = shards.clone();
        let driver = thread::spawn(move || fire_upto(&s2, 3));
        drop(old);
        let (c, waker) = counter();
        let mut new = SleepEntry::new(shards.local().clone(), false, true);
        let step = poll(&mut new, 3, &waker);
        let fired = driver.join().unwrap();
        assert_eq!(fired, c.woken(), "the pass fired the old entry");
        if is_pending(&step) {
            // Registered before the pass entered tick 3, or after: either
            // way it fires at 3.
            fire_upto(&shards, 3);
            assert_eq!(c.woken(), 1, "not woken at its own tick");
            assert!(matches!(poll(&mut new, 3, &waker), Step::Ready));
        } else {
            assert!(matches!(step, Step::Due), "the tick had passed");
        }
        drop(new);
        assert_eq!(shards.pending(), 0);
    });
}

/// Real: `TimerHandle::cancel` racing the pass that fires the callback:
/// exactly one of them gets it, and its place is given back once.
#[test]
fn loom_callback_cancel_racing_a_firing_pass() {
    model(|| {
        let shards = wheel(Some(1));
        let core = shards.core().clone();
        let at = core.clock.instant_of(2).unwrap();
        let entry = callback::schedule(&shards, TimerTask::call(at, || ())).unwrap();
        let e2 = entry.clone();
        let canceller = thread::spawn(move || matches!(e2.cancel(), Cancel::Cancelled(Some(_))));
        let fired = fire_upto(&shards, 2);
        let cancelled = canceller.join().unwrap();
        assert!(
            cancelled != (fired == 1),
            "cancelled {cancelled}, fired {fired}"
        );
        // Fired, not expired: that comes when its task runs (`Spawned`).
        assert_eq!(entry.status_name() == "fired", fired == 1);
        assert!(!entry.is_expired());
        assert_eq!(entry.is_cancelled(), cancelled);
        assert_one_place_free(&core);
    });
}

/// Real: `Wheel::schedule` racing `Wheel::shutdown`: the callback is handed
/// back by shutdown, or refused with its task; never lost in the wheel.
#[test]
fn loom_schedule_racing_shutdown() {
    model(|| {
        let shards = wheel(None);
        let at = shards.core().clock.instant_of(4).unwrap();
        let s2 = shards.clone();
        let scheduler =
            thread::spawn(
                move || match callback::schedule(&s2, TimerTask::call(at, || ())) {
                    Ok(entry) => (entry.is_cancelled(), false),
                    Err(rejected) => (false, rejected.is_shutdown()),
                },
            );
        let handed_back = shards.core().shutdown().len();
        let (_, refused) = scheduler.join().unwrap();
        assert!(
            handed_back + usize::from(refused) == 1,
            "handed back {handed_back}, refused {refused}"
        );
        assert_eq!(shards.pending(), 0);
    });
}

// ---------------------------------------------------------------------------
// The real hand-off, with a registration written out.

type Wheel = Arc<Mutex<TimerWheel<u32>>>;

fn shard(slots: usize, elapsed: u64) -> Wheel {
    Arc::new(Mutex::new(TimerWheel::new(slots, elapsed)))
}

fn locked(w: &Wheel) -> crate::sync::MutexGuard<'_, TimerWheel<u32>> {
    w.lock_or_recover()
}

/// What a registration ended up doing, as `SleepEntry::register` followed by
/// `WheelCore::schedule` does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Did {
    Nothing,
    Notified,
    Started,
}

fn register(shard: &Wheel, handoff: &Handoff, tick: u64, value: u32) -> Did {
    locked(shard).insert(tick, value).expect("after elapsed");
    loop {
        match handoff.plan(tick) {
            Plan::Covered => return Did::Nothing,
            Plan::Notify => return Did::Notified,
            Plan::Start if handoff.claim(tick) => return Did::Started,
            Plan::Start => {}
        }
    }
}

fn next_due(shards: &[Wheel]) -> u64 {
    shards
        .iter()
        .filter_map(|s| locked(s).next_due())
        .min()
        .unwrap_or(IDLE)
}

/// The driver found nothing due and decides to stop, while registrations on
/// one or two shards race it. Whatever the interleaving: at most one driver
/// exists afterwards, and every pending timer is covered by a driver that
/// will wake in time, was notified, or was just started.
fn driver_going_idle(registrants: usize) {
    model(move || {
        let shards: Vec<Wheel> = (0..registrants).map(|_| shard(4, 0)).collect();
        let handoff = Arc::new(Handoff::new());
        assert!(handoff.claim(1), "a driver runs, planned for tick 1");
        let threads: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (s, h) = (s.clone(), handoff.clone());
                let tick = 5 + i as u64;
                thread::spawn(move || (tick, register(&s, &h, tick, i as u32)))
            })
            .collect();
        let shards2 = shards.clone();
        let decision = handoff.publish(next_due(&shards), || next_due(&shards2));
        let did: Vec<(u64, Did)> = threads.into_iter().map(|t| t.join().unwrap()).collect();

        let started = did.iter().filter(|(_, d)| *d == Did::Started).count();
        let drivers = started + usize::from(decision.is_some());
        assert!(drivers <= 1, "two drivers: {decision:?} {did:?}");
        for (tick, what) in &did {
            let covered = started == 1
                || match decision {
                    Some(wake) => wake <= *tick || *what == Did::Notified,
                    None => false,
                };
            assert!(covered, "timer at {tick} lost: {decision:?} {did:?}");
        }
        let pending: usize = shards.iter().map(|s| s.lock_or_recover().pending()).sum();
        assert_eq!(pending, registrants, "registrations stay pending");
    });
}

#[test]
fn loom_registration_racing_the_driver_going_idle() {
    driver_going_idle(1);
}

#[test]
fn loom_two_shards_registering_while_the_driver_goes_idle() {
    driver_going_idle(2);
}

/// A driver that will sleep until tick 9 publishes that while a registration
/// at tick 3 lands: the registration must be seen by the rescan or notify.
#[test]
fn loom_earlier_registration_racing_the_driver_going_to_sleep() {
    model(|| {
        let s = shard(8, 0);
        s.lock_or_recover().insert(9, 0).unwrap();
        let handoff = Arc::new(Handoff::new());
        assert!(handoff.claim(1));
        let (s2, h2) = (s.clone(), handoff.clone());
        let reg = thread::spawn(move || register(&s2, &h2, 3, 1));
        let first = s.lock_or_recover().next_due().unwrap_or(IDLE);
        let s3 = s.clone();
        let decision = handoff.publish(first, || s3.lock_or_recover().next_due().unwrap_or(IDLE));
        let did = reg.join().unwrap();
        assert_ne!(did, Did::Started, "the driver never stopped");
        let wake = decision.expect("the driver keeps running");
        assert!(
            wake <= 3 || did == Did::Notified,
            "timer at 3 lost: sleeping until {wake}, registration {did:?}"
        );
    });
}

/// The driver is killed with its runtime (`release`, then its guard wakes
/// every pending timer) while a registration lands: either the registration
/// starts a new driver or the guard wakes it (its next poll starts one).
#[test]
fn loom_registration_racing_a_killed_driver() {
    model(|| {
        let s = shard(4, 0);
        let handoff = Arc::new(Handoff::new());
        assert!(handoff.claim(1));
        let (s2, h2) = (s.clone(), handoff.clone());
        let reg = thread::spawn(move || register(&s2, &h2, 2, 7));
        handoff.release();
        let woken: Vec<u32> = s.lock_or_recover().pending_values().copied().collect();
        let did = reg.join().unwrap();
        assert!(
            did == Did::Started || woken.contains(&7),
            "timer stranded: {did:?}, guard woke {woken:?}"
        );
    });
}

// ---------------------------------------------------------------------------
// Deliberately broken copies of a step: the models catch each.

/// How a write to an entry ended against a racing shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    /// Left in the wheel, for shutdown's scan to wake.
    Linked,
    /// Saw the flag and went over to Tokio's timer (entry taken out).
    FellBack,
}

/// `Shared::shutdown` racing a write of an entry (`Sleep::register`, or a
/// waker swap in `poll_registered`, which writes `value` over the entry's
/// waker `1`): the flag is read before the write and, if `recheck`, again
/// after it (`Shared::schedule`). Every interleaving must leave the entry
/// with its latest waker either woken by shutdown's scan or fallen back.
fn write_racing_shutdown(swap: bool, recheck: bool) {
    model(move || {
        let s = shard(4, 0);
        let existing = swap.then(|| s.lock_or_recover().insert(2, 1).unwrap());
        let handoff = Arc::new(Handoff::new());
        let (s2, h2) = (s.clone(), handoff.clone());
        let writer = thread::spawn(move || {
            if h2.is_shut_down() {
                return Wrote::FellBack;
            }
            let key = {
                let mut w = s2.lock_or_recover();
                match existing {
                    Some(key) => {
                        *w.value_mut(key).expect("pending") = 2;
                        key
                    }
                    None => w.insert(2, 2).expect("after elapsed"),
                }
            };
            if recheck && h2.is_shut_down() {
                s2.lock_or_recover().remove(key);
                return Wrote::FellBack;
            }
            Wrote::Linked
        });
        assert!(handoff.shut_down(), "the first shutdown");
        let woken: Vec<u32> = s.lock_or_recover().pending_values().copied().collect();
        let wrote = writer.join().unwrap();
        assert!(
            wrote == Wrote::FellBack || woken.contains(&2),
            "never woken: {wrote:?}, shutdown woke {woken:?}"
        );
    });
}

/// The written-out write, checking the flag before and after it, as the
/// real code does: no entry is lost (the real code's models are above).
#[test]
fn loom_written_out_write_racing_shutdown() {
    write_racing_shutdown(false, true);
    write_racing_shutdown(true, true);
}

/// The old order, checking the flag only before linking, loses the entry in
/// some interleaving: the model catches it.
#[test]
#[should_panic(expected = "never woken")]
fn loom_registration_racing_shutdown_checked_only_before_linking() {
    write_racing_shutdown(false, false);
}

/// The same for the waker swap.
#[test]
#[should_panic(expected = "never woken")]
fn loom_waker_swap_racing_shutdown_checked_only_before() {
    write_racing_shutdown(true, false);
}

/// The lock-free poll of a registered sleep ("Polling without the lock" in
/// the driver's docs) racing the driver firing its entry. The task is polled
/// once, before or after the driver's wake; a poll that comes after the wake
/// (it saw the wake) must not decide `Pending` without the lock, or the wake
/// is lost. `raise_first`: the driver raises `fired_upto` before waking, as
/// it does; the reverse order is caught.
fn lock_free_poll_racing_fire(raise_first: bool) {
    use loom::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering::{Acquire, Release};
    model(move || {
        let s = shard(4, 0);
        let key = s.lock_or_recover().insert(2, 7).unwrap();
        let fired = Arc::new(FiredUpto::new());
        let woken = Arc::new(AtomicBool::new(false));
        let (s2, f2, w2) = (s.clone(), fired.clone(), woken.clone());
        let driver = thread::spawn(move || {
            let mut out = Vec::new();
            {
                let mut w = s2.lock_or_recover();
                w.advance(2);
                w.fire(2, &mut out);
                if raise_first {
                    f2.raise(2);
                }
            }
            assert_eq!(out, vec![7]);
            w2.store(true, Release);
            if !raise_first {
                f2.raise(2);
            }
        });
        // The task's poll, with the waker it registered.
        let after_wake = woken.load(Acquire);
        let ready = fired.covers(2) && s.lock_or_recover().is_fired(key);
        driver.join().unwrap();
        assert!(
            ready || !after_wake,
            "a poll after the wake decided Pending without the lock: lost wake-up"
        );
    });
}

#[test]
fn loom_written_out_lock_free_poll_racing_fire() {
    lock_free_poll_racing_fire(true);
}

/// Waking before raising `fired_upto` loses the wake-up in some
/// interleaving: the model catches it.
#[test]
#[should_panic(expected = "lost wake-up")]
fn loom_lock_free_poll_racing_fire_raised_after_the_wake() {
    lock_free_poll_racing_fire(false);
}

/// The driver task is polled (say, by a notification) while its timer's
/// waker fires ticks: the two never fire at once, and if the driver task
/// finds the pass under way and returns `Pending`, the pass wakes it with
/// the waker it stored on that poll (no lost wake-up).
fn timer_pass_racing_a_driver_poll(end_before_take: bool) {
    use super::handoff::PassGate;
    model(move || {
        let gate = Arc::new(PassGate::new());
        // The driver task is waiting, with waker 1 stored.
        gate.leave();
        let task = Arc::new(Mutex::new(Some(1u32)));
        let firing = Arc::new(AtomicUsize::new(0));
        let (g2, t2, f2) = (gate.clone(), task.clone(), firing.clone());
        let pass = thread::spawn(move || {
            let mut passed = false;
            if g2.begin_pass() {
                assert_eq!(f2.fetch_add(1, SeqCst), 0, "the driver task fires too");
                f2.fetch_sub(1, SeqCst);
                passed = true;
                if end_before_take {
                    g2.end_pass();
                }
            }
            let woke = t2.lock_or_recover().take();
            if passed && !end_before_take {
                g2.end_pass();
            }
            woke
        });
        // The driver task's poll with its new waker 2.
        *task.lock_or_recover() = Some(2);
        let entered = gate.enter();
        if entered {
            assert_eq!(firing.fetch_add(1, SeqCst), 0, "the pass fires too");
            firing.fetch_sub(1, SeqCst);
        }
        let woke = pass.join().unwrap();
        assert!(
            entered || woke == Some(2),
            "the driver task returned Pending and was never woken: lost wake-up"
        );
    });
}

#[test]
fn loom_timer_pass_hands_back_to_the_driver() {
    timer_pass_racing_a_driver_poll(true);
}

/// Taking the driver task's waker before ending the pass loses the wake-up
/// in some interleaving: the model catches it.
#[test]
#[should_panic(expected = "lost wake-up")]
fn loom_timer_pass_taking_the_waker_before_ending_loses_it() {
    timer_pass_racing_a_driver_poll(false);
}
