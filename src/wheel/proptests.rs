//! Property tests of the pure wheel against a reference model.
//!
//! A [`Harness`] applies random operations to a `TimerWheel<u32>` and to a
//! `BTreeMap` model side by side, and after every operation checks that they
//! agree: which entries fired and at which tick, what each call returned,
//! `pending()`, `len()`, the counters, `is_fired`, `value_mut` and
//! `pending_values` for every live key, `next_due()` (never after the earliest
//! pending tick, and converging: see `run_to`), and
//! [`TimerWheel::check_invariants`]. After the operations every key is
//! removed and the wheel must be empty.
//!
//! Time moves as it does in the driver: [`TimerWheel::advance`] to a tick,
//! then `fire(t)` for every `t = next_due()` that is not after it. Wheels are
//! small (1 to 16 slots at level 0) so that entries land on every level, and
//! ticks and jumps are drawn around multiples of every level's span (the
//! classic place for an early or lost fire) as well as in between. The
//! counters also check the levels' promise: an entry moves down at most
//! `levels - 1` times per time it is linked or filed again.
//!
//! `Partial` fires with `TimerWheel::fire_within` and a small budget and
//! stops at the first tick whose cascade runs out of it, so that the
//! operations after it meet a wheel in the middle of a firing (invariant 6):
//! entries in transit removed, moved or pushed back, registrations refused
//! as due. The next full run finishes that firing.
//!
//! `PushBack` moves a pending entry's deadline later the way a tracked
//! `Sleep` does, without telling the wheel: the value's new tick is
//! kept in [`PUSHED`], which `Payload::refile` for `u32` reads (the `Refile`
//! the model fires with), and the
//! model expects the entry to fire there and nowhere before.
//!
//! `Keys` does the same with `TimerWheel::fire_keys_within`, as the expiry
//! queue fires: its budget counts the entries fired too, so it also stops
//! in the middle of a tick's level-0 slot, with some of its entries fired
//! and the rest still there. Like the queue, it takes each fired value out
//! at once, and files one that `PushBack` moved again itself
//! (`TimerWheel::relink`, or `mark_fired` at the new tick if that is due).
//!
//! `Ahead` links at most a budget of the far lists a cascade deferred
//! (invariant 7), as the driver does between ticks; without it they are
//! linked by the firing of the tick they are due by, which may fire nothing
//! else (a visit `fire_upto` allows, like that of a stale bound).
//!
//! The number of cases comes from `PROPTEST_CASES` (default
//! [`DEFAULT_CASES`]); failures are saved under `proptest-regressions/` and
//! replayed first on the next run.

use std::cell::RefCell;
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngAlgorithm;

use super::*;
use crate::clock::MAX_TICK;

/// Cases per property when `PROPTEST_CASES` is not set: a few seconds in a
/// debug build.
const DEFAULT_CASES: u32 = 1024;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        // Much cheaper than the default ChaCha in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        // A failure is shrunk for at most this long (ms), so that a broken
        // wheel fails the run promptly rather than shrinking for ever.
        max_shrink_time: 30_000,
        // The default file persistence stays: a failing case is written to
        // proptest-regressions/wheel/proptests.txt and replayed first.
        ..ProptestConfig::default()
    }
}

/// A tick relative to the wheel's current `elapsed`, resolved when the
/// operation runs (so the same operation means the same thing at any start).
#[derive(Debug, Clone, Copy)]
enum Delta {
    /// `elapsed + n`: zero and negative are already due.
    Near(i64),
    /// `elapsed + revs * span(level) + off`, where `span(level)` is the
    /// span of a whole revolution of `level` (see `span`): exact
    /// multiples and their neighbours, the classic place for an early fire.
    Span { level: u32, revs: u64, off: i64 },
    /// Far out: many revolutions.
    Far(u64),
    /// `off` ticks into the `k`-th slot of level `level + 1` after the one
    /// `elapsed` is in (slots of `span(level)` ticks, counted from the
    /// harness's start): an upper slot's first revolution (`off` below
    /// `slots`) and just past it, where near and far lists meet
    /// (invariant 7).
    Boundary { level: u32, k: u64, off: u64 },
}

impl Delta {
    fn resolve(self, elapsed: u64, start: u64, slots: u64) -> u64 {
        let d: i128 = match self {
            Delta::Boundary { level, k, off } => {
                let span = i128::from(span(slots, level));
                let rel = i128::from(elapsed) - i128::from(start);
                (rel.div_euclid(span) + i128::from(k)) * span - rel + i128::from(off)
            }
            Delta::Near(n) => i128::from(n),
            Delta::Span { level, revs, off } => {
                i128::from(revs * span(slots, level)) + i128::from(off)
            }
            Delta::Far(n) => i128::from(n),
        };
        // The crate never uses a tick above MAX_TICK.
        (i128::from(elapsed) + d).clamp(0, i128::from(MAX_TICK)) as u64
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Delta),
    /// Removes a live key (pending or fired).
    Remove(Index),
    /// Moves a pending entry.
    Reschedule(Index, Delta),
    /// Re-arms a fired entry.
    Rearm(Index, Delta),
    /// One jump of `n` ticks, then every due tick fired in order (catch-up).
    Advance(u64),
    /// `n` single-tick steps, each followed by firing.
    Step(u64),
    /// `revs` whole revolutions of `level` plus `extra` ticks in one jump.
    Revolutions {
        level: u32,
        revs: u64,
        extra: u64,
    },
    /// Gives back memory if empty; keys must stay valid.
    Shrink,
    /// Removes every pending entry as cancelled; fired entries stay.
    DrainPending,
    /// Moves a pending entry's deadline later without the wheel (see the
    /// module docs).
    PushBack(Index, Delta),
    /// A jump of `n` ticks, then due ticks fired with `fire_within` and this
    /// budget until one runs out of it: the operations after it find the
    /// wheel in the middle of a firing, which the next `Advance`, `Step` or
    /// `Revolutions` finishes.
    Partial {
        n: u64,
        budget: usize,
    },
    /// `Partial` with `fire_keys_within` (see the module docs).
    Keys {
        n: u64,
        budget: usize,
    },
    /// Links at most this many entries of the deferred far lists.
    Ahead(usize),
    /// Removes every pending entry due by `elapsed`: after a `Partial`, all
    /// that its unfinished firing had left.
    CancelDue,
}

/// How `Harness::fire_upto` fires each due tick.
#[derive(Clone, Copy)]
enum Firer {
    /// `fire`: the whole tick.
    Whole,
    /// `fire_within` with this budget for the cascades.
    Within(usize),
    /// `fire_keys_within` with this budget for the cascades and the firing.
    Keys(usize),
}

thread_local! {
    /// Values whose deadline `PushBack` moved, and the tick it moved them to.
    static PUSHED: RefCell<BTreeMap<u32, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// [`Payload::refile`] for a `u32` value: the tick `PushBack` moved it to, if
/// after `due`.
pub(super) fn pushed_back(value: u32, due: u64) -> Option<u64> {
    PUSHED.with(|p| p.borrow().get(&value).copied().filter(|&t| t > due))
}

/// Forgets what `PushBack` did to `value`: its owner moved it itself.
fn forget_push(value: u32) {
    PUSHED.with(|p| p.borrow_mut().remove(&value));
}

/// The span of a whole revolution of `level`: `slots` ticks at level 0,
/// `slots * 512` at level 1 (its 512 slots), then 64 times more per level.
fn span(slots: u64, level: u32) -> u64 {
    match level {
        0 => slots,
        l => slots << (9 + 6 * (l - 1)),
    }
}

fn delta() -> impl Strategy<Value = Delta> {
    prop_oneof![
        6 => (-3i64..=40).prop_map(Delta::Near),
        3 => (0u32..=2, 1u64..=6, -1i64..=1)
            .prop_map(|(level, revs, off)| Delta::Span { level, revs, off }),
        1 => (1u64..=5_000).prop_map(Delta::Far),
        // Past level 1's 512 revolutions at every slot count (1 to 16).
        1 => (5_000u64..=600_000).prop_map(Delta::Far),
        4 => (1u32..=2, 1u64..=2, 0u64..=40)
            .prop_map(|(level, k, off)| Delta::Boundary { level, k, off }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => delta().prop_map(Op::Insert),
        3 => any::<Index>().prop_map(Op::Remove),
        3 => (any::<Index>(), delta()).prop_map(|(i, d)| Op::Reschedule(i, d)),
        2 => (any::<Index>(), delta()).prop_map(|(i, d)| Op::Rearm(i, d)),
        4 => (0u64..=48).prop_map(Op::Advance),
        2 => (1u64..=20).prop_map(Op::Step),
        1 => (0u32..=2, 1u64..=64, 0u64..=16)
            .prop_map(|(level, revs, extra)| Op::Revolutions { level, revs, extra }),
        1 => Just(Op::Shrink),
        1 => Just(Op::DrainPending),
        3 => (any::<Index>(), delta()).prop_map(|(i, d)| Op::PushBack(i, d)),
        2 => (0u64..=48, 0usize..=6).prop_map(|(n, budget)| Op::Partial { n, budget }),
        2 => (0u64..=48, 0usize..=6).prop_map(|(n, budget)| Op::Keys { n, budget }),
        2 => (0usize..=8).prop_map(Op::Ahead),
        1 => Just(Op::CancelDue),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=80)
}

/// 1, 2, 4, 8 or 16 slots.
fn slots() -> impl Strategy<Value = usize> {
    (0u32..=4).prop_map(|log| 1usize << log)
}

/// What the model knows of one live key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Model {
    tick: u64,
    /// The value the entry holds while pending.
    value: u32,
    pending: bool,
}

/// What an operation observably did, with ticks relative to the wheel's
/// start, so that runs from different starts can be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Inserted(Result<Key, u32>),
    Removed(Key, Option<u32>),
    Rescheduled(Key, Option<u32>),
    Rearmed(Key, Result<(), u32>),
    /// `(tick - start, value)` in firing order.
    Fired(Vec<(u64, u32)>),
    State {
        pending: usize,
        earliest: Option<u64>,
    },
}

struct Harness {
    wheel: TimerWheel<u32>,
    model: BTreeMap<Key, Model>,
    /// Which key a value was last given to.
    owner: BTreeMap<u32, Key>,
    next_value: u32,
    start: u64,
    slots: u64,
    registered: u64,
    fired: u64,
    cancelled: u64,
    rearmed: u64,
    /// Times an entry was linked at a tick (insert, rearm, reschedule).
    links: u64,
    /// The tick a `Partial` stopped at, until the next full run: entries due
    /// from it on (and up to `elapsed`) may still be pending.
    stopped_at: Option<u64>,
    trace: Vec<Event>,
}

impl Harness {
    fn new(slots: usize, start: u64) -> Self {
        PUSHED.with(|p| p.borrow_mut().clear());
        let mut h = Harness {
            wheel: TimerWheel::new(slots, start),
            model: BTreeMap::new(),
            owner: BTreeMap::new(),
            next_value: 0,
            start,
            slots: slots as u64,
            registered: 0,
            fired: 0,
            cancelled: 0,
            rearmed: 0,
            links: 0,
            stopped_at: None,
            trace: Vec::new(),
        };
        h.check();
        h
    }

    fn fresh_value(&mut self) -> u32 {
        self.next_value += 1;
        self.next_value
    }

    fn keys_where(&self, pending: bool) -> Vec<Key> {
        self.model
            .iter()
            .filter(|(_, m)| m.pending == pending)
            .map(|(&k, _)| k)
            .collect()
    }

    fn apply(&mut self, op: &Op) {
        let elapsed = self.wheel.elapsed();
        match *op {
            Op::Insert(d) => {
                let tick = d.resolve(elapsed, self.start, self.slots);
                let value = self.fresh_value();
                let res = self.wheel.insert(tick, value);
                if tick <= elapsed {
                    assert_eq!(res, Err(value), "insert at {tick} with elapsed {elapsed}");
                } else {
                    let key = res.expect("insert after elapsed is accepted");
                    assert!(
                        !self.model.contains_key(&key),
                        "key {key} handed out while still live"
                    );
                    self.model.insert(
                        key,
                        Model {
                            tick,
                            value,
                            pending: true,
                        },
                    );
                    self.owner.insert(value, key);
                    self.registered += 1;
                    self.links += 1;
                }
                self.trace.push(Event::Inserted(res));
            }
            Op::Remove(i) => {
                let keys: Vec<Key> = self.model.keys().copied().collect();
                if keys.is_empty() {
                    return;
                }
                let key = keys[i.index(keys.len())];
                let m = self.model.remove(&key).unwrap();
                let got = self.wheel.remove(key);
                if m.pending {
                    assert_eq!(got, Some(m.value), "remove of pending key {key}");
                    self.cancelled += 1;
                } else {
                    assert_eq!(got, None, "remove of fired key {key}");
                }
                self.trace.push(Event::Removed(key, got));
            }
            Op::Reschedule(i, d) => {
                let keys = self.keys_where(true);
                if keys.is_empty() {
                    return;
                }
                let key = keys[i.index(keys.len())];
                let tick = d.resolve(elapsed, self.start, self.slots);
                let got = self.wheel.reschedule(key, tick);
                let m = self.model.get_mut(&key).unwrap();
                forget_push(m.value);
                if tick <= elapsed {
                    assert_eq!(got, Some(m.value), "reschedule of {key} to due tick {tick}");
                    m.pending = false;
                    self.fired += 1;
                } else {
                    assert_eq!(got, None, "reschedule of {key} to {tick}");
                    m.tick = tick;
                    self.links += 1;
                }
                self.trace.push(Event::Rescheduled(key, got));
            }
            Op::Rearm(i, d) => {
                let keys = self.keys_where(false);
                if keys.is_empty() {
                    return;
                }
                let key = keys[i.index(keys.len())];
                let tick = d.resolve(elapsed, self.start, self.slots);
                let value = self.fresh_value();
                let got = self.wheel.rearm(key, tick, value);
                if tick <= elapsed {
                    assert_eq!(got, Err(value), "rearm of {key} at due tick {tick}");
                } else {
                    assert_eq!(got, Ok(()), "rearm of {key} at {tick}");
                    let m = self.model.get_mut(&key).unwrap();
                    *m = Model {
                        tick,
                        value,
                        pending: true,
                    };
                    self.owner.insert(value, key);
                    self.rearmed += 1;
                    self.links += 1;
                }
                self.trace.push(Event::Rearmed(key, got));
            }
            Op::Advance(n) => self.run_to(elapsed.saturating_add(n).min(MAX_TICK)),
            Op::Partial { n, budget } => {
                self.fire_upto(
                    elapsed.saturating_add(n).min(MAX_TICK),
                    Firer::Within(budget),
                );
            }
            Op::Keys { n, budget } => {
                self.fire_upto(elapsed.saturating_add(n).min(MAX_TICK), Firer::Keys(budget));
            }
            Op::Step(n) => {
                for t in 1..=n {
                    self.run_to(elapsed.saturating_add(t).min(MAX_TICK));
                }
            }
            Op::Revolutions { level, revs, extra } => {
                let by = revs * span(self.slots, level) + extra;
                self.run_to(elapsed.saturating_add(by).min(MAX_TICK));
            }
            Op::Shrink => self.wheel.shrink_if_empty(),
            Op::CancelDue => {
                let due: Vec<Key> = self
                    .model
                    .iter()
                    .filter(|(_, m)| m.pending && m.tick <= elapsed)
                    .map(|(&k, _)| k)
                    .collect();
                for key in due {
                    let m = self.model.remove(&key).unwrap();
                    assert_eq!(
                        self.wheel.remove(key),
                        Some(m.value),
                        "cancel of due key {key}"
                    );
                    self.cancelled += 1;
                }
            }
            Op::Ahead(budget) => {
                let (due, pending) = (self.wheel.deferred_due(), self.wheel.pending());
                let cascaded = self.wheel.counters().cascaded;
                let done = self.wheel.cascade_ahead(&mut { budget }, super::by_value);
                let linked = self.wheel.counters().cascaded - cascaded;
                assert!(
                    linked as usize <= budget,
                    "linked {linked} on a budget of {budget}"
                );
                assert_eq!(
                    done,
                    self.wheel.deferred_due().is_none(),
                    "cascade_ahead's answer"
                );
                assert!(
                    done || linked as usize == budget,
                    "stopped short of its budget"
                );
                assert!(due.is_some() || linked == 0, "linked with nothing deferred");
                assert_eq!(self.wheel.pending(), pending, "cascade_ahead fired or lost");
            }
            Op::PushBack(i, d) => {
                let keys = self.keys_where(true);
                if keys.is_empty() {
                    return;
                }
                let key = keys[i.index(keys.len())];
                let m = self.model.get_mut(&key).unwrap();
                // Later than where the model has it, however far `d` says.
                let tick = d
                    .resolve(m.tick, self.start, self.slots)
                    .max(m.tick + 1)
                    .min(MAX_TICK);
                if tick > m.tick {
                    m.tick = tick;
                    let value = m.value;
                    PUSHED.with(|p| p.borrow_mut().insert(value, tick));
                }
            }
            Op::DrainPending => {
                let mut out = Vec::new();
                self.wheel.drain_pending(&mut out);
                out.sort_unstable();
                let drained: Vec<Key> = self.keys_where(true);
                let mut expected: Vec<u32> = drained.iter().map(|k| self.model[k].value).collect();
                expected.sort_unstable();
                assert_eq!(out, expected, "drain_pending hands out every pending value");
                for key in drained {
                    self.model.remove(&key);
                    self.cancelled += 1;
                }
            }
        }
        self.check();
        self.trace.push(Event::State {
            pending: self.wheel.pending(),
            // The earliest pending tick, not `next_due`: whether a cancel
            // left a slot's bound stale (invariant 5) depends on where the
            // slots' ranges fall, so it differs after a long uptime.
            earliest: self
                .model
                .values()
                .filter(|m| m.pending)
                .map(|m| m.tick - self.start)
                .min(),
        });
    }

    /// What the driver does: advance to `now`, then fire every due tick in
    /// order. Checks that exactly the model's due entries fired, each at its
    /// own tick, in tick order.
    fn run_to(&mut self, now: u64) {
        self.fire_upto(now, Firer::Whole);
    }

    /// [`run_to`](Self::run_to), or with a budget for each tick fired
    /// (`Op::Partial`, `Op::Keys`), stopping at the first tick that runs
    /// out of it: then only the ticks before it fired, and with
    /// `Firer::Keys` some entries of that tick.
    fn fire_upto(&mut self, now: u64, firer: Firer) {
        let before = self.wheel.elapsed();
        // After a stop, ticks from the one it stopped at may still be due.
        let resumed = self.stopped_at.take();
        let first = resumed.unwrap_or(before + 1);
        self.wheel.advance(now);
        assert_eq!(self.wheel.elapsed(), before.max(now));
        let mut fired: Vec<(u64, u32)> = Vec::new();
        // Each fire either hands out an entry or makes its slot's bound
        // exact, so this many rounds is plenty; more means a loop.
        // (Four: an entry pushed back is also visited at its old tick, and
        // one in an upper slot at the revolution before its own.)
        let limit = 4 * self.wheel.pending() + self.slots as usize + 2;
        let mut rounds = 0;
        // A visit that fires nothing cascades a slot whose bound was stale
        // (invariant 5), and the slots it fills have exact bounds: at most
        // one such visit per slot stale now.
        // (Plus the tick a stop left, whose slot may have been emptied since.)
        let stale = self.wheel.stale_slots() + usize::from(resumed.is_some());
        let mut empty_visits = 0;
        let mut stopped = None;
        // `Firer::Keys`: values fired at a tick after the one they were
        // linked at (moved by `PushBack`, due by then), as the queue files
        // them; they join the rest in tick order, as in its `ready`.
        let mut late: Vec<(u64, u32)> = Vec::new();
        while let Some(t) = self.wheel.next_due().filter(|&t| t <= now) {
            rounds += 1;
            assert!(rounds <= limit, "fire loop does not converge at tick {t}");
            // Before `first` only a visit ahead (see `check`), with nothing
            // linked at or before it.
            assert!(
                t >= first
                    || self
                        .model
                        .iter()
                        .all(|(&k, m)| !m.pending || self.wheel.tick_of(k) > t),
                "next_due {t} before {first} (elapsed was {before})"
            );
            let mut out = Vec::new();
            let refiled = self.wheel.counters().refiled;
            let cascaded = self.wheel.counters().cascaded;
            // Visited to link the far lists deferred until it.
            let deferred = self.wheel.deferred_due() == Some(t);
            let mut moved = Vec::new();
            // Entries fired by `fire_keys_within`, whether handed out or
            // filed again by the owner.
            let mut keys_fired = 0;
            let n = match firer {
                Firer::Whole => Some(self.wheel.fire(t, &mut out)),
                Firer::Within(b) => {
                    self.wheel
                        .fire_within(t, &mut { b }, &mut out, super::by_value)
                }
                Firer::Keys(b) => {
                    let mut keys = Vec::new();
                    let cascaded = self.wheel.counters().cascaded;
                    let n = self.wheel.fire_keys_within(t, &mut { b }, &mut keys);
                    let linked = (self.wheel.counters().cascaded - cascaded) as usize;
                    assert!(
                        linked + keys.len() <= b,
                        "linked {linked} and fired {} on a budget of {b}",
                        keys.len()
                    );
                    keys_fired = keys.len();
                    if let Some(n) = n {
                        assert_eq!(n, keys.len(), "fire_keys_within's count");
                    }
                    for key in keys {
                        assert!(self.wheel.is_fired(key), "key {key} handed out unfired");
                        let value = *self.wheel.get(key).expect("a fired key is there");
                        // What the queue does with a value moved later.
                        if let Some(later) = pushed_back(value, t) {
                            forget_push(value);
                            if self.wheel.relink(key, later) {
                                self.links += 1;
                                self.rearmed += 1;
                                self.fired += 1;
                                continue;
                            }
                            self.wheel.mark_fired(key, later);
                            moved.push((later, value));
                        } else {
                            out.push(value);
                        }
                        *self.wheel.get_mut(key).unwrap() = u32::placeholder();
                    }
                    n.map(|_| out.len())
                }
            };
            // What the revolution ahead is for: following `next_due`, a
            // tick links nothing before it fires but the lists deferred to
            // it (the next revolution's, far lists); every other list was
            // moved into level 0 a revolution earlier.
            if !deferred {
                assert_eq!(
                    self.wheel.counters().cascaded,
                    cascaded,
                    "tick {t} linked entries before it fired"
                );
            }
            let Some(n) = n else {
                if !matches!(firer, Firer::Keys(_)) {
                    assert!(out.is_empty(), "an unfinished firing fired {out:?}");
                }
                assert_eq!(self.wheel.next_due(), Some(t), "next_due mid-firing");
                fired.extend(out.into_iter().map(|v| (t, v)));
                late.extend(moved);
                stopped = Some(t);
                break;
            };
            assert_eq!(n, out.len(), "fire's count");
            late.extend(moved);
            // A visit that files a pushed-back entry again is not empty, nor
            // one that took out the next revolution's entries (or a far list)
            // to link them before it ends; one that found that list empty
            // visited a stale bound.
            let ahead = !deferred && self.wheel.deferred_due().is_some();
            if n == 0
                && keys_fired == 0
                && self.wheel.counters().refiled == refiled
                && !deferred
                && !ahead
            {
                empty_visits += 1;
                assert!(
                    empty_visits <= stale,
                    "{empty_visits} visits of ticks with nothing due, {stale} stale slots"
                );
            }
            fired.extend(out.into_iter().map(|v| (t, v)));
        }
        if let (Some(t), None) = (self.wheel.next_due(), stopped) {
            assert!(t > now, "next_due {t} still due after firing up to {now}");
        }
        // The last tick fired through.
        let upto = stopped.map_or(now, |t| t - 1);
        for w in fired.windows(2) {
            assert!(w[0].0 <= w[1].0, "ticks fired out of order: {fired:?}");
        }
        // Those moved later by `PushBack` and found due (`Firer::Keys`)
        // count at their new tick, as the queue hands them out.
        fired.extend(late);
        // And a stop in the middle of a tick's slot (`Firer::Keys`) has
        // fired some of that tick's entries.
        let stop_fired: Vec<u32> = fired
            .iter()
            .filter(|&&(t, _)| t > upto)
            .map(|&(_, v)| v)
            .collect();

        let mut expected: Vec<(u64, u32)> = self
            .model
            .values()
            .filter(|m| m.pending && (m.tick <= upto || stop_fired.contains(&m.value)))
            .map(|m| (m.tick, m.value))
            .collect();
        expected.sort_unstable();
        for &(t, v) in &fired {
            let key = *self
                .owner
                .get(&v)
                .unwrap_or_else(|| panic!("fired value {v} was never registered (a placeholder?)"));
            let m = self.model[&key];
            assert!(m.pending && m.value == v, "fired a stale value {v}");
            assert!(
                t >= m.tick,
                "key {key} due at {} fired early at {t}",
                m.tick
            );
            assert!(t <= m.tick, "key {key} due at {} fired late at {t}", m.tick);
            assert!(t <= now, "key {key} fired at {t}, after {now}");
            assert!(
                m.tick >= first,
                "key {key} due at {} was left behind",
                m.tick
            );
        }
        let mut sorted = fired.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted, expected,
            "fired set advancing {before} -> {now} (left: wheel, right: model)"
        );
        for &(_, v) in &fired {
            let key = self.owner[&v];
            self.model.get_mut(&key).unwrap().pending = false;
        }
        self.fired += fired.len() as u64;
        // The order within one tick is unspecified (it follows the history
        // of the slot lists), so the trace keeps the fired set of each tick.
        let mut rel: Vec<(u64, u32)> = fired.iter().map(|&(t, v)| (t - self.start, v)).collect();
        rel.sort_unstable();
        self.trace.push(Event::Fired(rel));
        self.stopped_at = stopped;
        self.check();
    }

    /// Wheel and model agree.
    fn check(&mut self) {
        self.check_values();
        let w = &mut self.wheel;
        w.check_invariants();
        assert_eq!(w.slots() as u64, self.slots);
        // Where the wheel has the pending entries: their model tick, or an
        // earlier one for an entry pushed back and not yet filed again.
        let pending: Vec<u64> = self
            .model
            .iter()
            .filter(|(_, m)| m.pending)
            .map(|(&k, m)| {
                let linked = w.tick_of(k);
                assert!(linked <= m.tick, "key {k} linked after its deadline");
                linked
            })
            .collect();
        assert_eq!(w.pending(), pending.len(), "pending()");
        assert_eq!(w.len(), self.model.len(), "live keys");
        for (&key, m) in &self.model {
            assert_eq!(w.is_fired(key), !m.pending, "is_fired({key})");
            if m.pending {
                match self.stopped_at {
                    None => assert!(
                        m.tick > w.elapsed(),
                        "pending key {key} at or before elapsed"
                    ),
                    Some(s) => assert!(m.tick >= s, "pending key {key} before the stop at {s}"),
                }
            }
        }
        // `next_due` is always ahead of `pos` (the owner's loop makes
        // progress), but for the tick of an unfinished firing.
        if let Some(due) = w.next_due() {
            assert!(
                due > w.pos || (w.unfinished() && due == w.pos),
                "next_due {due} not after pos {}",
                w.pos
            );
        }
        // Deferred far lists make their due tick the next one at the latest.
        let deferred = w.deferred_due();
        match (w.next_due(), pending.iter().min()) {
            (None, None) => {}
            (Some(due), Some(&min)) => {
                // An entry two revolutions or more after `pos`'s waits in an
                // upper slot, and the wheel visits the first tick of the
                // revolution before it, to move it into level 0's ring.
                let g = w.geometry;
                let earliest = min;
                let min = if g.revolution(min) >= g.revolution(w.pos).saturating_add(2) {
                    g.revolution_before(min)
                } else {
                    min
                };
                let min = deferred.map_or(min, |d| min.min(d));
                // A lower bound, maybe stale (invariant 5): `run_to` checks
                // that firing it makes progress.
                assert!(
                    due <= min,
                    "next_due {due} after the earliest pending tick {min}"
                );
                if let Some(s) = self.stopped_at {
                    assert!(due >= s, "next_due {due} before the stop at {s}");
                    if w.unfinished() {
                        assert_eq!(due, s, "next_due is not the unfinished firing");
                    } else if w.stale_slots() == 0 {
                        assert_eq!(due, min, "next_due is not the earliest pending tick");
                    }
                } else {
                    // A visit ahead may be: the wheel's position lags behind
                    // `elapsed` while it has nothing to fire.
                    assert!(
                        due > w.elapsed() || due < earliest,
                        "next_due {due} already due"
                    );
                    if w.stale_slots() == 0 {
                        assert_eq!(due, min, "next_due is not the earliest pending tick");
                    }
                }
            }
            (due, min) => panic!("next_due {due:?} but earliest pending {min:?}"),
        }
        let c = w.counters();
        assert_eq!(
            (c.registered, c.fired, c.cancelled, c.rearmed),
            (self.registered, self.fired, self.cancelled, self.rearmed),
            "counters (registered, fired, cancelled, rearmed)"
        );
        let most = (w.levels() as u64 - 1) * (self.links + c.refiled);
        assert!(
            c.cascaded <= most,
            "{} cascades for {} links and {} re-filings of {} levels",
            c.cascaded,
            self.links,
            c.refiled,
            w.levels()
        );
    }

    /// Pending values are reachable through `value_mut` and `pending_values`,
    /// fired ones through neither.
    fn check_values(&mut self) {
        let mut expected: Vec<u32> = Vec::new();
        for (&key, m) in &self.model {
            let got = self.wheel.value_mut(key).map(|v| *v);
            if m.pending {
                assert_eq!(got, Some(m.value), "value_mut({key})");
                expected.push(m.value);
            } else {
                assert_eq!(got, None, "value_mut({key}) of a fired entry");
            }
        }
        let mut values: Vec<u32> = self.wheel.pending_values().copied().collect();
        values.sort_unstable();
        expected.sort_unstable();
        assert_eq!(values, expected, "pending_values()");
    }

    /// Removes every live key, `rotate` giving the order, and checks that
    /// nothing remains.
    fn drain(&mut self, rotate: usize) {
        let mut keys: Vec<Key> = self.model.keys().copied().collect();
        if !keys.is_empty() {
            let n = keys.len();
            keys.rotate_left(rotate % n);
        }
        for key in keys {
            let m = self.model.remove(&key).unwrap();
            let got = self.wheel.remove(key);
            assert_eq!(got, m.pending.then_some(m.value), "draining key {key}");
            if m.pending {
                self.cancelled += 1;
            }
            self.check();
        }
        assert_eq!(
            self.wheel.len(),
            0,
            "entries left after removing everything"
        );
        assert_eq!(self.wheel.pending(), 0);
        assert_eq!(self.wheel.next_due(), None, "a slot still claims entries");
        for slot in 0..self.wheel.heads.len() {
            assert_eq!(self.wheel.heads[slot], NIL, "slot {slot} not empty");
        }
        assert!(self.wheel.min_ticks.iter().all(|&m| m == u64::MAX));
        assert_eq!(self.wheel.occupied.ones().count(), 0);
        self.wheel.shrink_if_empty();
        self.check();
    }
}

/// Runs `ops` on a fresh wheel, checking against the model throughout, then
/// removes everything. Returns the observable trace.
fn run(slots: usize, start: u64, ops: &[Op], rotate: usize) -> Vec<Event> {
    let mut h = Harness::new(slots, start);
    for op in ops {
        h.apply(op);
    }
    h.drain(rotate);
    h.trace
}

proptest! {
    #![proptest_config(config())]

    /// Random operations on a small wheel agree with the model at every step.
    #[test]
    fn wheel_matches_model(slots in slots(), ops in ops(), rotate in any::<usize>()) {
        run(slots, 0, &ops, rotate);
    }

    /// A wheel that has been up for a long time (large `elapsed`) does exactly
    /// what a fresh one does, tick for tick, relative to its start.
    #[test]
    fn long_uptime_behaves_like_a_fresh_wheel(
        slots in slots(),
        ops in ops(),
        rotate in any::<usize>(),
        start in prop_oneof![
            Just(1u64 << 30),
            Just(1u64 << 40),
            // Far enough below the top that no run of operations (at most
            // 80 jumps of a few million ticks) saturates.
            Just(u64::MAX - (1 << 40)),
            (1u64 << 20)..(1u64 << 62),
        ],
    ) {
        // Where a `Partial` stops depends on where cascades fall, which
        // depends on the absolute ticks: here it is a plain `Advance`.
        let ops: Vec<Op> = ops
            .into_iter()
            .map(|op| match op {
                Op::Partial { n, .. } | Op::Keys { n, .. } => Op::Advance(n),
                op => op,
            })
            .collect();
        let fresh = run(slots, 0, &ops, rotate);
        let old = run(slots, start, &ops, rotate);
        prop_assert_eq!(fresh, old);
    }

    /// At the very top of the tick range ticks saturate at `MAX_TICK`: the
    /// model still holds (and nothing overflows).
    #[test]
    fn top_of_the_tick_range(
        slots in slots(),
        ops in ops(),
        rotate in any::<usize>(),
        below in 0u64..=3_000,
    ) {
        run(slots, MAX_TICK - below, &ops, rotate);
    }

    /// A burst large enough to grow the slab past the shrink threshold, some
    /// cancelled, the rest fired, then everything removed: the slab is freed
    /// and the wheel keeps working.
    #[test]
    fn burst_then_drain_frees_the_slab(
        slots in slots(),
        n in (SHRINK_ABOVE + 1)..(SHRINK_ABOVE + 400),
        seed in any::<u64>(),
    ) {
        let mut w = TimerWheel::new(slots, 0);
        let mut x = seed | 1;
        let mut rand = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let ticks: Vec<u64> = (0..n).map(|_| 1 + rand(4 * slots as u64 + 7)).collect();
        let keys: Vec<Key> = ticks
            .iter()
            .enumerate()
            .map(|(i, &t)| w.insert(t, i as u32).unwrap())
            .collect();
        let cancel: Vec<bool> = (0..n).map(|_| rand(2) == 0).collect();
        for (i, &k) in keys.iter().enumerate() {
            if cancel[i] {
                prop_assert_eq!(w.remove(k), Some(i as u32));
            }
        }
        w.check_invariants();
        let end = 4 * slots as u64 + 7;
        w.advance(end);
        let mut fired = Vec::new();
        let mut rounds = 0;
        while let Some(t) = w.next_due().filter(|&t| t <= end) {
            rounds += 1;
            prop_assert!(rounds <= 2 * n + slots + 2, "fire loop does not converge at {}", t);
            let mut out = Vec::new();
            w.fire(t, &mut out);
            for v in out {
                prop_assert_eq!(ticks[v as usize], t, "fired at its tick");
                fired.push(v);
            }
        }
        fired.sort_unstable();
        let expected: Vec<u32> = (0..n as u32).filter(|&i| !cancel[i as usize]).collect();
        prop_assert_eq!(fired, expected);
        prop_assert!(w.entries.capacity() > SHRINK_ABOVE);
        w.shrink_if_empty();
        prop_assert!(w.entries.capacity() > SHRINK_ABOVE, "fired keys keep the slab");
        for (i, &k) in keys.iter().enumerate() {
            if !cancel[i] {
                prop_assert_eq!(w.remove(k), None);
            }
        }
        w.shrink_if_empty();
        prop_assert_eq!(w.entries.capacity(), 0);
        w.check_invariants();
        let k = w.insert(end + 1, 7).unwrap();
        w.advance(end + 1);
        let mut out = Vec::new();
        let due = w.next_due().unwrap();
        w.fire(due, &mut out);
        prop_assert_eq!(out, vec![7]);
        prop_assert_eq!(w.remove(k), None);
    }
}
