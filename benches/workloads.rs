//! Micro-benchmarks behind `benches/compare/`: the per-timer operations of
//! its workloads, tokio-wheel against `tokio::time` and tokio-util's
//! `DelayQueue`, in one run: `cargo bench -p benches --bench workloads`.
//!
//! Everything runs on the bench thread inside a current-thread runtime's
//! context. Timers are polled with a waker whose clone and drop are a
//! reference count, as a task's are.
//!
//! Tokio's time driver plans its next wake-up only when its runtime parks,
//! and until then it writes to its eventfd (a syscall) for every timer
//! registered: a loop that registers without ever letting the runtime park
//! would measure that syscall. So every runtime here first parks once with a
//! timer pending ([`Rt::new`]), as a server's runtime does every few dozen
//! polls; the `tokio, no wake-up planned` case shows the cost without it.

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use tokio::time::Instant;
use tokio_util::time::DelayQueue;
use tokio_wheel::Wheel;

use support::{
    current_thread_runtime, plan_wakeup, spread_deadlines, Keep, PinnedVec, Rng, YieldOnce,
};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A waker that does nothing when woken, but is reference counted.
struct CountedNoop;

impl Wake for CountedNoop {
    fn wake(self: Arc<Self>) {}
}

/// A current-thread runtime, entered, whose time driver has planned a
/// wake-up; the planned timer is kept pending until the runtime is dropped.
struct Rt {
    _planned: Pin<Box<tokio::time::Sleep>>,
    _enter: tokio::runtime::EnterGuard<'static>,
    waker: Waker,
}

impl Rt {
    fn new() -> Rt {
        // Leaked: one small runtime per benchmark group, for the whole run.
        let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(current_thread_runtime()));
        Rt {
            _planned: plan_wakeup(rt),
            _enter: rt.enter(),
            waker: Waker::from(Arc::new(CountedNoop)),
        }
    }

    fn cx(&self) -> Context<'_> {
        Context::from_waker(&self.waker)
    }
}

/// Polls `f` to completion, asserting it takes exactly two polls.
fn twice<F: Future>(f: F, cx: &mut Context<'_>) -> F::Output {
    let mut f = pin!(f);
    assert!(f.as_mut().poll(cx).is_pending());
    match f.poll(cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("pending on the second poll"),
    }
}

fn quick<M: criterion::measurement::Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    g.sample_size(30);
}

/// Workload 1: `timeout(5 s, f)` where `f` is pending once, then ready: the
/// timer is registered by the first poll and cancelled by the drop.
fn timeout_register_cancel(c: &mut Criterion) {
    let rt = Rt::new();
    let wheel = Wheel::new();
    let mut g = c.benchmark_group("timeout_register_cancel");
    quick(&mut g);
    let mut cx = rt.cx();
    g.bench_function("no timeout", |b| {
        b.iter(|| twice(black_box(YieldOnce::default()), &mut cx))
    });
    g.bench_function("tokio::time::timeout", |b| {
        b.iter(|| {
            let f = tokio::time::timeout(black_box(REQUEST_TIMEOUT), YieldOnce::default());
            twice(f, &mut cx).unwrap()
        })
    });
    g.bench_function("Wheel::timeout", |b| {
        b.iter(|| {
            let f = wheel.timeout(black_box(REQUEST_TIMEOUT), YieldOnce::default());
            twice(f, &mut cx).unwrap()
        })
    });
    g.bench_function("tokio_wheel::timeout", |b| {
        b.iter(|| {
            let f = tokio_wheel::timeout(black_box(REQUEST_TIMEOUT), YieldOnce::default());
            twice(f, &mut cx).unwrap()
        })
    });
    g.finish();

    // The same without a planned wake-up: tokio writes to its eventfd each time.
    let unplanned = current_thread_runtime();
    let _enter = unplanned.enter();
    let mut g = c.benchmark_group("timeout_register_cancel");
    quick(&mut g);
    g.bench_function("tokio::time::timeout, no wake-up planned", |b| {
        b.iter(|| {
            let f = tokio::time::timeout(black_box(REQUEST_TIMEOUT), YieldOnce::default());
            twice(f, &mut cx).unwrap()
        })
    });
    g.finish();
}

/// Runs `iters` operations in batches of at most `deadlines.len()`: `batch`
/// is handed each batch's deadlines and returns the time that counts.
fn batched(
    iters: u64,
    deadlines: &[Duration],
    mut batch: impl FnMut(&[Duration]) -> Duration,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let n = left.min(deadlines.len());
        total += batch(&deadlines[..n]);
        left -= n;
    }
    total
}

/// Registers (creates with `sleep` and polls once) a timer per deadline into
/// an empty vector, then drops them all: the time of each of the two steps.
fn register_then_drop<T: Keep + Future<Output = ()>>(
    deadlines: &[Duration],
    cx: &mut Context<'_>,
    mut sleep: impl FnMut(Duration) -> T,
) -> (Duration, Duration) {
    let mut timers = PinnedVec::with_capacity(deadlines.len());
    let start = std::time::Instant::now();
    for &d in deadlines {
        assert!(timers.push(sleep(d)).poll(cx).is_pending());
    }
    let registering = start.elapsed();
    let start = std::time::Instant::now();
    drop(timers);
    (registering, start.elapsed())
}

/// Benches `tokio::time::sleep` and `Wheel::sleep` in `g`: batches of
/// [`register_then_drop`], counting the step that `counted` picks.
fn sleep_benches(
    g: &mut BenchmarkGroup<'_, WallTime>,
    rt: &Rt,
    deadlines: &[Duration],
    counted: fn((Duration, Duration)) -> Duration,
) {
    g.bench_function("tokio::time::sleep", |b| {
        b.iter_custom(|iters| {
            let mut cx = rt.cx();
            batched(iters, deadlines, |batch| {
                counted(register_then_drop(batch, &mut cx, tokio::time::sleep))
            })
        })
    });
    g.bench_function("Wheel::sleep", |b| {
        b.iter_custom(|iters| {
            let wheel = Wheel::new();
            let mut cx = rt.cx();
            batched(iters, deadlines, |batch| {
                counted(register_then_drop(batch, &mut cx, |d| wheel.sleep(d)))
            })
        })
    });
}

/// Workload 2: registering (create + first poll) timers spread over 1 to
/// 60 s, into a timer holding up to 100k; and dropping registered timers.
fn pending(c: &mut Criterion) {
    const BATCH: usize = 100_000;
    let rt = Rt::new();
    let deadlines = spread_deadlines(BATCH, 2);
    let mut g = c.benchmark_group("register_pending");
    quick(&mut g);
    // Each batch starts empty and grows to `BATCH`; only the registering
    // counts, the dropping happens between batches.
    sleep_benches(&mut g, &rt, &deadlines, |(registering, _)| registering);
    g.bench_function("DelayQueue::insert", |b| {
        b.iter_custom(|iters| {
            batched(iters, &deadlines, |batch| {
                let mut queue = DelayQueue::new();
                let mut keys = Vec::with_capacity(batch.len());
                let start = std::time::Instant::now();
                for &d in batch {
                    keys.push(queue.insert((), d));
                }
                let elapsed = start.elapsed();
                drop(queue);
                elapsed
            })
        })
    });
    g.finish();

    let mut g = c.benchmark_group("cancel_pending");
    quick(&mut g);
    sleep_benches(&mut g, &rt, &deadlines, |(_, dropping)| dropping);
    g.bench_function("DelayQueue::remove", |b| {
        b.iter_custom(|iters| {
            batched(iters, &deadlines, |batch| {
                let mut queue = DelayQueue::new();
                let keys: Vec<_> = batch.iter().map(|&d| queue.insert((), d)).collect();
                let start = std::time::Instant::now();
                for key in &keys {
                    queue.remove(key);
                }
                start.elapsed()
            })
        })
    });
    g.finish();
}

/// Workload 4: an idle timeout pushed back to now + 30 s on every packet,
/// over 100k connections (random order), alone and followed by a poll.
fn reset(c: &mut Criterion) {
    const CONNS: usize = 100_000;
    let rt = Rt::new();
    let wheel = Wheel::new();
    let mut cx = rt.cx();
    let mut rng = Rng::new(4);
    let order: Vec<usize> = (0..1 << 16)
        .map(|_| rng.below(CONNS as u64) as usize)
        .collect();
    let mut tokio_timers = PinnedVec::with_capacity(CONNS);
    let mut wheel_timers = PinnedVec::with_capacity(CONNS);
    let mut queue = DelayQueue::with_capacity(CONNS);
    let mut keys = Vec::with_capacity(CONNS);
    for c in 0..CONNS {
        assert!(tokio_timers
            .push(tokio::time::sleep(IDLE_TIMEOUT))
            .poll(&mut cx)
            .is_pending());
        assert!(wheel_timers
            .push(wheel.sleep(IDLE_TIMEOUT))
            .poll(&mut cx)
            .is_pending());
        keys.push(queue.insert(c, IDLE_TIMEOUT));
    }
    let mut g = c.benchmark_group("reset");
    quick(&mut g);
    let mut i = 0;
    let mut next = move || {
        i = (i + 1) & ((1 << 16) - 1);
        order[i]
    };
    g.bench_function("tokio::time::Sleep::reset", |b| {
        b.iter(|| {
            tokio_timers
                .get(next())
                .reset(Instant::now() + IDLE_TIMEOUT)
        })
    });
    g.bench_function("tokio_wheel::Sleep::reset", |b| {
        b.iter(|| {
            let mut s = wheel_timers.get(next());
            s.as_mut().get_mut().reset(Instant::now() + IDLE_TIMEOUT);
        })
    });
    g.bench_function("DelayQueue::reset_at", |b| {
        b.iter(|| queue.reset_at(&keys[next()], Instant::now() + IDLE_TIMEOUT))
    });
    g.bench_function("tokio::time::Sleep::reset + poll", |b| {
        b.iter(|| {
            let mut s = tokio_timers.get(next());
            s.as_mut().reset(Instant::now() + IDLE_TIMEOUT);
            assert!(s.poll(&mut cx).is_pending());
        })
    });
    g.bench_function("tokio_wheel::Sleep::reset + poll", |b| {
        b.iter(|| {
            let mut s = wheel_timers.get(next());
            s.as_mut().get_mut().reset(Instant::now() + IDLE_TIMEOUT);
            assert!(s.poll(&mut cx).is_pending());
        })
    });
    g.finish();
}

/// What the timers' hot paths are made of, on this machine.
fn primitives(c: &mut Criterion) {
    let _rt = Rt::new();
    let mut g = c.benchmark_group("primitives");
    quick(&mut g);
    let mutex = Mutex::new(0u64);
    let arc = Arc::new(0u64);
    let waker = Waker::from(Arc::new(CountedNoop));
    g.bench_function("tokio::time::Instant::now", |b| b.iter(Instant::now));
    g.bench_function("std::time::Instant::now", |b| {
        b.iter(std::time::Instant::now)
    });
    g.bench_function("Mutex lock + unlock", |b| {
        b.iter(|| *black_box(&mutex).lock().unwrap() += 1)
    });
    g.bench_function("Arc clone + drop", |b| {
        b.iter(|| Arc::clone(black_box(&arc)))
    });
    g.bench_function("Waker clone + drop", |b| {
        b.iter(|| black_box(&waker).clone())
    });
    g.bench_function("Handle::current + drop", |b| {
        b.iter(tokio::runtime::Handle::current)
    });
    g.finish();
}

criterion_group!(benches, timeout_register_cancel, pending, reset, primitives);
criterion_main!(benches);
