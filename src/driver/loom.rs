//! Loom models of the shared state: the real [`Handoff`] protocol and the real
//! [`TimerWheel`] under a lock, with registrations, cancels, waker changes and
//! resets racing the driver or a shutdown on other threads. Loom runs every interleaving
//! (up to a preemption bound) and each model asserts what must hold in all of
//! them.
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_wheel_loom" cargo test --release --lib loom_
//! ```
//!
//! `LOOM_MAX_PREEMPTIONS` (default 3 here) trades depth for time.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::handoff::{FiredUpto, Handoff, Plan, IDLE};
use crate::wheel::TimerWheel;

type Shard = Arc<Mutex<TimerWheel<u32>>>;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

fn shard(slots: usize, elapsed: u64) -> Shard {
    Arc::new(Mutex::new(TimerWheel::new(slots, elapsed)))
}

/// What a registration ended up doing, as `Sleep::register` followed by
/// `Shared::schedule` does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Did {
    Nothing,
    Notified,
    Started,
}

fn register(shard: &Shard, handoff: &Handoff, tick: u64, value: u32) -> Did {
    shard
        .lock()
        .unwrap()
        .insert(tick, value)
        .expect("after elapsed");
    loop {
        match handoff.plan(tick) {
            Plan::Covered => return Did::Nothing,
            Plan::Notify => return Did::Notified,
            Plan::Start if handoff.claim(tick) => return Did::Started,
            Plan::Start => {}
        }
    }
}

fn next_due(shards: &[Shard]) -> u64 {
    shards
        .iter()
        .filter_map(|s| s.lock().unwrap().next_due())
        .min()
        .unwrap_or(IDLE)
}

/// The driver found nothing due and decides to stop, while registrations on
/// one or two shards race it. Whatever the interleaving: at most one driver
/// exists afterwards, and every pending timer is covered by a driver that
/// will wake in time, was notified, or was just started.
fn driver_going_idle(registrants: usize) {
    model(move || {
        let shards: Vec<Shard> = (0..registrants).map(|_| shard(4, 0)).collect();
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
        let pending: usize = shards.iter().map(|s| s.lock().unwrap().pending()).sum();
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
        s.lock().unwrap().insert(9, 0).unwrap();
        let handoff = Arc::new(Handoff::new());
        assert!(handoff.claim(1));
        let (s2, h2) = (s.clone(), handoff.clone());
        let reg = thread::spawn(move || register(&s2, &h2, 3, 1));
        let first = s.lock().unwrap().next_due().unwrap_or(IDLE);
        let s3 = s.clone();
        let decision = handoff.publish(first, || s3.lock().unwrap().next_due().unwrap_or(IDLE));
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
        let woken: Vec<u32> = s.lock().unwrap().pending_values().copied().collect();
        let did = reg.join().unwrap();
        assert!(
            did == Did::Started || woken.contains(&7),
            "timer stranded: {did:?}, guard woke {woken:?}"
        );
    });
}

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
        let existing = swap.then(|| s.lock().unwrap().insert(2, 1).unwrap());
        let handoff = Arc::new(Handoff::new());
        let (s2, h2) = (s.clone(), handoff.clone());
        let writer = thread::spawn(move || {
            if h2.is_shut_down() {
                return Wrote::FellBack;
            }
            let key = {
                let mut w = s2.lock().unwrap();
                match existing {
                    Some(key) => {
                        *w.value_mut(key).expect("pending") = 2;
                        key
                    }
                    None => w.insert(2, 2).expect("after elapsed"),
                }
            };
            if recheck && h2.is_shut_down() {
                s2.lock().unwrap().remove(key);
                return Wrote::FellBack;
            }
            Wrote::Linked
        });
        assert!(handoff.shut_down(), "the first shutdown");
        let woken: Vec<u32> = s.lock().unwrap().pending_values().copied().collect();
        let wrote = writer.join().unwrap();
        assert!(
            wrote == Wrote::FellBack || woken.contains(&2),
            "never woken: {wrote:?}, shutdown woke {woken:?}"
        );
    });
}

/// A registration racing shutdown: woken by its scan, or sees the flag.
#[test]
fn loom_registration_racing_shutdown() {
    write_racing_shutdown(false, true);
}

/// A waker swap racing shutdown: the new waker is woken, or the poll sees
/// the flag (the re-arm of a fired entry is the same write).
#[test]
fn loom_waker_swap_racing_shutdown() {
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

/// Cancel (drop) racing with the driver firing the timer's tick: exactly one
/// of them gets the waker, and the key is freed exactly once.
#[test]
fn loom_cancel_racing_fire() {
    model(|| {
        let s = shard(4, 0);
        let key = s.lock().unwrap().insert(3, 42).unwrap();
        let s2 = s.clone();
        let driver = thread::spawn(move || {
            let mut w = s2.lock().unwrap();
            w.advance(3);
            let mut out = Vec::new();
            w.fire(3, &mut out);
            out
        });
        let cancelled = s.lock().unwrap().remove(key);
        let fired = driver.join().unwrap();
        match (cancelled, fired.as_slice()) {
            (Some(42), []) | (None, [42]) => {}
            other => panic!("not exactly one of fired and cancelled: {other:?}"),
        }
        let w = s.lock().unwrap();
        assert_eq!((w.pending(), w.len()), (0, 0), "an entry was left behind");
    });
}

/// The task re-polls with a new waker while the driver fires: if the new
/// waker got in first it is the one woken; otherwise the poll sees the
/// timer fired (and completes) and the old one was woken.
#[test]
fn loom_waker_change_racing_fire() {
    model(|| {
        let s = shard(4, 0);
        let key = s.lock().unwrap().insert(2, 1).unwrap();
        let s2 = s.clone();
        let driver = thread::spawn(move || {
            let mut w = s2.lock().unwrap();
            w.advance(2);
            let mut out = Vec::new();
            w.fire(2, &mut out);
            out
        });
        let replaced = {
            let mut w = s.lock().unwrap();
            match w.value_mut(key) {
                Some(v) => {
                    *v = 2;
                    true
                }
                None => false,
            }
        };
        let fired = driver.join().unwrap();
        let expected = if replaced { 2 } else { 1 };
        assert_eq!(fired, vec![expected], "replaced: {replaced}");
        assert!(s.lock().unwrap().is_fired(key));
    });
}

/// A reset to an earlier tick races with the driver reaching that tick: the
/// timer is delivered exactly once, by the driver or by the reset itself
/// (which finds the new tick already due), and never before tick 4.
#[test]
fn loom_reset_earlier_racing_fire() {
    model(|| {
        let s = shard(8, 0);
        let key = s.lock().unwrap().insert(10, 5).unwrap();
        let delivered = Arc::new(AtomicUsize::new(0));
        let s2 = s.clone();
        let d2 = delivered.clone();
        let driver = thread::spawn(move || {
            let mut w = s2.lock().unwrap();
            w.advance(4);
            while let Some(t) = w.next_due().filter(|&t| t <= 4) {
                let mut out = Vec::new();
                w.fire(t, &mut out);
                assert!(t >= 4, "fired at {t}, before the reset's tick");
                d2.fetch_add(out.len(), SeqCst);
            }
        });
        let woke_itself = s.lock().unwrap().reschedule(key, 4).is_some();
        if woke_itself {
            delivered.fetch_add(1, SeqCst);
        }
        driver.join().unwrap();
        assert_eq!(delivered.load(SeqCst), 1, "delivered once");
    });
}

/// Two threads register on two shards while the driver fires a tick on both:
/// each timer is fired by that pass or stays pending for a later tick, and
/// the firing never runs ahead of the driver's tick.
#[test]
fn loom_two_shards_registering_during_a_tick() {
    model(|| {
        let shards = [shard(4, 0), shard(4, 0)];
        let regs: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let s = s.clone();
                thread::spawn(move || {
                    let mut w = s.lock().unwrap();
                    // Due at tick 1, or refused as due if the driver passed it.
                    w.insert(1, i as u32).is_ok()
                })
            })
            .collect();
        let mut out = Vec::new();
        for s in &shards {
            let mut w = s.lock().unwrap();
            w.advance(1);
            if w.next_due() == Some(1) {
                w.fire(1, &mut out);
            }
        }
        let linked: usize = regs
            .into_iter()
            .map(|r| usize::from(r.join().unwrap()))
            .sum();
        let left: usize = shards.iter().map(|s| s.lock().unwrap().pending()).sum();
        // Every linked timer was fired by the pass: none left behind at or
        // before the tick the driver reached.
        assert_eq!(left, 0, "a timer due at the driver's tick was left");
        assert_eq!(out.len(), linked);
    });
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
        let key = s.lock().unwrap().insert(2, 7).unwrap();
        let fired = Arc::new(FiredUpto::new());
        let woken = Arc::new(AtomicBool::new(false));
        let (s2, f2, w2) = (s.clone(), fired.clone(), woken.clone());
        let driver = thread::spawn(move || {
            let mut out = Vec::new();
            {
                let mut w = s2.lock().unwrap();
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
        let ready = fired.covers(2) && s.lock().unwrap().is_fired(key);
        driver.join().unwrap();
        assert!(
            ready || !after_wake,
            "a poll after the wake decided Pending without the lock: lost wake-up"
        );
    });
}

#[test]
fn loom_lock_free_poll_racing_fire() {
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
            let woke = t2.lock().unwrap().take();
            if passed && !end_before_take {
                g2.end_pass();
            }
            woke
        });
        // The driver task's poll with its new waker 2.
        *task.lock().unwrap() = Some(2);
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
