//! The synchronization primitives the driver's protocol is written with:
//! std's, or loom's when the crate is built for model checking with
//! `RUSTFLAGS="--cfg tokio_wheel_loom"` (see `src/driver/loom.rs`), and the
//! one way the crate takes a lock.

//!
//! Everything the protocol's correctness rests on is switched: the shards'
//! and the driver's locks and the atomics of the hand-off. `Arc` is not
//! (loom's has no `Weak`, which the core's list of shards needs, and a
//! reference count orders nothing the protocol relies on), nor are the
//! relaxed counters of metrics and the bound, nor locks that no model
//! reaches (the default-wheel registry, a `static`).

#[cfg(tokio_wheel_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(tokio_wheel_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(tokio_wheel_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(tokio_wheel_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

use std::sync::PoisonError;

/// A value on cache lines of its own (two: adjacent-line prefetch pairs
/// them), so that writes to what lies beside it do not take its line away
/// from the cores that read it, nor its writes theirs. See the layout of
/// `Shard` for why it matters.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Yields the thread while another one finishes a short step.
pub(crate) fn yield_thread() {
    #[cfg(tokio_wheel_loom)]
    loom::thread::yield_now();
    #[cfg(not(tokio_wheel_loom))]
    std::thread::yield_now();
}

/// Locking that shrugs off poisoning.
///
/// No user code runs under a lock of this crate: wakers are woken and
/// dropped, values and callbacks dropped, after unlocking (the only waker
/// code run under a lock is `clone`, which executors implement as a
/// reference count). So a poisoned lock only means one of our own
/// assertions failed at a point where the data is still consistent, and the
/// lock is taken anyway.
pub(crate) trait Lock {
    /// The guard.
    type Guard<'a>
    where
        Self: 'a;

    /// Locks, whether or not the lock is poisoned.
    fn lock_or_recover(&self) -> Self::Guard<'_>;
}

/// `Lock` for a mutex type whose `lock` returns std's `LockResult`.
macro_rules! impl_lock {
    ($mutex:ident, $guard:ident) => {
        impl<T> Lock for $mutex<T> {
            type Guard<'a>
                = $guard<'a, T>
            where
                Self: 'a;

            fn lock_or_recover(&self) -> Self::Guard<'_> {
                self.lock().unwrap_or_else(PoisonError::into_inner)
            }
        }
    };
}

// Std's: every lock of a normal build, and always the default-wheel registry
// (a `static`, which loom's mutex cannot be).
mod std_lock {
    use super::{Lock, PoisonError};
    use std::sync::{Mutex, MutexGuard};
    impl_lock!(Mutex, MutexGuard);
}

#[cfg(tokio_wheel_loom)]
mod loom_lock {
    use super::{Lock, PoisonError};
    use loom::sync::{Mutex, MutexGuard};
    impl_lock!(Mutex, MutexGuard);
}
