//! Runtimes, wheels, timers kept pending and the polling context the
//! workloads share.

use std::task::{Context, Waker};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_wheel::Wheel;

use support::PinnedVec;

pub(crate) fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

pub(crate) fn multi_thread_runtime(workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("failed to build a multi-thread runtime")
}

pub(crate) fn build_wheel(tick: Duration) -> Wheel {
    Wheel::builder()
        .tick(tick)
        .build()
        .expect("the tick was checked when parsing the flags")
}

/// Times the workers of `rt` have parked (gone to sleep) so far.
pub(crate) fn worker_parks(rt: &Runtime) -> u64 {
    let m = rt.metrics();
    (0..m.num_workers()).map(|w| m.worker_park_count(w)).sum()
}

/// Timers of either kind, kept pending in place.
pub(crate) enum Timers {
    Tokio(PinnedVec<tokio::time::Sleep>),
    Wheel(PinnedVec<tokio_wheel::Sleep>),
}

impl Timers {
    /// Drops (cancels) them; call inside the runtime they were made on.
    pub(crate) fn drop_all(self) {
        match self {
            Timers::Tokio(v) => drop(v),
            Timers::Wheel(v) => drop(v),
        }
    }
}
