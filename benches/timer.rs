//! Micro-benchmarks of a single timer's life, tokio-wheel against
//! `tokio::time`, in the same run: `cargo bench --bench timer`.
//!
//! Each iteration runs on the calling thread inside a current-thread runtime's
//! context; the timer is polled with a no-op waker, as an executor would on a
//! future that is not ready.

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use futures::task::noop_waker_ref;

const FIVE_SECONDS: Duration = Duration::from_secs(5);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Tokio's time driver plans its next wake-up only when its runtime parks,
/// and until it has, it writes to its eventfd (a syscall) for every timer
/// registered. These loops never let the runtime park, so it is parked once
/// here with a timer pending, as a running server's runtime parks every few
/// dozen polls. Keep the returned timer alive while measuring.
fn plan_wakeup(rt: &tokio::runtime::Runtime) -> Pin<Box<tokio::time::Sleep>> {
    let mut planned = {
        let _enter = rt.enter();
        Box::pin(tokio::time::sleep(Duration::from_millis(10)))
    };
    rt.block_on(async {
        std::future::poll_fn(|cx| {
            assert!(planned.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        tokio::task::yield_now().await;
    });
    planned
}

fn poll_once<F: Future>(f: F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(noop_waker_ref());
    pin!(f).poll(&mut cx)
}

/// Create, poll once (registers), drop (cancels): a request timeout that the
/// response beat.
fn register_then_cancel(c: &mut Criterion) {
    let rt = runtime();
    let _planned = plan_wakeup(&rt);
    let _enter = rt.enter();
    let wheel = tokio_wheel::Wheel::new();
    let mut g = c.benchmark_group("register_then_cancel");
    g.bench_function("tokio::time", |b| {
        b.iter(|| black_box(poll_once(tokio::time::sleep(FIVE_SECONDS))))
    });
    g.bench_function("tokio-wheel", |b| {
        b.iter(|| black_box(poll_once(wheel.sleep(FIVE_SECONDS))))
    });
    g.bench_function("tokio-wheel free fn", |b| {
        b.iter(|| black_box(poll_once(tokio_wheel::sleep(FIVE_SECONDS))))
    });
    g.finish();
}

/// A timeout around a future that is ready at once: neither side should
/// register anything.
fn timeout_ready(c: &mut Criterion) {
    let rt = runtime();
    let _planned = plan_wakeup(&rt);
    let _enter = rt.enter();
    let wheel = tokio_wheel::Wheel::new();
    let mut g = c.benchmark_group("timeout_ready");
    g.bench_function("tokio::time", |b| {
        b.iter(|| black_box(poll_once(tokio::time::timeout(FIVE_SECONDS, async { 1 }))))
    });
    g.bench_function("tokio-wheel", |b| {
        b.iter(|| black_box(poll_once(wheel.timeout(FIVE_SECONDS, async { 1 }))))
    });
    g.finish();
}

/// Dropping 10k registered timers at once (a burst of connections closing).
fn cancel_10k(c: &mut Criterion) {
    let rt = runtime();
    let _planned = plan_wakeup(&rt);
    let _enter = rt.enter();
    let wheel = tokio_wheel::Wheel::new();
    let mut cx = Context::from_waker(noop_waker_ref());
    let mut g = c.benchmark_group("drop_10k_registered");
    g.bench_function("tokio::time", |b| {
        b.iter_batched(
            || {
                let mut v: Vec<_> = (0..10_000)
                    .map(|_| Box::pin(tokio::time::sleep(FIVE_SECONDS)))
                    .collect();
                for s in &mut v {
                    let _ = s.as_mut().poll(&mut cx);
                }
                v
            },
            drop,
            BatchSize::LargeInput,
        )
    });
    g.bench_function("tokio-wheel", |b| {
        b.iter_batched(
            || {
                let mut v: Vec<_> = (0..10_000).map(|_| wheel.sleep(FIVE_SECONDS)).collect();
                for s in &mut v {
                    let _ = std::pin::Pin::new(s).poll(&mut cx);
                }
                v
            },
            drop,
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, register_then_cancel, timeout_ready, cancel_10k);
criterion_main!(benches);
