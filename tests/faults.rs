//! Fault tests: the wheel under runtime shutdown, memory churn, wakers that
//! drop timers of the same wheel, and runtimes and executors mixed.
//!
//! This binary counts every heap byte (its own `#[global_allocator]`), so all
//! its tests hold [`serial`]'s lock: a measurement sees only its own test.
//! Timing logic runs on paused time; tests that need several runtimes (which
//! cannot share a paused clock) use the real clock and only assert that
//! nothing completes early, with generous bounds against hangs.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Wake, Waker};
use std::time::Duration;

use tokio::runtime::{Builder as RtBuilder, Runtime};
use tokio::time::Instant;
use tokio_wheel::{Sleep, Wheel};

use common::{
    alive_tasks, assert_wheel_fires_on, complete_on, current_thread, drop_runtime_within, ms,
    multi_thread, panic_message, poll_with, runtime_flavours, tick_wheel, wait_until_pending,
    within, yield_until, CountingWaker,
};

// ---------------------------------------------------------------------------
// Allocation counting

struct Counting;

thread_local! {
    /// This thread's share: bytes it allocated minus bytes it freed, and the
    /// peak of that since `reset_peak`.
    static THREAD: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

fn grew(n: usize) {
    let _ = THREAD.try_with(|t| {
        let (live, peak) = t.get();
        let live = live + n as isize;
        t.set((live, peak.max(live)));
    });
}

fn shrank(n: usize) {
    let _ = THREAD.try_with(|t| {
        let (live, peak) = t.get();
        t.set((live - n as isize, peak));
    });
}

// SAFETY: every call is forwarded to `System` unchanged; the counters are
// only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            grew(new_size);
            shrank(layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes this thread allocated and has not freed. The memory tests keep all
/// the wheel's work on their own thread (a paused current-thread runtime), so
/// what the test harness does on other threads meanwhile does not count.
fn live() -> isize {
    THREAD.with(|t| t.get().0)
}

/// Restarts this thread's peak tracking from its current level.
fn reset_peak() {
    THREAD.with(|t| t.set((t.get().0, t.get().0)));
}

/// This thread's peak since `reset_peak`.
fn peak() -> isize {
    THREAD.with(|t| t.get().1)
}

// ---------------------------------------------------------------------------
// Helpers

/// One test at a time in this binary (see the module docs).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs a test body alone (see [`serial`]) on a thread of its own, named
/// after the test, failing if it takes over `secs`: a driver that never
/// yields would otherwise hang a runtime on the test's thread, and the whole
/// binary with it.
#[track_caller]
fn guarded(secs: u64, body: impl FnOnce() + Send + 'static) {
    let _serial = serial();
    // The harness runs each test on a thread named after the test.
    let test = std::thread::current().name().unwrap_or("test").to_owned();
    within(secs, &test, body);
}

/// Like [`guarded`], but runs the future that `body` returns on a
/// current-thread runtime whose clock starts paused.
#[track_caller]
fn guarded_paused<F: Future<Output = ()>>(secs: u64, body: impl FnOnce() -> F + Send + 'static) {
    guarded(secs, || {
        RtBuilder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(body())
    });
}

/// A wheel with one shard, so that every timer of a test shares its lists.
fn one_shard_wheel(tick_ms: u64, slots: usize) -> Wheel {
    Wheel::builder()
        .tick(ms(tick_ms))
        .slots(slots)
        .shards(1)
        .build()
        .unwrap()
}

/// The message of the panic `f` must raise.
fn expect_panic<R>(what: &str, f: impl FnOnce() -> R) -> String {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("{what}: expected a panic"),
        Err(payload) => panic_message(&*payload),
    }
}

/// The documented cause when the driver's runtime has shut down.
fn says_shutting_down(msg: &str) {
    assert!(
        msg.contains("tokio-wheel") && msg.contains("shutting down"),
        "unexpected message: {msg:?}"
    );
}

/// The documented cause when no runtime can run the driver.
fn says_no_runtime(msg: &str) {
    assert!(
        msg.contains("tokio-wheel") && msg.contains("no Tokio runtime"),
        "unexpected message: {msg:?}"
    );
}

/// A sleep made in `rt`'s context (its deadline read from `rt`'s clock).
fn made_on(rt: &Runtime, make: impl FnOnce() -> Sleep) -> Sleep {
    let _enter = rt.enter();
    make()
}

// ---------------------------------------------------------------------------
// (a) The driver's runtime shuts down while timers are pending

/// Tasks waiting on wheel timers when their runtime is dropped: the drop
/// returns and does not panic, every timer is released with its task, and
/// the wheel works on the next runtime.
#[test]
fn runtime_shutdown_with_pending_timers_releases_everything() {
    guarded(60, || {
        for (name, make) in runtime_flavours(1) {
            const N: usize = 300;
            let wheel = tick_wheel(5, 16);
            let token = Arc::new(());
            let rt = make();
            rt.block_on(async {
                for i in 0..N {
                    let (w, t) = (wheel.clone(), token.clone());
                    tokio::spawn(async move {
                        let _t = t;
                        match i % 3 {
                            0 => w.sleep(Duration::from_secs(3600)).await,
                            1 => {
                                let never = std::future::pending::<()>();
                                let _ = w.timeout(Duration::from_secs(60 + i as u64), never).await;
                            }
                            _ => w.sleep(Duration::from_secs(u64::MAX)).await,
                        }
                    });
                }
                wait_until_pending(&wheel, N, name).await;
            });
            let weak: Weak<()> = Arc::downgrade(&token);
            drop(token);
            assert_eq!(wheel.pending(), N, "{name}");
            drop_runtime_within(20, rt);
            assert_eq!(
                weak.strong_count(),
                0,
                "{name}: a task (or its waker) leaked"
            );
            assert_eq!(wheel.pending(), 0, "{name}: timers outlived their tasks");
            let stats = wheel.stats();
            assert_eq!(stats.cancelled, N as u64, "{name}: {stats:?}");
            assert_eq!(stats.fired, 0, "{name}: {stats:?}");

            let rt = make();
            assert_wheel_fires_on(&rt, &wheel, name);
            drop_runtime_within(20, rt);
            assert_eq!(wheel.pending(), 0);
        }
    });
}

/// A sleep registered on a runtime that is then dropped (its driver with it)
/// is woken by the driver's hand-over; polled in the dead runtime's context
/// it panics with the documented message and unregisters; polled on a new
/// runtime it completes, never early.
#[test]
fn a_sleep_outliving_its_runtime() {
    guarded(60, || {
        for (name, make) in runtime_flavours(1) {
            let wheel = tick_wheel(5, 8);
            let rt = make();
            let dead = rt.handle().clone();
            let (woken, waker) = CountingWaker::new();
            let (mut a, mut b) = rt.block_on(async {
                // Long enough that a slow machine does not see them fire before
                // the runtime is gone.
                let mut a = wheel.sleep(ms(300));
                let mut b = wheel.sleep(ms(400));
                assert!(poll_with(&mut a, &waker).is_pending());
                assert!(poll_with(&mut b, &waker).is_pending());
                (a, b)
            });
            assert_eq!(wheel.pending(), 2);
            drop_runtime_within(20, rt);
            assert_eq!(
                woken.count(),
                2,
                "{name}: the dead driver handed its timers back by waking them"
            );
            assert_eq!(
                wheel.pending(),
                2,
                "{name}: the sleeps still own their entries"
            );

            // In the dead runtime's context: the documented panic, and `a` is
            // unregistered.
            let msg = {
                let _enter = dead.enter();
                expect_panic("poll on a dead runtime", || poll_with(&mut a, &waker))
            };
            says_shutting_down(&msg);
            assert_eq!(
                wheel.pending(),
                1,
                "{name}: the panicking sleep unregistered"
            );

            // On a new runtime both complete: `a` (idle after the panic) and `b`
            // (still registered from the dead runtime).
            let rt = make();
            let (da, db) = (a.deadline(), b.deadline());
            complete_on(&rt, &format!("{name}: on the new runtime"), async {
                (&mut a).await;
                assert!(Instant::now() >= da, "{name}: a early");
                (&mut b).await;
                assert!(Instant::now() >= db, "{name}: b early");
            });
            assert!(a.is_elapsed() && b.is_elapsed());
            assert_eq!(wheel.pending(), 0);
            drop((a, b));
            drop_runtime_within(20, rt);
        }
    });
}

/// A wheel bound to a runtime that shuts down: polling a pending timer
/// anywhere panics with the documented message (as Builder::runtime says),
/// and dropping timers afterwards is fine.
#[test]
fn bound_wheel_after_its_runtime_shut_down() {
    guarded(60, || {
        let rt = multi_thread(1);
        let wheel = Wheel::builder()
            .tick(ms(5))
            .runtime(rt.handle().clone())
            .build()
            .unwrap();
        let mut registered = wheel.sleep(Duration::from_secs(60));
        assert!(poll_with(&mut registered, Waker::noop()).is_pending());
        let mut fresh = wheel.sleep(Duration::from_secs(60));
        drop_runtime_within(20, rt);
        assert_eq!(wheel.pending(), 1);

        let other = current_thread();
        let msg = other.block_on(async {
            expect_panic("registered, polled on another runtime", || {
                poll_with(&mut registered, Waker::noop())
            })
        });
        says_shutting_down(&msg);
        let msg = expect_panic("fresh, polled outside any runtime", || {
            futures::executor::block_on(&mut fresh)
        });
        says_shutting_down(&msg);
        assert_eq!(wheel.pending(), 0);
        // Past deadlines need no driver and still complete.
        let mut past = wheel.sleep(Duration::ZERO);
        assert!(poll_with(&mut past, Waker::noop()).is_ready());
        drop((registered, fresh, past));
        assert_eq!(wheel.stats().pending, 0);
    });
}

// ---------------------------------------------------------------------------
// (b) Memory

/// A million register/cancel cycles, one timer at a time, allocate nothing
/// once warm: the live heap ends where it started and never grows by more
/// than a small constant on the way.
#[test]
fn a_million_register_drop_cycles_return_to_the_starting_memory() {
    guarded_paused(60, || async {
        let wheel = one_shard_wheel(10, 512);
        let waker = Waker::noop();
        let cycle = |i: u64| {
            let mut s = wheel.sleep(ms(1 + i % 10_000));
            assert!(poll_with(&mut s, waker).is_pending());
            drop(s);
        };
        // Warm up: the driver task, the slab's first chunk, thread-locals.
        for i in 0..1_000 {
            cycle(i);
        }
        let before = live();
        reset_peak();
        for i in 0..1_000_000 {
            cycle(i);
        }
        let growth = peak() - before;
        let after = live();
        assert_eq!(wheel.pending(), 0);
        let stats = wheel.stats();
        assert_eq!(stats.registered, 1_001_000);
        assert_eq!(stats.cancelled, 1_001_000);
        assert!(
            after - before <= 1024,
            "live heap grew by {} bytes over 1M cycles",
            after - before
        );
        assert!(
            growth <= 4096,
            "peak {growth} bytes above the start while cycling"
        );
    });
}

/// A burst of 100k registered timers, all dropped: the wheel gives its slab
/// back, so the live heap returns to where it was before the burst. Dropping
/// only unlinks; the driver frees the empty slab on its next pass, which here
/// is at the burst's first tick (it still plans to wake then, finds nothing,
/// frees the slab and stops), so the clock is moved on to that tick.
#[test]
fn a_burst_of_100k_dropped_timers_frees_the_slab() {
    const N: usize = 100_000;
    guarded_paused(60, || async {
        let wheel = one_shard_wheel(10, 512);
        let waker = Waker::noop();
        // Warm up, so that the driver task exists.
        let mut s = wheel.sleep(ms(5));
        assert!(poll_with(&mut s, waker).is_pending());
        drop(s);

        for round in 0..3 {
            let mut sleeps: Vec<Sleep> = Vec::with_capacity(N);
            let before = live();
            for i in 0..N as u64 {
                let mut s = wheel.sleep(ms(1 + i % 20_000));
                assert!(poll_with(&mut s, waker).is_pending());
                sleeps.push(s);
            }
            let full = live();
            assert_eq!(wheel.pending(), N);
            assert!(
                full - before >= (N * 16) as isize,
                "round {round}: only {} bytes for {N} timers: is the allocator counting?",
                full - before
            );
            // Dropped in place (the Vec keeps its buffer), in a scattered
            // order.
            let mut i = 0;
            for _ in 0..N {
                i = (i + 7_919) % N;
                let s = std::mem::replace(&mut sleeps[i], wheel.sleep_until(Instant::now()));
                drop(s);
            }
            assert_eq!(wheel.pending(), 0);
            // The burst's first tick: the driver's next pass.
            tokio::time::advance(ms(20)).await;
            for _ in 0..1000 {
                if live() - before <= 1024 {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let after = live();
            assert!(
                after - before <= 1024,
                "round {round}: {} of {} bytes still held after dropping every timer \
             and the driver's next pass",
                after - before,
                full - before
            );
            drop(sleeps);
        }
        assert_eq!(wheel.stats().cancelled, N as u64 * 3 + 1);
    });
}

/// A burst of 100k timers that all fire and are completed by polling: the
/// wheel should give its slab back as it does when they are dropped, at the
/// latest once its driver has made another pass.
///
/// A regression test: the driver frees an empty slab at the end of a pass,
/// but at the end of the pass that fires the burst the fired entries still
/// fill the slab (each is removed when its `Sleep` completes), and every
/// later pass sees the entry of whatever timer it runs for. So the last
/// `Sleep` of a burst to complete gives the slab back (`shrink_if_empty` in
/// `Sleep::complete`); before that fix, the 4 MiB stayed allocated.
#[test]
fn a_burst_of_100k_fired_timers_frees_the_slab() {
    const N: usize = 100_000;
    guarded_paused(60, || async {
        let wheel = one_shard_wheel(10, 64);
        let (woken, waker) = CountingWaker::new();
        let mut warm = wheel.sleep(ms(5));
        assert!(poll_with(&mut warm, &waker).is_pending());
        drop(warm);
        tokio::time::advance(ms(20)).await;
        yield_until("the warm-up driver stops", || alive_tasks() == 0).await;

        let mut sleeps: Vec<Sleep> = Vec::with_capacity(N);
        let before = live();
        for i in 0..N as u64 {
            let mut s = wheel.sleep(ms(1 + i % 1_000));
            assert!(poll_with(&mut s, &waker).is_pending());
            sleeps.push(s);
        }
        tokio::time::advance(ms(1_000)).await;
        yield_until("every timer fired", || woken.count() == N).await;
        assert_eq!(wheel.pending(), 0);
        // 100k completions in one poll of this task: outside Tokio's
        // cooperative budget, which would otherwise make the 129th `Pending`
        // until the task yields (as with `tokio::time`'s sleeps).
        tokio::task::coop::unconstrained(async {
            for s in &mut sleeps {
                assert!(poll_with(s, &waker).is_ready());
            }
        })
        .await;
        yield_until("the driver stops", || alive_tasks() == 0).await;
        // Another pass of the driver: a timer awaited to completion.
        wheel.sleep(ms(30)).await;
        tokio::time::advance(ms(100)).await;
        yield_until("the driver stops again", || alive_tasks() == 0).await;
        let after = live();
        drop(sleeps);
        assert!(
            after - before <= 1024,
            "{} bytes still held after {N} timers fired and completed, and another pass",
            after - before
        );
    });
}

/// Timers registered in a burst and then cancelled, while one timer of the
/// same shard stays pending, due in an hour: the wheel gives the burst's
/// memory back as they are cancelled, not at the driver's next pass (an hour
/// away). `register` makes the survivor (first) and each burst timer; `cancel`
/// drops the burst in the order given.
async fn a_mass_cancel_frees_the_burst<T>(
    what: &str,
    mut register: impl FnMut(u64) -> T,
    mut cancel: impl FnMut(T),
    order: impl Fn(usize, usize) -> usize,
) {
    const N: usize = 100_000;
    let survivor = register(3_600_000);
    let mut burst: Vec<Option<T>> = Vec::with_capacity(N);
    let before = live();
    for i in 0..N as u64 {
        burst.push(Some(register(1_000 + i % 50_000)));
    }
    let full = live();
    assert!(
        full - before >= (N * 16) as isize,
        "{what}: only {} bytes for {N} timers: is the allocator counting?",
        full - before
    );
    for i in 0..N {
        cancel(burst[order(i, N)].take().expect("each once"));
    }
    // No driver pass: the clock has not moved, the next one is an hour away.
    let after = live();
    assert!(
        after - before <= 64 * 1024,
        "{what}: {} of {} bytes still held after cancelling the burst, one timer left",
        after - before,
        full - before
    );
    cancel(survivor);
    assert!(live() - before <= 64 * 1024, "{what}: after the last one");
}

/// Which burst timer the `i`th cancel takes, of `n`.
type Order = fn(usize, usize) -> usize;

/// Cancelled in the order registered, in reverse, and scattered.
fn cancel_orders() -> [(&'static str, Order); 3] {
    [
        ("in order", |i, _| i),
        ("reversed", |i, n| n - 1 - i),
        ("scattered", |i, n| (i * 7_919) % n),
    ]
}

#[test]
fn a_mass_cancel_of_sleeps_frees_the_burst_though_one_stays_pending() {
    guarded_paused(60, || async {
        for (order, at) in cancel_orders() {
            let wheel = one_shard_wheel(1, 512);
            let waker = Waker::noop();
            let register = |delay: u64| {
                let mut s = wheel.sleep(ms(delay));
                assert!(poll_with(&mut s, waker).is_pending());
                s
            };
            a_mass_cancel_frees_the_burst(&format!("sleeps, {order}"), register, drop, at).await;
        }
    });
}

#[test]
fn a_mass_cancel_of_callbacks_frees_the_burst_though_one_stays_pending() {
    guarded_paused(60, || async {
        for (order, at) in cancel_orders() {
            let wheel = one_shard_wheel(1, 512);
            let register = |delay: u64| wheel.schedule(ms(delay), || ()).unwrap();
            let cancel = |h: tokio_wheel::TimerHandle| assert!(h.cancel());
            a_mass_cancel_frees_the_burst(&format!("callbacks, {order}"), register, cancel, at)
                .await;
        }
    });
}

#[test]
fn a_mass_remove_from_an_expiry_queue_frees_the_burst_though_one_stays() {
    guarded_paused(60, || async {
        for (order, at) in cancel_orders() {
            let wheel = one_shard_wheel(1, 512);
            let queue = wheel.expiry_queue::<u64>();
            let register = |delay: u64| queue.insert(delay, ms(delay));
            let remove = |key| assert!(queue.remove(&key).is_some());
            a_mass_cancel_frees_the_burst(&format!("queue, {order}"), register, remove, at).await;
        }
    });
}

// ---------------------------------------------------------------------------
// (c) Wakers that drop timers of the same wheel

/// Drops the timers it holds when woken.
#[derive(Default)]
struct DropOnWake {
    victims: Mutex<Vec<Sleep>>,
    wakes: AtomicUsize,
}

impl DropOnWake {
    fn new() -> (Arc<DropOnWake>, Waker) {
        let killer = Arc::new(DropOnWake::default());
        let waker = Waker::from(killer.clone());
        (killer, waker)
    }

    /// Holds `victims`, to drop them when woken.
    fn hold(&self, victims: Vec<Sleep>) {
        *self.victims.lock().unwrap() = victims;
    }

    fn wakes(&self) -> usize {
        self.wakes.load(SeqCst)
    }

    fn kill(&self) {
        self.wakes.fetch_add(1, SeqCst);
        let victims = std::mem::take(&mut *self.victims.lock().unwrap());
        drop(victims);
    }
}

impl Wake for DropOnWake {
    fn wake(self: Arc<Self>) {
        self.kill();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.kill();
    }
}

/// Holds timers, and drops them when the last waker reference goes.
struct OwnsTimers {
    _timers: Mutex<Vec<Sleep>>,
}

impl Wake for OwnsTimers {
    fn wake(self: Arc<Self>) {}
}

/// Registered sleeps at the given ms from now, polled with `waker`.
fn registered(wheel: &Wheel, at_ms: &[u64], waker: &Waker) -> Vec<Sleep> {
    at_ms
        .iter()
        .map(|&d| {
            let mut s = wheel.sleep(ms(d));
            assert!(poll_with(&mut s, waker).is_pending());
            s
        })
        .collect()
}

/// The driver fires a timer whose waker drops other timers of the same
/// wheel (same tick, same slot a revolution later, other ticks): no
/// deadlock, no panic, the dropped ones are cancelled.
#[test]
fn a_waker_dropping_timers_of_its_wheel_when_fired() {
    guarded_paused(30, || async {
        // 8 slots of 10 ms: 40 ms and 120 ms share a slot.
        let wheel = one_shard_wheel(10, 8);
        let (others_woken, other) = CountingWaker::new();
        let (killer, kw) = DropOnWake::new();
        // Same tick before and after the killer in the slot's list.
        let mut victims = registered(&wheel, &[40, 35], &other);
        let mut k = wheel.sleep(ms(40));
        assert!(poll_with(&mut k, &kw).is_pending());
        victims.extend(registered(&wheel, &[38, 120, 121, 200, 75], &other));
        assert_eq!(wheel.pending(), 8);
        killer.hold(victims);
        drop(kw);

        tokio::time::advance(ms(40)).await;
        yield_until("the killer is woken", || killer.wakes() == 1).await;
        assert!(killer.victims.lock().unwrap().is_empty());
        assert_eq!(wheel.pending(), 0, "the later victims were cancelled");
        let stats = wheel.stats();
        assert_eq!(stats.fired, 4, "{stats:?}");
        assert_eq!(stats.cancelled, 4, "{stats:?}");
        // The same-tick victims had fired with the killer: all woken.
        assert_eq!(others_woken.count(), 3);
        assert!(poll_with(&mut k, Waker::noop()).is_ready());

        // The wheel still works.
        let start = Instant::now();
        tokio::time::timeout(ms(100), wheel.sleep(ms(25)))
            .await
            .expect("fires after the drop-from-wake");
        assert_eq!(Instant::now(), start + ms(30));
    });
}

/// `reset` to a passed tick fires at once and wakes inside `reset`; the
/// waker drops other timers of the wheel there.
#[test]
fn a_waker_dropping_timers_when_woken_by_reset() {
    guarded_paused(30, || async {
        let wheel = one_shard_wheel(10, 4);
        let (_, other) = CountingWaker::new();
        let (killer, kw) = DropOnWake::new();
        let mut k = wheel.sleep(ms(500));
        assert!(poll_with(&mut k, &kw).is_pending());
        // Move the wheel on to 30 ms with a timer there.
        let mut step = wheel.sleep(ms(30));
        assert!(poll_with(&mut step, &other).is_pending());
        killer.hold(registered(&wheel, &[70, 80, 500, 501], &other));
        drop(kw);
        tokio::time::advance(ms(30)).await;
        yield_until("the wheel reaches 30 ms", || wheel.pending() == 5).await;
        assert_eq!(killer.wakes(), 0);

        k.reset(Instant::now() - ms(15));
        assert_eq!(killer.wakes(), 1, "woken inside reset");
        assert_eq!(wheel.pending(), 0);
        assert!(poll_with(&mut k, Waker::noop()).is_ready());
        drop(step);
    });
}

/// The last reference to a waker that owns timers of the same wheel is
/// dropped by the wheel: when its sleep is dropped, when a poll replaces the
/// waker, and when the driver wakes it (consuming it).
#[test]
fn dropping_a_waker_that_owns_timers_of_its_wheel() {
    guarded_paused(30, || async {
        let wheel = one_shard_wheel(10, 8);
        let (_, other) = CountingWaker::new();
        let owner = |timers: Vec<Sleep>| {
            let o = Arc::new(OwnsTimers {
                _timers: Mutex::new(timers),
            });
            (Arc::downgrade(&o), Waker::from(o))
        };

        // 1. Dropping the sleep drops the waker.
        let (gone, w) = owner(registered(&wheel, &[20, 30, 100], &other));
        let mut s = wheel.sleep(ms(50));
        assert!(poll_with(&mut s, &w).is_pending());
        drop(w);
        assert_eq!(wheel.pending(), 4);
        drop(s);
        assert_eq!(gone.strong_count(), 0);
        assert_eq!(wheel.pending(), 0);

        // 2. A poll with another waker replaces (drops) it.
        let (gone, w) = owner(registered(&wheel, &[20, 30, 100], &other));
        let mut s = wheel.sleep(ms(50));
        assert!(poll_with(&mut s, &w).is_pending());
        drop(w);
        assert!(poll_with(&mut s, &other).is_pending());
        assert_eq!(gone.strong_count(), 0);
        assert_eq!(wheel.pending(), 1);

        // 3. The driver fires it: woken by value, then dropped.
        let (gone, w) = owner(registered(&wheel, &[20, 30, 100], &other));
        let mut t = wheel.sleep(ms(10));
        assert!(poll_with(&mut t, &w).is_pending());
        drop(w);
        tokio::time::advance(ms(10)).await;
        yield_until("the owner is dropped", || gone.strong_count() == 0).await;
        assert_eq!(wheel.pending(), 1, "only `s` is left");
        assert!(poll_with(&mut t, Waker::noop()).is_ready());
        drop(s);
        assert_eq!(wheel.pending(), 0);
    });
}

/// The driver's runtime shuts down; its hand-over wakes a waker that drops
/// timers of the same wheel.
#[test]
fn a_waker_dropping_timers_when_the_driver_is_dropped() {
    guarded(30, || {
        let wheel = one_shard_wheel(10, 8);
        let rt = current_thread();
        let (killer, kw) = DropOnWake::new();
        let (_, other) = CountingWaker::new();
        let mut k = made_on(&rt, || wheel.sleep(Duration::from_secs(60)));
        rt.block_on(async {
            assert!(poll_with(&mut k, &kw).is_pending());
            killer.hold(registered(&wheel, &[100, 200, 60_000], &other));
        });
        drop(kw);
        assert_eq!(wheel.pending(), 4);
        drop(rt);
        assert_eq!(killer.wakes(), 1);
        assert_eq!(wheel.pending(), 1, "the victims were dropped, `k` remains");
        drop(k);
        assert_eq!(wheel.pending(), 0);
    });
}

// ---------------------------------------------------------------------------
// (d) Runtimes and executors mixed

/// Completes `s` with `futures::executor::block_on` on a thread outside any
/// runtime, and returns when it did; fails if that takes over 10 s.
fn block_on_elsewhere(s: Sleep) -> (Sleep, Instant) {
    within(10, "futures::executor::block_on(sleep)", move || {
        let mut s = s;
        futures::executor::block_on(&mut s);
        (s, Instant::now())
    })
}

/// A wheel bound with `Builder::runtime`: its timers, made anywhere, complete
/// when awaited on another runtime or on a non-Tokio executor.
#[test]
fn bound_wheel_works_from_other_runtimes_and_executors() {
    guarded(60, || {
        let main = multi_thread(1);
        let wheel = Wheel::builder()
            .tick(ms(5))
            .runtime(main.handle().clone())
            .build()
            .unwrap();
        let other = current_thread();

        // Made on `other`, awaited on `other`.
        let s = made_on(&other, || wheel.sleep(ms(30)));
        let deadline = s.deadline();
        let done = complete_on(&other, "awaited on another runtime", s);
        assert!(done >= deadline);

        // Made outside any runtime, awaited by futures' executor.
        let s = wheel.sleep(ms(30));
        let deadline = s.deadline();
        let (s, done) = block_on_elsewhere(s);
        assert!(done >= deadline, "early by {:?}", deadline - done);
        assert!(s.is_elapsed());

        // Made on `other`, registered there, completed by futures' executor.
        let mut s = made_on(&other, || wheel.sleep(ms(40)));
        other.block_on(async {
            assert!(poll_with(&mut s, Waker::noop()).is_pending());
        });
        let deadline = s.deadline();
        let (_, done) = block_on_elsewhere(s);
        assert!(done >= deadline);
        assert_eq!(wheel.pending(), 0);
        drop(other);
        drop(main);
    });
}

/// An unbound wheel whose driver is idle cannot be driven from outside a
/// runtime: polling panics with the documented message and unregisters.
#[test]
fn unbound_idle_wheel_polled_outside_a_runtime_panics() {
    guarded(60, || {
        let wheel = Wheel::builder().tick(ms(5)).build().unwrap();
        let mut s = wheel.sleep(ms(30));
        let msg = expect_panic("block_on of an unbound wheel's sleep", || {
            futures::executor::block_on(&mut s)
        });
        says_no_runtime(&msg);
        assert_eq!(wheel.pending(), 0);

        // Made on a runtime, polled outside one: the same.
        let rt = current_thread();
        let mut s = made_on(&rt, || wheel.sleep(ms(30)));
        let msg = expect_panic("poll outside a runtime", || {
            poll_with(&mut s, Waker::noop())
        });
        says_no_runtime(&msg);
        assert_eq!(wheel.pending(), 0);

        // Back on a runtime, the same sleep works.
        let deadline = s.deadline();
        let done = complete_on(&rt, "awaited back on a runtime", &mut s);
        assert!(done >= deadline);
        assert_eq!(wheel.stats().driver_starts, 1);
    });
}

/// An unbound wheel whose driver runs (on a runtime kept busy by a long
/// timer): its timers complete from a non-Tokio executor and from another
/// runtime, without starting a second driver.
#[test]
fn unbound_running_wheel_works_from_other_runtimes_and_executors() {
    guarded(60, || {
        let main = multi_thread(1);
        let wheel = Wheel::builder().tick(ms(5)).build().unwrap();
        let w = wheel.clone();
        let long = main.spawn(async move { w.sleep(Duration::from_secs(3600)).await });
        main.block_on(wait_until_pending(&wheel, 1, "the long timer"));
        assert_eq!(wheel.stats().driver_starts, 1);

        for d in [1, 20, 45] {
            let s = wheel.sleep(ms(d));
            let deadline = s.deadline();
            let (s, done) = block_on_elsewhere(s);
            assert!(done >= deadline, "{d} ms: early by {:?}", deadline - done);
            assert!(s.is_elapsed());
        }
        let other = current_thread();
        let s = wheel.sleep(ms(30));
        let deadline = s.deadline();
        let done = complete_on(&other, "awaited on another runtime", s);
        assert!(done >= deadline);
        assert_eq!(wheel.stats().driver_starts, 1, "one driver served them all");
        assert_eq!(wheel.pending(), 1);
        long.abort();
        drop(other);
        drop_runtime_within(20, main);
        assert_eq!(wheel.pending(), 0);
    });
}

/// An unbound idle wheel's sleep made on one runtime and awaited on another
/// starts its driver there.
#[test]
fn unbound_sleep_made_on_one_runtime_completes_on_another() {
    guarded(60, || {
        let wheel = Wheel::builder().tick(ms(5)).build().unwrap();
        let a = current_thread();
        let b = current_thread();
        let s = made_on(&a, || wheel.sleep(ms(30)));
        let deadline = s.deadline();
        let done = complete_on(&b, "awaited on the other runtime", s);
        assert!(done >= deadline);
        assert_eq!(wheel.stats().driver_starts, 1);
        drop((a, b));
    });
}
