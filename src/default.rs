//! The free functions, on a default wheel per Tokio runtime.
//!
//! Each runtime gets its own default wheel, found by the runtime's id, and
//! bound to that runtime (its driver always runs there). One wheel per
//! runtime, not one per process, because runtimes can have different clocks
//! (paused time in tests) and a driver must run on a runtime that is driven.
//!
//! # Lifetime
//!
//! A runtime has exactly one default wheel from its first use until the
//! runtime shuts down, whichever threads come and go and however many
//! runtimes a thread uses. The global registry holds each runtime's wheel
//! strongly. Making the wheel spawns on its runtime a task that never
//! completes and owns a [`Keeper`]; Tokio drops every task's future when the
//! runtime shuts down, and the keeper's `Drop` takes the entry out of the
//! registry, so the wheel of a runtime that is gone is freed. Nothing is ever
//! spawned or dropped under the registry's lock: a runtime that is shutting
//! down drops a task the moment it is spawned, keeper included, and so never
//! keeps an entry.
//!
//! # Lookup
//!
//! `Handle::try_current` (which clones the runtime handle's `Arc`, as
//! `tokio::time::sleep` does), then a small thread-local cache of the last
//! few runtimes this thread used, which spares every timer the registry's
//! lock; on a miss, the registry. The cache holds its entries strongly too.
//! A global count of keepers dropped tells each thread, on its next lookup,
//! to forget the entries of runtimes that have shut down; the thread that
//! shuts a runtime down forgets that runtime's entry at once, and a thread
//! that exits forgets them all.

use std::cell::RefCell;
use std::future::IntoFuture;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::Instant;

use crate::driver::Shard;
use crate::error::TryCurrentError;
use crate::handle::When;
use crate::sync::Lock;
use crate::{Sleep, Timeout, Wheel};

/// How many runtimes' wheels a thread keeps cached.
const CACHED_RUNTIMES: usize = 4;

/// A runtime's default wheel.
struct Entry {
    id: Id,
    wheel: Wheel,
    /// Cleared when the runtime drops the entry's keeper, before `DEATHS`
    /// counts it.
    alive: AtomicBool,
}

impl Entry {
    fn is_alive(&self) -> bool {
        self.alive.load(Acquire)
    }
}

/// Every runtime's default wheel, until the runtime shuts down.
static REGISTRY: Mutex<Vec<Arc<Entry>>> = Mutex::new(Vec::new());

/// How many entries have died: a thread whose cache saw fewer looks for
/// dead entries in it.
static DEATHS: AtomicU64 = AtomicU64::new(0);

/// A thread's most recently used entries.
struct Cache {
    /// `DEATHS` when the entries were last checked.
    deaths: u64,
    /// Most recently used first.
    entries: Vec<Arc<Entry>>,
}

impl Cache {
    /// Moves the entries of runtimes that have shut down to `out`, for the
    /// caller to drop once the cache is no longer borrowed (dropping the last
    /// handle of a wheel drops its callbacks, which is user code).
    fn forget_dead(&mut self, out: &mut Vec<Arc<Entry>>) {
        // Read before the flags: a death counted after this read makes the
        // next lookup check again.
        let deaths = DEATHS.load(Acquire);
        if deaths == self.deaths {
            return;
        }
        self.deaths = deaths;
        let (alive, dead) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| e.is_alive());
        self.entries = alive;
        out.extend::<Vec<_>>(dead);
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache {
            deaths: 0,
            entries: Vec::new(),
        })
    };
}

// Here rather than in `handle.rs`: it reads the registry of this module.
impl Wheel {
    /// The default wheel of the current Tokio runtime: the one the free
    /// functions [`sleep`](fn@crate::sleep), [`timeout`](fn@crate::timeout) and
    /// friends use. Each runtime has its own (10 ms tick, 64 slots).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sleep = tokio_wheel::sleep(std::time::Duration::from_secs(1));
    /// let wheel = tokio_wheel::Wheel::current();
    /// assert_eq!(wheel.pending(), 0); // registers on first poll
    /// # drop(sleep);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime; [`try_current`](Wheel::try_current) returns
    /// an error instead.
    #[track_caller]
    pub fn current() -> Wheel {
        with_current(Wheel::clone)
    }

    /// The default wheel of the current Tokio runtime, as
    /// [`current`](Wheel::current), or an error outside a runtime instead of
    /// a panic: like Tokio's `Handle::try_current`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::Wheel;
    ///
    /// assert!(Wheel::try_current().is_err()); // no runtime here
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread()
    ///     .enable_time()
    ///     .build()
    ///     .unwrap();
    /// let wheel = rt.block_on(async {
    ///     let wheel = Wheel::try_current().unwrap();
    ///     let _handle = Wheel::current().schedule(Duration::from_secs(1), || ());
    ///     assert_eq!(wheel.pending(), 1); // the same wheel as `current()`
    ///     wheel
    /// });
    /// assert_eq!(wheel.resolution(), Duration::from_millis(10));
    /// ```
    ///
    /// # Errors
    ///
    /// [`TryCurrentError`] outside the context of a Tokio runtime.
    pub fn try_current() -> Result<Wheel, TryCurrentError> {
        try_with_current(Wheel::clone)
    }
}

fn registry() -> MutexGuard<'static, Vec<Arc<Entry>>> {
    REGISTRY.lock_or_recover()
}

/// Owned by a task on an entry's runtime that never completes: the runtime
/// drops it when it shuts down (or at once, if it is already shutting down).
struct Keeper(Arc<Entry>);

impl Drop for Keeper {
    fn drop(&mut self) {
        let entry = &self.0;
        entry.alive.store(false, Release);
        DEATHS.fetch_add(1, Release);
        let removed = {
            let mut registry = registry();
            let i = registry.iter().position(|e| Arc::ptr_eq(e, entry));
            i.map(|i| registry.swap_remove(i))
        };
        drop(removed);
        // This thread most likely used the runtime it shuts down.
        let mut dead = Vec::new();
        let _ = CACHE.try_with(|cache| {
            if let Ok(mut cache) = cache.try_borrow_mut() {
                cache.forget_dead(&mut dead);
            }
        });
        drop(dead);
    }
}

/// Calls `f` with the current runtime's default wheel.
///
/// # Panics
///
/// Outside a Tokio runtime, at the caller.
#[track_caller]
pub(crate) fn with_current<R>(f: impl FnOnce(&Wheel) -> R) -> R {
    match try_with_current(f) {
        Ok(r) => r,
        Err(_) => panic!(
            "tokio-wheel: there is no Tokio runtime here; the free functions use the current \
             runtime's default wheel and must be called from the context of a Tokio 1.x runtime \
             (or use a `Wheel` handle)"
        ),
    }
}

/// The shard this thread registers in on the current runtime's default
/// wheel: all the free `sleep` and `timeout` functions need, so that the
/// `Sleep` is made after the lookup, outside the cache's borrow, and a
/// `timeout`'s future is not moved through it.
///
/// # Panics
///
/// Outside a Tokio runtime, at the caller.
#[track_caller]
fn current_shard() -> Arc<Shard> {
    with_current(|w| w.local_shard().clone())
}

/// Calls `f` with the current runtime's default wheel, if there is a
/// current runtime.
fn try_with_current<R>(f: impl FnOnce(&Wheel) -> R) -> Result<R, TryCurrentError> {
    let handle = Handle::try_current().map_err(TryCurrentError::new)?;
    let id = handle.id();
    let mut f = Some(f);
    let hit = CACHE.try_with(|cache| {
        let cache = cache.try_borrow().ok()?;
        if cache.deaths != DEATHS.load(Acquire) {
            return None;
        }
        let entry = cache.entries.first().filter(|e| e.id == id)?;
        // `f` only makes a timer: it does not come back here.
        Some((f.take().expect("called once"))(&entry.wheel))
    });
    if let Ok(Some(r)) = hit {
        return Ok(r);
    }
    let entry = lookup(id, &handle);
    Ok((f.take().expect("called once"))(&entry.wheel))
}

/// The entry of runtime `id`: from this thread's cache, else from the
/// registry (made if there is none), then cached first.
fn lookup(id: Id, handle: &Handle) -> Arc<Entry> {
    let mut dropped = Vec::new();
    let cached = CACHE
        .try_with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            cache.forget_dead(&mut dropped);
            let i = cache.entries.iter().position(|e| e.id == id)?;
            let entry = cache.entries.remove(i);
            cache.entries.insert(0, entry.clone());
            Some(entry)
        })
        .ok()
        .flatten();
    drop(dropped);
    if let Some(entry) = cached {
        return entry;
    }
    // Not under the cache's borrow: this may spawn the keeper, which a
    // runtime that is shutting down drops at once.
    let entry = registered(id, handle);
    if entry.is_alive() {
        let mut evicted = Vec::new();
        // Thread-locals being torn down, or the cache in use further up this
        // thread's stack: do without it.
        let _ = CACHE.try_with(|cache| {
            if let Ok(mut cache) = cache.try_borrow_mut() {
                cache.entries.insert(0, entry.clone());
                let keep = cache.entries.len().min(CACHED_RUNTIMES);
                evicted = cache.entries.split_off(keep);
            }
        });
        drop(evicted);
    }
    entry
}

/// The registered entry of runtime `id`, made if there is none.
fn registered(id: Id, handle: &Handle) -> Arc<Entry> {
    let find = |registry: &[Arc<Entry>]| {
        registry
            .iter()
            .find(|e| e.id == id && e.is_alive())
            .cloned()
    };
    if let Some(entry) = find(&registry()) {
        return entry;
    }
    let wheel = Wheel::builder()
        .runtime(handle.clone())
        .build()
        .expect("the default settings are valid");
    let fresh = Arc::new(Entry {
        id,
        wheel,
        alive: AtomicBool::new(true),
    });
    let raced = {
        let mut registry = registry();
        let found = find(&registry);
        if found.is_none() {
            registry.push(fresh.clone());
        }
        found
    };
    if let Some(entry) = raced {
        // Another thread registered one meanwhile; ours is dropped unused.
        return entry;
    }
    let keeper = Keeper(fresh.clone());
    drop(handle.spawn(async move {
        let _keeper = keeper;
        std::future::pending::<()>().await;
    }));
    fresh
}

/// Waits until `duration` has elapsed, on the current runtime's default
/// wheel: a drop-in for [`tokio::time::sleep`] at the wheel's 10 ms
/// resolution.
///
/// A runtime's default wheel ([`Wheel::current`]) is made on first use and
/// lives until the runtime shuts down: the same wheel for every thread and
/// task of the runtime, whatever threads come and go. A task of the runtime
/// that never completes holds it (it counts in the runtime's
/// `num_alive_tasks`), and the runtime's shutdown frees it.
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
    Wheel::sleep_on(current_shard(), When::After(duration), false)
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
    Wheel::sleep_on(current_shard(), When::At(deadline), false)
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
    let future = future.into_future();
    Timeout::new(future, sleep(duration))
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
    Timeout::new(future, sleep_until(deadline))
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
    // Here, not in the closure below, which would report the panic inside
    // the crate rather than at the caller.
    assert_period(period);
    with_current(|w| w.interval(period))
}

/// `tokio::time::interval`'s check and message, at the caller's location.
#[track_caller]
fn assert_period(period: Duration) {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
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
    assert_period(period);
    with_current(|w| w.interval_at(start, period))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn registered_for(id: Id) -> usize {
        registry().iter().filter(|e| e.id == id).count()
    }

    fn cached_for(id: Id) -> usize {
        CACHE.with(|c| c.borrow().entries.iter().filter(|e| e.id == id).count())
    }

    #[test]
    fn one_entry_while_the_runtime_lives_and_none_after() {
        let rt = runtime();
        let id = rt.handle().id();
        assert_eq!(registered_for(id), 0);
        {
            let _in_runtime = rt.enter();
            let a = Wheel::current();
            let b = Wheel::current();
            a.schedule(Duration::from_secs(60), || ()).unwrap();
            assert_eq!(b.pending(), 1, "two wheels for one runtime");
            assert_eq!((registered_for(id), cached_for(id)), (1, 1));
        }
        drop(rt);
        assert_eq!((registered_for(id), cached_for(id)), (0, 0));
    }

    #[test]
    fn a_runtime_that_has_shut_down_gets_no_entry() {
        let rt = runtime();
        let handle = rt.handle().clone();
        drop(rt);
        let _in_runtime = handle.enter();
        let wheel = Wheel::current();
        assert_eq!(wheel.pending(), 0);
        assert_eq!(
            (registered_for(handle.id()), cached_for(handle.id())),
            (0, 0)
        );
    }

    /// Another thread's cache forgets a dead runtime's entry on that
    /// thread's next lookup, whichever runtime that is for.
    #[test]
    fn other_threads_forget_dead_entries_on_their_next_lookup() {
        let rt = runtime();
        let id = rt.handle().id();
        let handle = rt.handle().clone();
        let (to_main, from_thread) = mpsc::channel();
        let (to_thread, from_main) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            {
                let _in_runtime = handle.enter();
                drop(Wheel::current());
            }
            drop(handle);
            to_main.send(cached_for(id)).unwrap();
            from_main.recv().unwrap();
            to_main.send(cached_for(id)).unwrap();
            let other = runtime();
            let _in_other = other.enter();
            drop(Wheel::current());
            to_main.send(cached_for(id)).unwrap();
        });
        assert_eq!(from_thread.recv().unwrap(), 1);
        drop(rt);
        assert_eq!(registered_for(id), 0);
        to_thread.send(()).unwrap();
        assert_eq!(from_thread.recv().unwrap(), 1, "forgotten before a lookup");
        assert_eq!(from_thread.recv().unwrap(), 0, "kept after a lookup");
        thread.join().unwrap();
    }
}
