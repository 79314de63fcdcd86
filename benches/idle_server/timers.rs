//! The three kinds of timers behind one trait.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

/// What the connection loop needs of a timer implementation.
pub trait Timers: 'static {
    /// The idle timeout.
    type Idle: Future<Output = ()> + Send;
    /// The heartbeat schedule.
    type Heartbeat: Send;

    fn idle(after: Duration) -> Self::Idle;
    fn reset_idle(idle: Pin<&mut Self::Idle>, at: Instant);
    /// Runs `f` under a time limit: `None` if it ran out.
    fn timeout<F: Future + Send>(
        limit: Duration,
        f: F,
    ) -> impl Future<Output = Option<F::Output>> + Send;
    fn heartbeat(first: Instant, period: Duration, frames_per_beat: u32) -> Self::Heartbeat;
    /// Completes when a heartbeat is due by the clock.
    fn tick(hb: &mut Self::Heartbeat) -> impl Future<Output = ()> + Send + '_;
    /// Whether a heartbeat is due after one more received frame.
    fn beat_on_frame(_hb: &mut Self::Heartbeat) -> bool {
        false
    }
    /// The runtime's wheel, for its counters.
    fn wheel() -> Option<tokio_wheel::Wheel> {
        None
    }
}

pub struct TokioTime;

impl Timers for TokioTime {
    type Idle = tokio::time::Sleep;
    type Heartbeat = tokio::time::Interval;

    fn idle(after: Duration) -> Self::Idle {
        tokio::time::sleep(after)
    }
    fn reset_idle(idle: Pin<&mut Self::Idle>, at: Instant) {
        idle.reset(at);
    }
    async fn timeout<F: Future + Send>(limit: Duration, f: F) -> Option<F::Output> {
        tokio::time::timeout(limit, f).await.ok()
    }
    fn heartbeat(first: Instant, period: Duration, _: u32) -> Self::Heartbeat {
        let mut hb = tokio::time::interval_at(first, period);
        hb.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        hb
    }
    async fn tick(hb: &mut Self::Heartbeat) {
        hb.tick().await;
    }
}

pub struct WheelTime;

impl Timers for WheelTime {
    type Idle = tokio_wheel::Sleep;
    type Heartbeat = tokio_wheel::Interval;

    fn idle(after: Duration) -> Self::Idle {
        tokio_wheel::sleep(after)
    }
    fn reset_idle(idle: Pin<&mut Self::Idle>, at: Instant) {
        idle.get_mut().reset(at);
    }
    async fn timeout<F: Future + Send>(limit: Duration, f: F) -> Option<F::Output> {
        tokio_wheel::timeout(limit, f).await.ok()
    }
    fn heartbeat(first: Instant, period: Duration, _: u32) -> Self::Heartbeat {
        let mut hb = tokio_wheel::interval_at(first, period);
        hb.set_missed_tick_behavior(tokio_wheel::MissedTickBehavior::Delay);
        hb
    }
    async fn tick(hb: &mut Self::Heartbeat) {
        hb.tick().await;
    }
    fn wheel() -> Option<tokio_wheel::Wheel> {
        Some(tokio_wheel::Wheel::current())
    }
}

pub struct NoTime;

/// Frames received since the last heartbeat, and how many make one.
pub struct FrameCount {
    pub seen: u32,
    pub every: u32,
}

impl Timers for NoTime {
    type Idle = std::future::Pending<()>;
    type Heartbeat = FrameCount;

    fn idle(_: Duration) -> Self::Idle {
        std::future::pending()
    }
    fn reset_idle(_: Pin<&mut Self::Idle>, _: Instant) {}
    async fn timeout<F: Future + Send>(_: Duration, f: F) -> Option<F::Output> {
        Some(f.await)
    }
    fn heartbeat(_: Instant, _: Duration, frames_per_beat: u32) -> Self::Heartbeat {
        FrameCount {
            seen: 0,
            every: frames_per_beat,
        }
    }
    async fn tick(_: &mut Self::Heartbeat) {
        std::future::pending::<()>().await;
    }
    fn beat_on_frame(hb: &mut Self::Heartbeat) -> bool {
        hb.seen += 1;
        if hb.seen < hb.every {
            return false;
        }
        hb.seen = 0;
        true
    }
}
