//! The free functions, on a default wheel per Tokio runtime.
//!
//! Each runtime gets its own default wheel, found by the runtime's id: a
//! thread-local cache answers on the hot path, a global registry (of weak
//! handles, so wheels of dropped runtimes are freed) on a thread's first use.
//! One wheel per runtime, not one per process, because runtimes can have
//! different clocks (paused time in tests) and a driver must run on a runtime
//! that is being driven.

use std::cell::RefCell;
use std::future::IntoFuture;
use std::sync::Mutex;
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::Instant;

use crate::handle::WeakWheel;
use crate::{Sleep, Timeout, Wheel};

thread_local! {
    static CURRENT: RefCell<Option<(Id, Wheel)>> = const { RefCell::new(None) };
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
    drop(handle);
    let mut f = Some(f);
    // The hot path borrows the cached wheel: no reference count is touched
    // but the shard's that the new timer keeps.
    let cached = CURRENT.try_with(|cell| {
        if let Some((cached, wheel)) = &*cell.borrow() {
            if *cached == id {
                return Some((f.take().expect("called once"))(wheel));
            }
        }
        let wheel = registered(id);
        // Replacing drops the previous runtime's wheel (if this was its last
        // handle); that drop does not come back here.
        let old = cell.borrow_mut().replace((id, wheel));
        drop(old);
        None
    });
    match cached {
        Ok(Some(r)) => r,
        // Cached just now, or thread-locals being torn down.
        _ => match CURRENT.try_with(|cell| cell.borrow().as_ref().map(|(_, w)| w.clone())) {
            Ok(Some(wheel)) => (f.take().expect("called once"))(&wheel),
            _ => (f.take().expect("called once"))(&registered(id)),
        },
    }
}

/// The registered default wheel of runtime `id`, made if there is none.
fn registered(id: Id) -> Wheel {
    let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(wheel) = registry
        .iter()
        .find(|(rid, _)| *rid == id)
        .and_then(|(_, weak)| weak.upgrade())
    {
        return wheel;
    }
    registry.retain(|(_, weak)| weak.is_alive());
    let wheel = Wheel::new();
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
    with_current(|w| w.timeout_at(deadline, future))
}
