//! The driver's counters, how late it runs, the `Stats` snapshot, and the
//! process-wide count of live wheels.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::time::Duration;

use tokio::time::Instant;

use super::WheelCore;
use crate::Stats;

/// More live wheels than this in one process earns one warning: a wheel is
/// meant to be shared, and each has its own driver.
const MANY_WHEELS: usize = 64;
static LIVE_WHEELS: AtomicUsize = AtomicUsize::new(0);
static WARNED_MANY_WHEELS: AtomicBool = AtomicBool::new(false);

/// The driver warns when it runs a tick this many ticks late.
const LAG_WARN_TICKS: u32 = 4;
/// At most one lag warning per this long.
const LAG_WARN_EVERY: Duration = Duration::from_secs(1);

/// Counters kept by the driver (relaxed atomics: it is their only writer).
#[derive(Debug, Default)]
pub(super) struct Metrics {
    pub(super) wakeups: AtomicU64,
    pub(super) starts: AtomicU64,
    pub(super) ticks: AtomicU64,
    pub(super) ticks_skipped: AtomicU64,
    pub(super) max_batch: AtomicU64,
    last_lag_nanos: AtomicU64,
    max_lag_nanos: AtomicU64,
}

/// A wheel was made; warns once per process past [`MANY_WHEELS`].
pub(super) fn count_new_wheel() {
    let live = LIVE_WHEELS.fetch_add(1, Relaxed) + 1;
    if live > MANY_WHEELS && !WARNED_MANY_WHEELS.swap(true, Relaxed) {
        tracing::warn!(
            live,
            "tokio-wheel: more than {MANY_WHEELS} wheels are alive; a wheel is meant to be \
             shared (clone the `Wheel`), and each one runs its own driver"
        );
    }
}

/// A wheel was freed.
pub(super) fn count_dropped_wheel() {
    LIVE_WHEELS.fetch_sub(1, Relaxed);
}

impl WheelCore {
    /// Records how late the driver ran `tick`, warning (at most once a
    /// second, `last_warning` keeping when) when it is several ticks late:
    /// the runtime is overloaded.
    pub(super) fn note_lag(&self, tick: u64, now: Instant, last_warning: &mut Option<Instant>) {
        let Some(at) = self.clock.instant_of(tick) else {
            return;
        };
        let lag = now.saturating_duration_since(at);
        let nanos = u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX);
        self.metrics.last_lag_nanos.store(nanos, Relaxed);
        self.metrics.max_lag_nanos.fetch_max(nanos, Relaxed);
        if lag > self.tick * LAG_WARN_TICKS
            && last_warning.is_none_or(|w| now - w >= LAG_WARN_EVERY)
        {
            *last_warning = Some(now);
            tracing::warn!(
                ?lag,
                tick = ?self.tick,
                "tokio-wheel: the driver ran a tick late; the runtime may be overloaded"
            );
        }
    }

    /// A snapshot for [`Wheel::stats`](crate::Wheel::stats): the driver's
    /// counters, and those of every shard summed.
    pub(crate) fn stats(&self) -> Stats {
        let mut shards = Vec::new();
        self.shards(&mut shards);
        let m = &self.metrics;
        let mut stats = Stats {
            driver_wakeups: m.wakeups.load(Relaxed),
            driver_starts: m.starts.load(Relaxed),
            ticks: m.ticks.load(Relaxed),
            ticks_skipped: m.ticks_skipped.load(Relaxed),
            max_batch: m.max_batch.load(Relaxed),
            last_lag: Duration::from_nanos(m.last_lag_nanos.load(Relaxed)),
            max_lag: Duration::from_nanos(m.max_lag_nanos.load(Relaxed)),
            ..Stats::default()
        };
        for shard in &shards {
            let s = shard.lock();
            let c = s.counters();
            stats.pending += s.pending();
            stats.registered += c.registered;
            // A re-armed entry had fired before its timer was due (see
            // `Stats::rearmed`): that fire was not the timer's.
            stats.fired += c.fired - c.rearmed;
            stats.rearmed += c.rearmed;
            stats.cancelled += c.cancelled;
            stats.cascades += c.cascaded;
            stats.refiled += c.refiled;
        }
        stats
    }
}
