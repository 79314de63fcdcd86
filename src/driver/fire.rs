//! The firing pass: every tick up to now's, in tick order across shards.
//!
//! Run by the driver task ([`run`](super::run), with a delivery after each
//! tick) or by its timer's waker (`TimerWaker`, all ticks at once), never by
//! both at once (`PassGate`). A pass is [`WheelCore::begin_pass`], then
//! [`WheelCore::fire_next_tick`] until it says none is left, then
//! [`WheelCore::end_pass`]; delivering what fired (waking the wakers,
//! spawning the callbacks) is the caller's, after every lock is let go.
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

    pub(super) fn next_due(&mut self) -> Option<u64> {
        let callbacks = self.callbacks.as_mut().and_then(|t| t.next_due());
        match (self.sleeps.next_due(), callbacks) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires `tick` into `out`.
    fn fire(&mut self, tick: u64, out: &mut Fired) {
        self.sleeps.fire(tick, &mut out.wakers);
        self.fire_callbacks(tick, &mut out.scratch, &mut out.callbacks);
    }
}

impl WheelCore {
    /// Fires every tick up to `now`'s into `p.fired` (in the order they
    /// fired, after whatever it already holds), and returns
    /// the next tick that may have something due (or `IDLE`).
    pub(super) fn fire_due(&self, now: Instant, p: &mut Pass) -> u64 {
        self.begin_pass(now, p);
        while self.fire_next_tick(p) {}
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
        self.shards(&mut p.shards);
        p.next.clear();
        p.from = u64::MAX;
        for shard in &p.shards {
            let mut s = shard.lock();
            p.from = p.from.min(s.sleeps.elapsed());
            s.advance(p.now_tick);
            p.next.push(s.next_due().unwrap_or(IDLE));
        }
    }

    /// Fires the earliest tick of the pass that has something due, across
    /// shards, into `p.fired`; `false` when none is left.
    pub(super) fn fire_next_tick(&self, p: &mut Pass) -> bool {
        loop {
            let tick = p.next.iter().copied().min().unwrap_or(IDLE);
            if tick > p.now_tick {
                return false;
            }
            p.visited += 1;
            let before = p.fired.len();
            for (shard, next) in p.shards.iter().zip(p.next.iter_mut()) {
                if *next != tick {
                    continue;
                }
                let mut s = shard.lock();
                s.fire(tick, &mut p.fired);
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
            if batch == 0 {
                continue;
            }
            self.release(batch);
            self.metrics.max_batch.fetch_max(batch as u64, Relaxed);
            if !p.lag_noted {
                // The earliest tick of this pass is the latest one run.
                p.lag_noted = true;
                if let Some(now) = p.now {
                    self.note_lag(tick, now, &mut p.last_lag_warning);
                }
            }
            tracing::trace!(tick, woken = batch, "tokio-wheel: tick fired");
            return true;
        }
    }

    /// Ends a pass: counts the ticks visited and skipped, and returns the
    /// next tick that may have something due (or `IDLE`).
    pub(super) fn end_pass(&self, p: &mut Pass) -> u64 {
        let advanced = p.now_tick.saturating_sub(p.from.min(p.now_tick));
        self.metrics.ticks.fetch_add(p.visited, Relaxed);
        self.metrics
            .ticks_skipped
            .fetch_add(advanced.saturating_sub(p.visited), Relaxed);
        for shard in &p.shards {
            shard.lock().shrink_if_empty();
        }
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
