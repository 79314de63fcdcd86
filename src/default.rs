//! The free functions, on a default wheel per Tokio runtime.
//!
//! Each runtime gets its own default wheel, found by the runtime's id, and
//! bound to that runtime (its driver always runs there). One wheel per
//! runtime, not one per process, because runtimes can have different clocks
//! (paused time in tests) and a driver must run on a runtime that is driven.
//!
//! Lookup: `Handle::try_current` (which clones the runtime handle's `Arc`, as
//! `tokio::time::sleep` does), then a small thread-local cache of the last few
//! runtimes this thread used, then, on a miss, a global registry of weak
//! handles, so the wheels of dropped runtimes are freed. A thread that goes
//! back and forth between a few runtimes keeps each one's wheel cached, so a
//! runtime's timers all land in the same wheel.

use std::cell::RefCell;
use std::future::IntoFuture;
use std::sync::Mutex;
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::Instant;

use crate::handle::WeakWheel;
use crate::{Sleep, Timeout, Wheel};

/// How many runtimes' wheels a thread keeps cached.
const CACHED_RUNTIMES: usize = 4;

thread_local! {
    /// Most recently used first.
    static CACHE: RefCell<Vec<(Id, Wheel)>> = const { RefCell::new(Vec::new()) };
}

static REGISTRY: Mutex<Vec<(Id, WeakWheel)>> = Mutex::new(Vec::new());

/// Calls `f` with the current runtime's default wheel.
#[track_caller]
pub(crate) fn with_current<R>(f: impl FnOnce(&Wheel) -> R) -> R {
    let handle = match Handle::try_current() {
        Ok(handle) => handle,
        Err(_) => panic!(
            "tokio-wheel: there is no Tokio runtime here; the free functions use the current \
             runtime's default wheel and must be called from the context of a Tokio 1.x runtime \
             (or use a `Wheel` handle)"
        ),
    };
    let id = handle.id();
    let mut f = Some(f);
    let hit = CACHE.try_with(|cache| {
        let cache = cache.borrow();
        let (_, wheel) = cache.first().filter(|(cached, _)| *cached == id)?;
        // `f` only makes a timer: it does not come back here.
        Some((f.take().expect("called once"))(wheel))
    });
    if let Ok(Some(r)) = hit {
        return r;
    }
    let wheel = CACHE
        .try_with(|cache| {
            let mut cache = cache.borrow_mut();
            let wheel = match cache.iter().position(|(cached, _)| *cached == id) {
                Some(i) => cache.remove(i).1,
                None => registered(id, &handle),
            };
            cache.insert(0, (id, wheel.clone()));
            let keep = cache.len().min(CACHED_RUNTIMES);
            let evicted = cache.split_off(keep);
            drop(cache);
            drop(evicted);
            wheel
        })
        // Thread-locals being torn down: go to the registry.
        .unwrap_or_else(|_| registered(id, &handle));
    (f.take().expect("called once"))(&wheel)
}

/// The registered default wheel of runtime `id`, made if there is none.
fn registered(id: Id, handle: &Handle) -> Wheel {
    let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(wheel) = registry
        .iter()
        .find(|(rid, _)| *rid == id)
        .and_then(|(_, weak)| weak.upgrade())
    {
        return wheel;
    }
    registry.retain(|(_, weak)| weak.is_alive());
    let wheel = Wheel::builder()
        .runtime(handle.clone())
        .build()
        .expect("the default settings are valid");
    registry.push((id, wheel.downgrade()));
    wheel
}

/// Waits until `duration` has elapsed, on the current runtime's default
/// wheel: a drop-in for [`tokio::time::sleep`] at the wheel's 10 ms
/// resolution.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// tokio_wheel::sleep(Duration::from_millis(100)).await;
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime.
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    with_current(|w| w.sleep(duration))
}

/// Waits until `deadline`, on the current runtime's default wheel: a drop-in
/// for [`tokio::time::sleep_until`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// tokio_wheel::sleep_until(Instant::now() + Duration::from_millis(100)).await;
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime.
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    with_current(|w| w.sleep_until(deadline))
}

/// Requires `future` to complete within `duration`, on the current runtime's
/// default wheel: a drop-in for [`tokio::time::timeout`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let res = tokio_wheel::timeout(Duration::from_millis(10), std::future::pending::<()>()).await;
/// assert!(res.is_err());
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime.
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    // Outside the lookup: `into_future` is the caller's code.
    let future = future.into_future();
    with_current(|w| w.timeout(duration, future))
}

/// Requires `future` to complete before `deadline`, on the current runtime's
/// default wheel: a drop-in for [`tokio::time::timeout_at`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// let at = Instant::now() + Duration::from_millis(10);
/// assert_eq!(tokio_wheel::timeout_at(at, async { 3 }).await, Ok(3));
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime.
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    let future = future.into_future();
    with_current(|w| w.timeout_at(deadline, future))
}

/// An [`Interval`](crate::Interval) on the current runtime's default wheel
/// that ticks now and then every `period`: a drop-in for
/// [`tokio::time::interval`] at the wheel's 10 ms resolution.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
///
/// let mut heartbeat = tokio_wheel::interval(Duration::from_secs(1));
/// for _ in 0..3 {
///     heartbeat.tick().await;
/// }
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime, or if `period` is zero.
#[track_caller]
pub fn interval(period: Duration) -> crate::Interval {
    with_current(|w| w.interval(period))
}

/// An [`Interval`](crate::Interval) on the current runtime's default wheel
/// whose first tick is at `start`: a drop-in for
/// [`tokio::time::interval_at`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// let start = Instant::now() + Duration::from_millis(500);
/// let mut interval = tokio_wheel::interval_at(start, Duration::from_secs(1));
/// assert_eq!(interval.tick().await, start);
/// # }
/// ```
///
/// # Panics
///
/// Outside a Tokio runtime, or if `period` is zero.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> crate::Interval {
    with_current(|w| w.interval_at(start, period))
}
