//! Running the code of other tasks' wakers, and of dropped callbacks, without
//! letting it unwind through the wheel.
//!
//! Waking or dropping a `Waker` runs the executor's (or a user's) code. The
//! crate does both for wakers of other tasks (the driver, shutdown, a reset,
//! a waker swap, the expiry queue's consumers); a panic there must not unwind
//! through the wheel, where it would kill the driver (stranding callbacks) or
//! cut a shutdown short (losing the callbacks it was handing back). Every
//! helper here catches it and reports it with `tracing::error!`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;

/// Wakes a waker of another task, catching and reporting a panic.
pub(crate) fn wake(waker: Waker) {
    caught("waking a task's waker", move || waker.wake());
}

/// Wakes and empties `wakers`, last first. A waker that panics is reported
/// and the rest are still woken.
pub(crate) fn wake_all(wakers: &mut Vec<Waker>) {
    while let Some(waker) = wakers.pop() {
        wake(waker);
    }
}

/// Drops a waker of another task, catching and reporting a panic.
pub(crate) fn drop_waker(waker: Waker) {
    drop_caught("dropping a task's waker", waker);
}

/// Drops `value` (whose drop may run user code: callbacks, wakers), catching
/// and reporting a panic; `what` names it in the report.
pub(crate) fn drop_caught<T>(what: &str, value: T) {
    caught(what, move || drop(value));
}

/// Runs `f` (user code: a wake, a drop), catching and reporting a panic;
/// `what` names it in the report.
fn caught(what: &str, f: impl FnOnce()) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(f)) {
        report_panic(what, &*panic);
    }
}

fn report_panic(what: &str, panic: &(dyn Any + Send)) {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string payload>");
    tracing::error!(
        panic = message,
        "tokio-wheel: a panic in {what} was caught; the wheel carries on"
    );
}
