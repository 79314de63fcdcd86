//! The firing pass: every tick up to now's, in tick order across shards.
//!
//! Run by the driver task ([`run`](super::run), with a delivery after each
//! tick) or by its timer's waker (`TimerWaker`, all ticks at once), never by
//! both at once (`PassGate`). A pass is [`WheelCore::begin_pass`], then
//! [`WheelCore::fire_next_tick`] until it says none is left, then
//! [`WheelCore::end_pass`]; delivering what fired (waking the wakers,
//! spawning the callbacks) is the caller's, after every lock is let go.
//!
//! A tick whose cascade is large is fired in steps: `fire_next_tick` links
//! at most the caller's budget of cascaded entries in a shard, then lets go
//! of its lock and says so ([`Step::Paused`]), and the driver task yields to
//! the runtime before it goes on with the same tick (`TimerWheel::fire_within`).
//! A million timers moving down a level at once thus hold a worker, and the
//! shard's lock, for a few thousand entries at a time, not for the whole
//! slot (tens of milliseconds, in which the worker runs nothing else and
//! fires none of Tokio's own timers).
//!
//! Entering a revolution, a wheel takes out the timers of the next one, to
//! be moved into its lowest level before that revolution begins, and the
//! far lists of the upper slots it enters; both wait
//! (`TimerWheel::cascade_ahead`). The driver task links them after the
//! pass's due ticks have fired, in steps of the same size, with a yield and
//! a new pass (a new clock reading) after each, so the ticks that come due
//! meanwhile fire on time rather than after the whole slot: at a million
//! idle timeouts the slot the wheel entered every 40.96 s (when level 1 had
//! 64 slots) held nearly all of them, and the ticks after it waited 80 to
//! 110 ms; a million connections
//! made within two seconds had some 300 000 first idle deadlines in each of
//! three 0.64 s slots, and each slot's first ticks waited about 45 ms. A
//! wheel's `next_due` sends the driver to the revolution before the one its
//! next timers are in, so that this happens a revolution ahead.
//!
//! Invariants kept here:
//! - Never early: a pass only reaches the last tick at or before its clock
//!   reading (`TickClock::floor`), and fires a tick only once every shard
//!   has been moved to the pass's tick, so a registration at or before it
//!   either was linked before (and is fired here) or completes at once.
//! - Tick order across shards: each round fires the earliest tick any shard
//!   has due, in every shard that has it due.
//! - `fired_upto` of a shard is raised under its lock right after firing a
//!   tick there, before any of that tick's wakers is woken ("Polling without
//!   the lock" in `entry.rs`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Waker;

use tokio::time::Instant;

use super::callback::Callback;
use super::handoff::IDLE;
use super::shard::{Shard, ShardState};
use super::WheelCore;
use crate::wheel::stays;

/// Buffers and state a firing pass keeps from one pass to the next.
#[derive(Default)]
pub(super) struct Pass {
    pub(super) shards: Vec<Arc<Shard>>,
    next: Vec<u64>,
    /// What fired, in the order it fired, for the caller to deliver.
    pub(super) fired: Fired,
    last_lag_warning: Option<Instant>,
    /// The pass under way: its clock reading and tick, the earliest tick a
    /// shard had reached before it, the ticks it fired, whether it noted
    /// its lag.
    now: Option<Instant>,
    now_tick: u64,
    from: u64,
    visited: u64,
    lag_noted: bool,
    /// Whether a step of the pass under way ran out of budget (so its
    /// clock reading is old), and whether a shard of it may have lists
    /// deferred (`TimerWheel::cascade_ahead`).
    paused: bool,
    ahead: bool,
    /// What the tick under way fired in the steps before this one (see
    /// [`Step::Paused`]).
    tick_fired: usize,
}

/// What a pass fired and its caller has yet to deliver, in firing order.
#[derive(Default)]
pub(super) struct Fired {
    pub(super) wakers: Vec<Waker>,
    pub(super) callbacks: Vec<Callback>,
    /// Empty between uses.
    scratch: Vec<Option<Callback>>,
}

impl Fired {
    fn len(&self) -> usize {
        self.wakers.len() + self.callbacks.len()
    }

    /// Moves everything in `other` here, after what this holds.
    pub(super) fn append(&mut self, other: &mut Fired) {
        self.wakers.append(&mut other.wakers);
        self.callbacks.append(&mut other.callbacks);
    }
}

impl ShardState {
    fn advance(&mut self, now: u64) {
        self.sleeps.advance(now);
        if let Some(t) = &mut self.callbacks {
            t.advance(now);
        }
    }

    /// Whether its wheels deferred lists that are not linked yet: the next
    /// revolution's, far lists (`TimerWheel::cascade_ahead`).
    fn has_deferred(&self) -> bool {
        self.sleeps.has_deferred() || self.callbacks.as_ref().is_some_and(|t| t.has_deferred())
    }

    /// Links at most `*budget` entries of the lists its wheels deferred;
    /// `true` once none is left.
    fn cascade_ahead(&mut self, budget: &mut usize) -> bool {
        let deadlines = &self.deadlines;
        self.sleeps
            .cascade_ahead(budget, |key, _, due| deadlines.refile(key, due))
            && self
                .callbacks
                .as_mut()
                .is_none_or(|t| t.cascade_ahead(budget, stays))
    }

    pub(super) fn next_due(&mut self) -> Option<u64> {
        let callbacks = self.callbacks.as_mut().and_then(|t| t.next_due());
        match (self.sleeps.next_due(), callbacks) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires `tick` into `out`, linking at most `*budget` cascaded entries
    /// again; `false` if the budget ran out first and the tick is to be
    /// fired again (`TimerWheel::fire_within`).
    ///
    /// The callbacks first and the sleeps last: a `true` means the sleeps
    /// have fired, and `false` that none of them has, so no waker of `tick`
    /// reaches `out` before the caller raises `fired_upto` to `tick` (a
    /// sleep woken before that could poll `Pending` without the lock, and
    /// never be woken again). Callbacks do not look at `fired_upto`.
    fn fire_within(&mut self, tick: u64, budget: &mut usize, out: &mut Fired) -> bool {
        if !self.fire_callbacks(tick, budget, &mut out.scratch, &mut out.callbacks) {
            return false;
        }
        let deadlines = &self.deadlines;
        self.sleeps
            .fire_within(tick, budget, &mut out.wakers, |key, _, due| {
                deadlines.refile(key, due)
            })
            .is_some()
    }
}

/// What [`WheelCore::fire_next_tick`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// It fired a tick, into the pass's `fired`.
    Fired,
    /// A shard's cascade used up the budget before its tick fired: what
    /// fired of the tick so far (in other shards, or this shard's callbacks)
    /// is in `fired`, and the next call goes on with the same tick. The
    /// driver task yields in between.
    Paused,
    /// No tick of the pass is left.
    Done,
}

/// Cascaded entries the driver task links again in one step of a tick
/// before it yields (see the module docs), and an expiry queue's consumer
/// in one poll. Small next to the cascades that held a worker for tens of
/// milliseconds (a million entries), large next to the cost of a yield.
pub(crate) const CASCADE_STEP: usize = 4096;

impl WheelCore {
    /// Fires every tick up to `now`'s into `p.fired` (in the order they
    /// fired, after whatever it already holds), links every list its wheels
    /// deferred, and returns the next tick the wheels must be fired at (or
    /// `IDLE`).
    pub(super) fn fire_due(&self, now: Instant, p: &mut Pass) -> u64 {
        self.begin_pass(now, p);
        while self.fire_next_tick(p, usize::MAX) != Step::Done {}
        self.cascade_ahead(p, usize::MAX);
        self.end_pass(p)
    }

    /// Starts a pass up to `now`'s tick: takes the live shards and moves each
    /// to that tick. From here on registrations at or before it complete at
    /// once, so [`fire_next_tick`](Self::fire_next_tick) sees every entry it
    /// must fire.
    pub(super) fn begin_pass(&self, now: Instant, p: &mut Pass) {
        p.now = Some(now);
        p.now_tick = self.clock.floor(now);
        p.visited = 0;
        p.lag_noted = false;
        p.paused = false;
        p.ahead = false;
        p.tick_fired = 0;
        self.shards(&mut p.shards);
        p.next.clear();
        p.from = u64::MAX;
        for shard in &p.shards {
            let mut s = shard.lock();
            p.from = p.from.min(s.sleeps.elapsed());
            s.advance(p.now_tick);
            p.ahead |= s.has_deferred();
            p.next.push(s.next_due().unwrap_or(IDLE));
        }
    }

    /// Fires the earliest tick of the pass that has something due, across
    /// shards, into `p.fired`, linking at most `budget` cascaded entries
    /// again in doing so (see [`Step`]).
    pub(super) fn fire_next_tick(&self, p: &mut Pass, budget: usize) -> Step {
        let mut budget = budget;
        loop {
            let tick = p.next.iter().copied().min().unwrap_or(IDLE);
            if tick > p.now_tick {
                return Step::Done;
            }
            let before = p.fired.len();
            let mut paused = false;
            for (shard, next) in p.shards.iter().zip(p.next.iter_mut()) {
                if *next != tick {
                    continue;
                }
                let mut s = shard.lock();
                let fired = s.fire_within(tick, &mut budget, &mut p.fired);
                p.ahead |= s.has_deferred();
                if !fired {
                    // Its `next` stays `tick`: the next call goes on there.
                    paused = true;
                    break;
                }
                // Under the lock and before any of them is woken: a poll
                // that reads the old value is followed by the wake.
                shard.fired_upto.raise(tick);
                *next = s.next_due().unwrap_or(IDLE);
                // Not the last reference: `p.shards` holds one.
                let pin = s.take_pin_if_idle();
                drop(s);
                drop(pin);
            }
            let batch = p.fired.len() - before;
            if batch > 0 {
                self.release(batch);
            }
            p.tick_fired += batch;
            if paused {
                p.paused = true;
                return Step::Paused;
            }
            p.visited += 1;
            // The whole tick, with what its earlier steps fired.
            let batch = std::mem::take(&mut p.tick_fired);
            if batch == 0 {
                continue;
            }
            self.metrics.max_batch.fetch_max(batch as u64, Relaxed);
            if !p.lag_noted {
                // The earliest tick of this pass is the latest one run.
                p.lag_noted = true;
                // After a pause the pass's clock reading is old: the lag
                // counts the cascade the tick waited for.
                let now = if p.paused {
                    Some(Instant::now())
                } else {
                    p.now
                };
                if let Some(now) = now {
                    self.note_lag(tick, now, &mut p.last_lag_warning);
                }
            }
            tracing::trace!(tick, woken = batch, "tokio-wheel: tick fired");
            return Step::Fired;
        }
    }

    /// Links at most `budget` entries of the lists that the wheels deferred
    /// (`TimerWheel::cascade_ahead`), after the pass's due ticks
    /// have fired; `true` if some are left, for a later call. The driver
    /// task calls it between passes, with a yield in between, so that the
    /// first tick past the revolution they were deferred in does not wait
    /// for them all.
    pub(super) fn cascade_ahead(&self, p: &mut Pass, budget: usize) -> bool {
        if !p.ahead {
            return false;
        }
        let mut budget = budget;
        for (shard, next) in p.shards.iter().zip(p.next.iter_mut()) {
            let mut s = shard.lock();
            let done = s.cascade_ahead(&mut budget);
            // Later, if anything: it was at most the deferred lists' due tick.
            *next = s.next_due().unwrap_or(IDLE);
            if !done {
                return true;
            }
        }
        p.ahead = false;
        false
    }

    /// Ends a pass: counts the ticks visited and skipped, and returns the
    /// next tick that may have something due (or `IDLE`).
    pub(super) fn end_pass(&self, p: &mut Pass) -> u64 {
        let advanced = p.now_tick.saturating_sub(p.from.min(p.now_tick));
        self.metrics.ticks.fetch_add(p.visited, Relaxed);
        self.metrics
            .ticks_skipped
            .fetch_add(advanced.saturating_sub(p.visited), Relaxed);
        p.next.iter().copied().min().unwrap_or(IDLE)
    }

    /// The earliest tick any of `shards` may have due, or `IDLE`.
    pub(super) fn next_due(&self, shards: &[Arc<Shard>]) -> u64 {
        shards
            .iter()
            .filter_map(|s| s.lock().next_due())
            .min()
            .unwrap_or(IDLE)
    }

    /// Whether the wheel holds at most `max` timers (sleeps and callbacks).
    pub(super) fn pending_at_most(&self, max: usize, shards: &mut Vec<Arc<Shard>>) -> bool {
        self.shards(shards);
        let mut pending = 0;
        shards.iter().all(|s| {
            pending += s.lock().pending();
            pending <= max
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::task::{Wake, Waker};
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Pass, Step};
    use crate::driver::callback::Callback;
    use crate::driver::handoff::IDLE;
    use crate::driver::{Config, Shards, WheelCore};
    use crate::timer_task::TimerTask;

    /// A waker that writes its name to a shared log when woken.
    struct Named(u32, Arc<Mutex<Vec<u32>>>);

    impl Wake for Named {
        fn wake(self: Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    fn wheel(shards: usize, max_pending: Option<usize>) -> Shards {
        WheelCore::new_shards(Config {
            origin: Instant::now(),
            tick: Duration::from_millis(10),
            slots: 64,
            shards,
            runtime: None,
            max_pending,
            max_wakeups_per_tick: None,
        })
    }

    /// A shard's deadline pages follow its slab: once a burst of sleeps
    /// pushed back is dropped, the pages of the keys given back go too, and
    /// a survivor's pushed-back deadline still moves its entry.
    #[test]
    fn deadline_pages_are_given_back_with_the_slab() {
        use std::task::Context;

        use crate::driver::entry::{SleepEntry, Step as Polled};

        let w = wheel(1, None);
        assert!(w.core().handoff.claim(1), "a driver runs");
        let log = Arc::new(Mutex::new(Vec::new()));
        let nanos = |tick: u64| (tick * 10_000_000) as i64;
        let pages = |w: &Shards| w.get(0).lock().deadlines.pages();
        let mut sleeps: Vec<(SleepEntry, Waker)> = (0..2000)
            .map(|name| {
                let waker = Waker::from(Arc::new(Named(name, log.clone())));
                let mut s = SleepEntry::new(w.get(0).clone(), false, true);
                let polled = s.poll(nanos(100), false, &mut Context::from_waker(&waker));
                assert!(matches!(polled, Polled::Pending));
                s.reset(nanos(100), nanos(200), false);
                (s, waker)
            })
            .collect();
        let made = pages(&w);
        assert!(made > 100, "{made} pages for 2000 keys");
        // Key 3: the slab hands out keys in order.
        let survivor = sleeps.remove(3);
        drop(sleeps);
        assert_eq!(pages(&w), 1, "the pages of the keys given back stay");
        let (ticks, _) = pass(&w, at(&w, 199, 0), &log);
        assert!(ticks.concat().is_empty(), "woken before its new deadline");
        let (ticks, _) = pass(&w, at(&w, 200, 0), &log);
        assert_eq!(ticks.concat(), vec![3], "not woken at its new deadline");
        drop(survivor);
        assert_eq!(pages(&w), 0, "an empty shard keeps a page");
    }

    /// Links a sleep named `name` at `tick` in shard `shard`.
    fn sleep_at(w: &Shards, shard: usize, tick: u64, name: u32, log: &Arc<Mutex<Vec<u32>>>) {
        let waker = Waker::from(Arc::new(Named(name, log.clone())));
        let s = w.get(shard);
        s.lock().sleeps.insert(tick, waker).expect("after elapsed");
    }

    /// The instant of `tick`, plus `plus` nanoseconds.
    fn at(w: &Shards, tick: u64, plus: u64) -> Instant {
        w.core().clock.instant_of(tick).unwrap() + Duration::from_nanos(plus)
    }

    /// Runs a pass tick by tick, as the driver task does; returns, per tick
    /// fired, the names woken, and the next tick due.
    fn pass(w: &Shards, now: Instant, log: &Arc<Mutex<Vec<u32>>>) -> (Vec<Vec<u32>>, u64) {
        let (ticks, next, paused) = pass_within(w, now, log, usize::MAX);
        assert_eq!(paused, 0);
        (ticks, next)
    }

    /// [`pass`] with `budget` cascaded entries per step: also returns how
    /// many steps paused. The names woken in a paused step are counted with
    /// the tick that step was firing.
    fn pass_within(
        w: &Shards,
        now: Instant,
        log: &Arc<Mutex<Vec<u32>>>,
        budget: usize,
    ) -> (Vec<Vec<u32>>, u64, usize) {
        let core = w.core();
        let mut p = Pass::default();
        core.begin_pass(now, &mut p);
        let mut ticks = Vec::new();
        let mut tick = Vec::new();
        let mut paused = 0;
        loop {
            let step = core.fire_next_tick(&mut p, budget);
            for waker in p.fired.wakers.drain(..) {
                waker.wake();
            }
            tick.append(&mut log.lock().unwrap());
            match step {
                Step::Done => break,
                Step::Paused => paused += 1,
                Step::Fired => ticks.push(std::mem::take(&mut tick)),
            }
        }
        assert!(tick.is_empty(), "woken outside a tick: {tick:?}");
        (ticks, core.end_pass(&mut p), paused)
    }

    #[test]
    fn fires_due_ticks_in_order_across_shards_and_never_early() {
        let w = wheel(2, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        sleep_at(&w, 0, 3, 30, &log);
        sleep_at(&w, 1, 4, 40, &log);
        sleep_at(&w, 0, 4, 41, &log);
        sleep_at(&w, 1, 5, 50, &log);
        // Just before tick 5: ticks 3 and 4 fire, in that order, and 5 waits.
        let (ticks, next) = pass(&w, at(&w, 5, 0) - Duration::from_nanos(1), &log);
        assert_eq!(ticks.len(), 2, "{ticks:?}");
        assert_eq!(ticks[0], [30]);
        let mut four = ticks[1].clone();
        four.sort_unstable();
        assert_eq!(four, [40, 41]);
        assert_eq!(next, 5);
        assert_eq!(w.pending(), 1);
        let (ticks, next) = pass(&w, at(&w, 5, 0), &log);
        assert_eq!(ticks, [[50]]);
        assert_eq!((next, w.pending()), (IDLE, 0));
    }

    /// A slot of many entries cascading in steps of a few: the pass pauses
    /// between them, and every entry is still woken once, at its own tick,
    /// in tick order across both shards.
    #[test]
    fn a_large_cascade_fires_in_steps_and_loses_nothing() {
        let w = wheel(2, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        // 64 slots: ticks 128 to 191 wait at level 1 until the wheel enters
        // the revolution before (tick 64), and are all linked into level 0
        // by 128: here by the firing of 128, which the pass reaches at once.
        for name in 0..200u32 {
            let tick = 128 + u64::from(name % 8);
            sleep_at(&w, (name % 2) as usize, tick, name, &log);
        }
        let (ticks, next, paused) = pass_within(&w, at(&w, 134, 0), &log, 16);
        assert!(paused >= 200 / 16 - 1, "paused {paused} times");
        assert_eq!(ticks.len(), 7, "ticks 128 to 134");
        for (i, names) in ticks.iter().enumerate() {
            let mut names = names.clone();
            names.sort_unstable();
            let expected: Vec<u32> = (0..200).filter(|n| n % 8 == i as u32).collect();
            assert_eq!(names, expected, "tick {}", 128 + i);
        }
        assert_eq!((next, w.pending()), (135, 25));
        let (ticks, next, _) = pass_within(&w, at(&w, 135, 0), &log, 16);
        assert_eq!(
            (ticks.len(), ticks[0].len(), next, w.pending()),
            (1, 25, IDLE, 0)
        );
    }

    /// A level-2 slot of many sleeps: the pass fires the ticks of the
    /// slot's first revolution after linking only that revolution's
    /// entries again, and `cascade_ahead` links the rest in steps between
    /// passes; every sleep is still woken once, at its own tick.
    #[test]
    fn a_pass_fires_before_a_large_slot_is_linked_and_links_it_after() {
        let w = wheel(2, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        // 64 slots: ticks 32768 to 36767 wait in one level-2 slot per shard,
        // one sleep every other tick.
        for name in 0..2000u32 {
            let tick = 32768 + 2 * u64::from(name);
            sleep_at(&w, (name % 2) as usize, tick, name, &log);
        }
        let core = w.core();
        let mut p = Pass::default();
        core.begin_pass(at(&w, 32772, 0), &mut p);
        let mut ticks = 0;
        while core.fire_next_tick(&mut p, 16) != Step::Done {
            ticks += 1;
        }
        // Ticks 32768, 32770, 32772, with two pauses per shard at most for the
        // 32 sleeps of the first revolution, not 125 for all 2000.
        assert!((3..=3 + 4).contains(&ticks), "{ticks} steps");
        assert_eq!(core.stats().cascades, 32);
        for waker in p.fired.wakers.drain(..) {
            waker.wake();
        }
        assert_eq!(std::mem::take(&mut *log.lock().unwrap()), [0, 1, 2]);
        let mut steps = 0;
        while core.cascade_ahead(&mut p, 100) {
            steps += 1;
            assert!(p.fired.wakers.is_empty(), "cascade_ahead fires nothing");
        }
        assert_eq!(steps, (2000 - 32) / 100);
        assert_eq!(core.stats().cascades, 2000);
        assert_eq!(core.end_pass(&mut p), 32774);
        let (fired, next) = pass(&w, at(&w, 36872, 0), &log);
        assert_eq!(fired.len(), 2000 - 3);
        for (i, names) in fired.iter().enumerate() {
            assert_eq!(names, &[i as u32 + 3], "one sleep per tick, in order");
        }
        assert_eq!((next, w.pending()), (IDLE, 0));
    }

    /// A shard whose callbacks and sleeps both cascade at one tick, the
    /// callbacks more than a step: no step hands out a sleep's waker before
    /// the shard's `fired_upto` has reached the tick (a sleep woken before
    /// that could poll `Pending` without the lock and never be woken again).
    #[test]
    fn no_waker_leaves_a_step_before_fired_upto_reaches_its_tick() {
        let w = wheel(1, None);
        let shard = w.get(0).clone();
        let log = Arc::new(Mutex::new(Vec::new()));
        // Two revolutions on, at level 1 until linked into level 0.
        for name in 0..8 {
            sleep_at(&w, 0, 128, name, &log);
        }
        for _ in 0..40 {
            let (callback, _state) = Callback::new(TimerTask::call(Instant::now(), || ()));
            shard.lock().insert_callback(&shard, 128, callback);
        }
        let core = w.core();
        let mut p = Pass::default();
        core.begin_pass(at(&w, 128, 0), &mut p);
        let (mut wakers, mut callbacks, mut paused) = (0, 0, 0);
        loop {
            let step = core.fire_next_tick(&mut p, 8);
            if !p.fired.wakers.is_empty() {
                assert!(shard.may_have_fired(128), "a waker before fired_upto");
            }
            wakers += p.fired.wakers.drain(..).count();
            callbacks += p.fired.callbacks.drain(..).count();
            match step {
                Step::Done => break,
                Step::Paused => paused += 1,
                Step::Fired => {}
            }
        }
        core.end_pass(&mut p);
        assert!(paused >= 40 / 8, "paused {paused} times");
        assert_eq!((wakers, callbacks), (8, 40));
    }

    #[test]
    fn raises_fired_upto_of_the_shards_it_fired() {
        let w = wheel(2, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        sleep_at(&w, 0, 2, 1, &log);
        sleep_at(&w, 1, 7, 2, &log);
        let (ticks, next) = pass(&w, at(&w, 3, 0), &log);
        assert_eq!((ticks.len(), next), (1, 7));
        assert!(w.get(0).may_have_fired(2));
        assert!(!w.get(0).may_have_fired(3), "only the ticks it fired");
        assert!(!w.get(1).may_have_fired(2), "nothing fired in shard 1");
    }

    #[test]
    fn counts_ticks_visited_and_skipped() {
        let w = wheel(1, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        sleep_at(&w, 0, 2, 1, &log);
        sleep_at(&w, 0, 6, 2, &log);
        pass(&w, at(&w, 10, 0), &log);
        let stats = w.core().stats();
        assert_eq!((stats.ticks, stats.ticks_skipped), (2, 8));
        assert_eq!((stats.fired, stats.max_batch), (2, 1));
    }

    #[test]
    fn an_empty_pass_fires_nothing_and_plans_nothing() {
        let w = wheel(2, None);
        let log = Arc::new(Mutex::new(Vec::new()));
        let (ticks, next) = pass(&w, at(&w, 100, 0), &log);
        assert!(ticks.is_empty());
        assert_eq!(next, IDLE);
        assert_eq!(w.core().stats().ticks, 0);
    }

    /// A registration at a tick the pass has reached is refused by the
    /// shard's wheel (it completes at once instead): `begin_pass` moved
    /// every shard first, so `fire_next_tick` can miss nothing.
    #[test]
    fn after_begin_pass_a_registration_at_its_tick_is_refused() {
        let w = wheel(2, None);
        let mut p = Pass::default();
        w.core().begin_pass(at(&w, 4, 0), &mut p);
        for i in 0..2 {
            let refused = w.get(i).lock().sleeps.insert(4, Waker::noop().clone());
            assert!(refused.is_err(), "shard {i}");
        }
        w.core().end_pass(&mut p);
    }

    /// A fired callback leaves the wheel as fired (expired only once its
    /// task runs), gives its place under the bound back, and lets go of its
    /// shard's pin.
    #[test]
    fn fires_callbacks_and_releases_them() {
        let w = wheel(1, Some(1));
        let core = w.core().clone();
        core.admit().expect("a place");
        let shard = w.get(0).clone();
        let (callback, state) = Callback::new(TimerTask::call(Instant::now(), || ()));
        shard.lock().insert_callback(&shard, 3, callback);
        assert!(shard.lock().pin.is_some());
        assert!(core.admit().is_err(), "at the bound");
        let mut p = Pass::default();
        assert_eq!(core.fire_due(at(&w, 3, 0), &mut p), IDLE);
        assert_eq!(p.fired.callbacks.len(), 1);
        assert!(
            state.is_fired() && !state.is_expired(),
            "fired, not run yet"
        );
        assert!(shard.lock().pin.is_none(), "the pin is dropped");
        assert!(core.admit().is_ok(), "the place is given back");
    }
}
