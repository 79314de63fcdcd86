//! Micro-benchmarks of a single timer's life, tokio-wheel against
//! `tokio::time`, in the same run: `cargo bench -p benches --bench timer`.
//!
//! Each iteration runs on the calling thread inside a current-thread runtime's
//! context; the timer is polled with a no-op waker, as an executor would on a
//! future that is not ready.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use futures::task::noop_waker_ref;

// This bench uses only the runtime helpers; the rest of the module serves
// `benches/workloads.rs` and `benches/compare/`.

use support::{current_thread_runtime, plan_wakeup};

const FIVE_SECONDS: Duration = Duration::from_secs(5);

fn poll_once<F: Future>(f: F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(noop_waker_ref());
    pin!(f).poll(&mut cx)
}

/// Create, poll once (registers), drop (cancels): a request timeout that the
/// response beat.
fn register_then_cancel(c: &mut Criterion) {
    let rt = current_thread_runtime();
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
    let rt = current_thread_runtime();
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
    let rt = current_thread_runtime();
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
