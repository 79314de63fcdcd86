//! A keyed expiry queue shared by many tasks: [`ExpiryQueue`].
//!
//! Servers expire *keys* more often than futures: sessions, idle connection
//! ids, cache entries, delayed operations. `tokio_util::time::DelayQueue`
//! does this with `&mut self`, so one task owns it and the others send it
//! messages. An [`ExpiryQueue`] is a cloneable handle instead: any task
//! inserts, resets and removes values directly, from any thread, and any
//! number of consumers ([`Expirations`]) take the values whose deadline has
//! passed.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use std::time::Duration;
//! use tokio_wheel::ExpiryQueue;
//!
//! let sessions = ExpiryQueue::new(); // on the runtime's default wheel
//! let mut expired = sessions.expirations();
//!
//! let alice = sessions.insert("alice", Duration::from_secs(30));
//! let bob = sessions.insert("bob", Duration::from_secs(30));
//!
//! // Another task touches alice's session: 30 s more from now.
//! let handle = sessions.clone();
//! tokio::spawn(async move {
//!     tokio::time::sleep(Duration::from_secs(20)).await;
//!     handle.reset(&alice, Duration::from_secs(30)).unwrap();
//! });
//!
//! let first = expired.next_expired().await.unwrap();
//! assert_eq!((first.key(), *first.get_ref()), (bob, "bob"));
//! assert_eq!(expired.next_expired().await.unwrap().into_inner(), "alice");
//! # }
//! ```
//!
//! # Semantics
//!
//! - **Never early, at most one tick late**, as every timer of the wheel: a
//!   value comes out at the first tick of the wheel at or after its deadline,
//!   to a consumer that is waiting then (with paused time, exactly at that
//!   tick). A consumer that is busy gets it on its next poll.
//! - **Deadline order across ticks.** Values come out in the order of the
//!   ticks their deadlines round up to. Values due at the same tick come out
//!   in no particular order, whatever their deadlines within the tick.
//! - **A value stays in the queue until a consumer takes it.** Until then
//!   [`remove`](ExpiryQueue::remove) and [`reset`](ExpiryQueue::reset) work
//!   on it even once its deadline has passed (a reset to a later deadline
//!   puts it back to wait). Once taken, its key is stale.
//! - **Expiry is driven by the consumers**, as with `DelayQueue`: values are
//!   moved out of the queue's wheels when a consumer polls. No consumer, no
//!   work: expired values wait in the queue (and count in
//!   [`len`](ExpiryQueue::len)) until one polls. A waiting consumer sleeps on
//!   one [`Sleep`] of the wheel, reset to the queue's earliest
//!   deadline (or the earlier tick at which the queue's wheels must move
//!   entries down a level, at most once per 0.64 s at the default
//!   resolution); an insert or reset earlier than that wakes it.
//! - **An emptied queue wakes its consumers**, as `DelayQueue`'s does: a
//!   consumer waiting for a value's deadline is woken when a
//!   [`remove`](ExpiryQueue::remove), [`clear`](ExpiryQueue::clear) or
//!   [`drain`](ExpiryQueue::drain) leaves the queue empty, and sees the empty
//!   queue: `Pending`, waiting for an insert, with its [`Sleep`] given back
//!   (no place under the bound, no wake-up at the old deadline), or the end
//!   (`Ready(None)`) if no handle is left. Removing a value that is not the
//!   last does not wake it: it wakes at that value's tick and waits again.
//! - **Several consumers** may take from one queue: each value goes to
//!   exactly one of them. A consumer woken for a value that another took
//!   simply waits again.
//! - **Keys are generational.** A [`Key`] names one inserted value. Once the
//!   value is removed, cleared or taken as expired the key is stale:
//!   [`remove`](ExpiryQueue::remove) gives `None`, [`reset`](ExpiryQueue::reset)
//!   an error, and it never touches a value inserted later, even in the same
//!   place; a key from another queue is stale in this one. Nothing panics.
//!
//! # Cost
//!
//! A queue has shards as its wheel does, one `Mutex` around a hierarchical
//! timing wheel each; a thread inserts into its own shard, so tasks on
//! different worker threads rarely touch the same lock or cache line.
//! Removing or resetting locks the shard the key's value is in (a removal
//! that empties its shard while a consumer waits also looks at the other
//! shards, until one holds a value: wake-on-empty). Insert,
//! remove and reset are O(1); a reset to a later deadline only writes the
//! deadline (the value moves when its old tick comes, once however many
//! times it was reset meanwhile). Consumers take a lock of their own and
//! visit every shard when they look for due values.
//!
//! Memory: a value is held in place in its shard's wheel with its deadline
//! and generation: 24 bytes plus the value and its `Instant` (48 bytes for a
//! `u64` on 64-bit Linux, against 56 for a `DelayQueue`). Each shard
//! allocates its wheel's levels up front (about 12 KiB at the default 64
//! slots).
//!
//! # Bounds and shutdown
//!
//! A queued value takes a place under the wheel's
//! [`max_pending`](crate::Builder::max_pending) bound, as a timer does, until
//! it leaves the queue (taken, removed, cleared, drained, or dropped with the
//! queue). As with [`Wheel::sleep`](crate::Wheel::sleep) and
//! [`Wheel::try_sleep`](crate::Wheel::try_sleep):
//! [`insert`](ExpiryQueue::insert) is never refused (it counts, and may go
//! past the bound), and [`try_insert`](ExpiryQueue::try_insert) refuses a
//! value at the bound or after [`Wheel::shutdown`](crate::Wheel::shutdown),
//! handing it back in an [`InsertError`]. A consumer waiting on its
//! [`Sleep`] holds one place too while it waits, as any registered sleep
//! does.
//!
//! After the wheel shuts down nothing is lost: the queue's values stay, the
//! consumers' sleeps go over to Tokio's timer, and consumers still get every
//! value at its deadline. [`drain`](ExpiryQueue::drain) hands back every
//! queued value at once, in deadline order, to persist or log.
//!
//! The consumers' stream ends (`None`) once every [`ExpiryQueue`] handle is
//! dropped and the queue is empty: the values still queued when the last
//! handle goes keep coming out at their deadlines first. Dropping the last
//! handle *and* every consumer drops the values still queued, as dropping a
//! `DelayQueue` does: call [`drain`](ExpiryQueue::drain) first to keep them.
//!
//! # From `DelayQueue`
//!
//! | `tokio_util::time::DelayQueue` | [`ExpiryQueue`] | What is different |
//! |---|---|---|
//! | `DelayQueue::new()`, `with_capacity(n)` | [`ExpiryQueue::new()`], [`Wheel::expiry_queue`](crate::Wheel::expiry_queue), [`ExpiryQueue::with_wheel`] | A handle: `Clone + Send + Sync`; every method takes `&self`. No `with_capacity`: shards grow as needed. |
//! | `insert(value, timeout) -> Key` | [`insert`](ExpiryQueue::insert) | Same. Resolution is the wheel's tick (10 ms by default), not 1 ms. |
//! | `insert_at(value, when)` | [`insert_at`](ExpiryQueue::insert_at) | Same. |
//! | — | [`try_insert`](ExpiryQueue::try_insert), [`try_insert_at`](ExpiryQueue::try_insert_at) | Refused at the wheel's `max_pending` or after shutdown, handing the value back. |
//! | `remove(&key) -> Expired<T>` | [`remove`](ExpiryQueue::remove) `-> Option<T>` | `None` for a stale key instead of a panic. |
//! | `try_remove(&key) -> Option<Expired<T>>` | [`remove`](ExpiryQueue::remove) | Gives the value only; [`deadline`](ExpiryQueue::deadline) gives the deadline. |
//! | `reset(&key, timeout)`, `reset_at(&key, when)` | [`reset`](ExpiryQueue::reset), [`reset_at`](ExpiryQueue::reset_at) | `Err(StaleKey)` for a stale key instead of a panic. A later deadline is a field write. |
//! | `deadline(&key) -> Instant` | [`deadline`](ExpiryQueue::deadline) `-> Option<Instant>` | `None` for a stale key instead of a panic. |
//! | `len()`, `is_empty()`, `clear()` | [`len`](ExpiryQueue::len), [`is_empty`](ExpiryQueue::is_empty), [`clear`](ExpiryQueue::clear) | `len` counts values due but not yet taken, as `DelayQueue`'s does. `clear`, and `remove` of the last value, wake a waiting consumer, as in `DelayQueue`. |
//! | — | [`drain`](ExpiryQueue::drain) | Every queued value with its key and deadline, in deadline order. |
//! | `poll_expired(&mut self, cx)` | [`Expirations::poll_expired`] | A consumer of its own: [`expirations`](ExpiryQueue::expirations) makes as many as you like. |
//! | `impl Stream` | `impl Stream for` [`Expirations`], [`Expirations::next_expired`] | An empty queue is `Pending` (other tasks may insert), where `DelayQueue` gives `None`; the stream ends once every handle is dropped and the queue is empty. A consumer woken because the queue was emptied sees `Pending` and lets go of its `Sleep`. |
//! | `Expired<T>`: `get_ref`, `get_mut`, `into_inner`, `deadline`, `key` | [`Expired`]: the same | Same. |
//! | `Key` (an index, reused) | [`Key`] | Generational: a stale key never reaches a newer value, and a key of another queue is stale. |
//! | `peek() -> Option<Key>` | [`peek`](ExpiryQueue::peek) | Same answer; visits every value (a min over shards), where `DelayQueue` looks at one slot: not for every value. |
//! | `capacity()` | [`capacity`](ExpiryQueue::capacity) | The sum over shards. |
//! | `compact()`, `shrink_to_fit()` | [`shrink_to_fit`](ExpiryQueue::shrink_to_fit) | Keys stay valid (`compact` gives new ones), so only free places after a shard's last value are freed; an empty shard frees all. Removals also give memory back by themselves, under an eighth full. |
//! | `reserve(n)` | — | Not offered: a thread inserts into its own shard, so no one shard could be told how much. |

#[cfg(all(test, tokio_wheel_loom))]
mod loom;
mod state;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::task::coop;
use tokio::time::Instant;

use crate::clock::deadline_after;
use crate::error::{InsertError, StaleKey};
use crate::{Sleep, Wheel};
use state::QueueCore;

/// A keyed expiry queue on a [`Wheel`], shared by every task that holds a
/// clone: see the [module docs](crate::queue) for the semantics and a
/// mapping from `tokio_util::time::DelayQueue`.
///
/// Insert values with a timeout and get a [`Key`]; reset or remove them by
/// key from any task; take the expired ones from one or more consumers
/// ([`expirations`](ExpiryQueue::expirations)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
/// use tokio_wheel::ExpiryQueue;
///
/// let queue = ExpiryQueue::new();
/// let mut expired = queue.expirations();
/// let start = Instant::now();
///
/// let a = queue.insert('a', Duration::from_millis(50));
/// let b = queue.insert('b', Duration::from_millis(20));
/// queue.insert('c', Duration::from_millis(100));
/// queue.reset(&a, Duration::from_millis(200)).unwrap();
/// assert_eq!(queue.remove(&b), Some('b'));
///
/// let next = expired.next_expired().await.unwrap();
/// assert_eq!(next.into_inner(), 'c');
/// assert_eq!(start.elapsed(), Duration::from_millis(100));
/// assert_eq!(expired.next_expired().await.unwrap().into_inner(), 'a');
/// assert!(queue.is_empty());
/// # }
/// ```
pub struct ExpiryQueue<T> {
    inner: Arc<QueueCore<T>>,
}

/// A consumer of an [`ExpiryQueue`]: takes the values whose deadline has
/// passed, as [`poll_expired`](Expirations::poll_expired),
/// [`next_expired`](Expirations::next_expired) or a `Stream`.
///
/// Made by [`ExpiryQueue::expirations`]. Each consumer waits on a
/// [`Sleep`] of its own; a queue may have any number of them,
/// and each expired value goes to one.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use futures::StreamExt;
/// use std::time::Duration;
///
/// let queue = tokio_wheel::ExpiryQueue::new();
/// for i in 0..3u64 {
///     queue.insert(i, Duration::from_secs(i + 1));
/// }
/// let expired = queue.expirations();
/// drop(queue); // the stream ends once the queue is empty
/// let values: Vec<u64> = expired.map(|e| e.into_inner()).collect().await;
/// assert_eq!(values, [0, 1, 2]);
/// # }
/// ```
pub struct Expirations<T> {
    inner: Arc<QueueCore<T>>,
    /// Made on the first wait, then reset.
    sleep: Option<Sleep>,
    /// This consumer's id in `QueueCore::waiters`.
    id: u64,
    /// Whether this consumer is in `QueueCore::waiters`.
    registered: bool,
}

/// Names one value inserted into an [`ExpiryQueue`], to reset or remove it.
///
/// Keys are generational: once the value has left the queue, its key is
/// stale for good, and never names a value inserted later; a key of another
/// queue is stale too. `Copy`, and 24 bytes.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// let queue = tokio_wheel::ExpiryQueue::new();
/// let old = queue.insert("old", Duration::from_secs(1));
/// queue.remove(&old);
/// let new = queue.insert("new", Duration::from_secs(1)); // maybe the same place
/// assert_ne!(old, new);
/// assert_eq!(queue.remove(&old), None);
/// assert_eq!(queue.deadline(&old), None);
/// assert_eq!(queue.remove(&new), Some("new"));
/// # }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    queue: u64,
    gen: u64,
    slot: u32,
    shard: u32,
}

/// A value whose deadline passed, taken from an [`ExpiryQueue`], with its key
/// (stale from now on) and its deadline.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// let queue = tokio_wheel::ExpiryQueue::new();
/// let at = Instant::now() + Duration::from_millis(25);
/// let key = queue.insert_at(String::from("cache entry"), at);
/// let mut expired = queue.expirations().next_expired().await.unwrap();
/// assert_eq!(expired.key(), key);
/// assert_eq!(expired.deadline(), at);
/// expired.get_mut().push('!');
/// assert_eq!(expired.get_ref(), "cache entry!");
/// assert_eq!(expired.into_inner(), "cache entry!");
/// # }
/// ```
#[derive(Debug)]
pub struct Expired<T> {
    value: T,
    key: Key,
    deadline: Instant,
}

impl<T> Expired<T> {
    /// The value.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert(vec![1, 2], Duration::from_secs(1));
    /// let expired = queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(expired.get_ref(), &[1, 2]);
    /// # }
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The value, mutably.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert(vec![1, 2], Duration::from_secs(1));
    /// let mut expired = queue.expirations().next_expired().await.unwrap();
    /// expired.get_mut().push(3);
    /// assert_eq!(expired.into_inner(), [1, 2, 3]);
    /// # }
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// Takes the value.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert(String::from("session 9"), Duration::from_secs(1));
    /// let expired = queue.expirations().next_expired().await.unwrap();
    /// let value: String = expired.into_inner();
    /// assert_eq!(value, "session 9");
    /// # }
    /// ```
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The key the value had: stale now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let key = queue.insert("token", Duration::from_secs(1));
    /// let expired = queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(expired.key(), key);
    /// assert_eq!(queue.remove(&key), None, "taken: the key is stale");
    /// # }
    /// ```
    pub fn key(&self) -> Key {
        self.key
    }

    /// The deadline the value had, as given (not rounded to the tick).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let at = Instant::now() + Duration::from_millis(1234);
    /// queue.insert_at("job", at);
    /// let expired = queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(expired.deadline(), at);
    /// assert!(Instant::now() >= at, "never early");
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Key({}:{}:{}#{})",
            self.queue, self.shard, self.slot, self.gen
        )
    }
}

// Here rather than in `handle.rs`, which then need not know the queue.
impl Wheel {
    /// A keyed [`ExpiryQueue`] on this wheel: values that come back to a
    /// consumer once their deadline passes, shared by every task that holds
    /// a clone. See the [`ExpiryQueue`] docs.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::new();
    /// let queue = wheel.expiry_queue();
    /// let mut expired = queue.expirations();
    /// queue.insert("session-1", Duration::from_secs(30));
    /// assert_eq!(expired.next_expired().await.unwrap().into_inner(), "session-1");
    /// # }
    /// ```
    pub fn expiry_queue<T>(&self) -> ExpiryQueue<T> {
        ExpiryQueue::with_wheel(self)
    }
}

impl<T> ExpiryQueue<T> {
    /// A queue on the default wheel of the current Tokio runtime (the one
    /// [`sleep`](fn@crate::sleep) and the other free functions use).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = tokio_wheel::ExpiryQueue::<u64>::new();
    /// assert!(queue.is_empty());
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[track_caller]
    #[allow(clippy::new_without_default)] // Default would panic outside a runtime
    pub fn new() -> ExpiryQueue<T> {
        ExpiryQueue::with_wheel(&Wheel::current())
    }

    /// A queue on `wheel`: its tick, its clock, its shard count and its
    /// [`max_pending`](crate::Builder::max_pending) bound. The same as
    /// [`Wheel::expiry_queue`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokio_wheel::{ExpiryQueue, Wheel};
    ///
    /// let wheel = Wheel::builder().tick(Duration::from_millis(100)).build()?;
    /// let queue: ExpiryQueue<u32> = ExpiryQueue::with_wheel(&wheel);
    /// assert_eq!(queue.resolution(), Duration::from_millis(100));
    /// # Ok::<(), tokio_wheel::error::BuildError>(())
    /// ```
    pub fn with_wheel(wheel: &Wheel) -> ExpiryQueue<T> {
        ExpiryQueue {
            inner: Arc::new(QueueCore::new(wheel)),
        }
    }

    /// Queues `value` until `timeout` from now and returns its key.
    /// Durations too long to add to the clock are taken as about 30 years.
    ///
    /// Never refused: the value counts under the wheel's
    /// [`max_pending`](crate::Builder::max_pending) bound but may go past it
    /// (see [`try_insert`](Self::try_insert)), and is accepted after the
    /// wheel's shutdown (it still expires; see the module docs).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let key = queue.insert("idle connection 7", Duration::from_secs(60));
    /// assert_eq!(queue.len(), 1);
    /// assert!(queue.deadline(&key).is_some());
    /// # }
    /// ```
    pub fn insert(&self, value: T, timeout: Duration) -> Key {
        self.insert_at(value, deadline_after(Instant::now(), timeout))
    }

    /// Queues `value` until `deadline` and returns its key. A deadline that
    /// has passed comes out on a consumer's next poll.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert_at("late", Instant::now() - Duration::from_secs(1));
    /// let expired = queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(expired.into_inner(), "late");
    /// # }
    /// ```
    pub fn insert_at(&self, value: T, deadline: Instant) -> Key {
        self.inner.wheel.core().charge();
        self.inner.insert(value, deadline)
    }

    /// Like [`insert`](Self::insert), but refused if the wheel is at its
    /// [`max_pending`](crate::Builder::max_pending) bound or shut down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().max_pending(2).build().unwrap();
    /// let queue = wheel.expiry_queue();
    /// let a = queue.try_insert(1, Duration::from_secs(5)).unwrap();
    /// queue.try_insert(2, Duration::from_secs(5)).unwrap();
    /// assert_eq!(queue.try_insert(3, Duration::from_secs(5)).unwrap_err().into_value(), 3);
    /// queue.remove(&a); // frees a place
    /// assert!(queue.try_insert(3, Duration::from_secs(5)).is_ok());
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`InsertError`] with the value, naming the bound or saying the wheel
    /// is shut down.
    pub fn try_insert(&self, value: T, timeout: Duration) -> Result<Key, InsertError<T>> {
        self.try_insert_at(value, deadline_after(Instant::now(), timeout))
    }

    /// Like [`insert_at`](Self::insert_at), but refused at the bound or
    /// after shutdown; see [`try_insert`](Self::try_insert).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let wheel = tokio_wheel::Wheel::builder().max_pending(1).build().unwrap();
    /// let queue = wheel.expiry_queue();
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let key = queue.try_insert_at("first", at).unwrap();
    /// assert_eq!(queue.deadline(&key), Some(at));
    /// let refused = queue.try_insert_at("second", at).unwrap_err();
    /// assert_eq!(refused.into_value(), "second");
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`InsertError`] with the value, naming the bound or saying the wheel
    /// is shut down.
    pub fn try_insert_at(&self, value: T, deadline: Instant) -> Result<Key, InsertError<T>> {
        if let Err(reason) = self.inner.wheel.core().admit() {
            return Err(InsertError::new(reason, value));
        }
        Ok(self.inner.insert(value, deadline))
    }

    /// Moves the value's deadline to `timeout` from now, earlier or later,
    /// even if its deadline has passed and no consumer has taken it yet.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let start = Instant::now();
    /// let key = queue.insert("session", Duration::from_secs(1));
    /// queue.reset(&key, Duration::from_secs(3)).unwrap();
    /// queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(start.elapsed(), Duration::from_secs(3));
    /// assert!(queue.reset(&key, Duration::from_secs(3)).is_err(), "taken: stale");
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StaleKey`] if the value is no longer in the queue, or the key is
    /// from another queue.
    pub fn reset(&self, key: &Key, timeout: Duration) -> Result<(), StaleKey> {
        self.reset_at(key, deadline_after(Instant::now(), timeout))
    }

    /// Moves the value's deadline to `deadline`; see [`reset`](Self::reset).
    /// O(1); a later deadline only writes it down.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let start = Instant::now();
    /// let key = queue.insert("lease", Duration::from_secs(10));
    /// let at = start + Duration::from_secs(2);
    /// queue.reset_at(&key, at).unwrap();
    /// assert_eq!(queue.deadline(&key), Some(at));
    /// queue.expirations().next_expired().await.unwrap();
    /// assert_eq!(start.elapsed(), Duration::from_secs(2));
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StaleKey`] if the value is no longer in the queue, or the key is
    /// from another queue.
    pub fn reset_at(&self, key: &Key, deadline: Instant) -> Result<(), StaleKey> {
        self.inner.reset(key, deadline)
    }

    /// Takes the value out of the queue, whether or not its deadline has
    /// passed, if no consumer has taken it. `None` for a stale key.
    ///
    /// If it was the last value, consumers waiting for its deadline are woken
    /// to see the empty queue (see the [module docs](crate::queue)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let key = queue.insert(42, Duration::from_secs(5));
    /// assert_eq!(queue.remove(&key), Some(42));
    /// assert_eq!(queue.remove(&key), None);
    /// # }
    /// ```
    pub fn remove(&self, key: &Key) -> Option<T> {
        self.inner.remove(key)
    }

    /// The value's deadline, as given; `None` for a stale key.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use tokio::time::Instant;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let at = Instant::now() + Duration::from_millis(1234);
    /// let key = queue.insert_at((), at);
    /// assert_eq!(queue.deadline(&key), Some(at));
    /// # }
    /// ```
    pub fn deadline(&self, key: &Key) -> Option<Instant> {
        self.inner.deadline(key)
    }

    /// Values in the queue: not yet taken by a consumer, removed or cleared
    /// (values whose deadline has passed included, until a consumer takes
    /// them). Locks every shard in turn.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert('x', Duration::from_secs(1));
    /// queue.insert('y', Duration::from_secs(2));
    /// assert_eq!(queue.len(), 2);
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = tokio_wheel::ExpiryQueue::<()>::new();
    /// assert!(queue.is_empty());
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key of the value that comes out next, `None` if the queue is
    /// empty: the value whose deadline, rounded up to the wheel's tick, comes
    /// first (values due but not yet taken included; among those of one
    /// tick, which come out in no particular order, the earliest deadline).
    /// As `DelayQueue::peek`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// assert_eq!(queue.peek(), None);
    /// let later = queue.insert("later", Duration::from_secs(20));
    /// let sooner = queue.insert("sooner", Duration::from_secs(10));
    /// assert_eq!(queue.peek(), Some(sooner));
    /// queue.reset(&sooner, Duration::from_secs(30)).unwrap();
    /// assert_eq!(queue.peek(), Some(later));
    /// # }
    /// ```
    ///
    /// Costs a visit of every queued value, locking one shard at a time
    /// (`DelayQueue` looks at its wheel's earliest slot only): for occasional
    /// use, not once per value. Other tasks may change the queue meanwhile;
    /// the key is then stale, or no longer the first.
    pub fn peek(&self) -> Option<Key> {
        self.inner.peek()
    }

    /// How many values the queue holds without allocating: the sum over its
    /// shards. A thread inserts into its own shard, so one shard may grow
    /// while another has room.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// assert_eq!(queue.capacity(), 0, "nothing allocated until an insert");
    /// for i in 0..100 {
    ///     queue.insert(i, Duration::from_secs(1));
    /// }
    /// assert!(queue.capacity() >= 100);
    /// # }
    /// ```
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// Gives back the memory the queue holds beyond what its values need,
    /// without moving a value: every key stays valid (`DelayQueue::compact`
    /// gives its values new keys; this cannot). Locks one shard at a time and
    /// costs a pass over its places.
    ///
    /// A shard keeps its values in place in a slab, and a key names a
    /// place: this frees the places after a shard's last value, and all of
    /// them in a shard with no value, but not the free places before a value
    /// that stays (one value inserted late in a burst keeps the burst's
    /// length until it leaves). The shards' wheel levels (about 12 KiB each at
    /// the default 64 slots) are allocated with the queue and stay.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let keys: Vec<_> = (0..1000).map(|i| queue.insert(i, Duration::from_secs(1))).collect();
    /// for key in &keys[10..] {
    ///     queue.remove(key);
    /// }
    /// queue.shrink_to_fit();
    /// assert!(queue.capacity() < 1000);
    /// assert_eq!(queue.remove(&keys[0]), Some(0), "keys stay valid");
    /// # }
    /// ```
    pub fn shrink_to_fit(&self) {
        self.inner.shrink_to_fit();
    }

    /// Removes and drops every value; their keys go stale. Consumers waiting
    /// for a deadline are woken to see the empty queue.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let key = queue.insert(1, Duration::from_secs(1));
    /// queue.clear();
    /// assert!(queue.is_empty());
    /// assert_eq!(queue.remove(&key), None);
    /// # }
    /// ```
    pub fn clear(&self) {
        drop(self.inner.take_all());
    }

    /// Removes every value and hands them back with their keys (now stale)
    /// and deadlines, in deadline order: what a server persists or logs at
    /// shutdown.
    /// Consumers waiting for a deadline are woken, as by [`clear`](Self::clear).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// queue.insert("later", Duration::from_secs(20));
    /// queue.insert("sooner", Duration::from_secs(10));
    /// let left: Vec<_> = queue.drain().into_iter().map(|e| e.into_inner()).collect();
    /// assert_eq!(left, ["sooner", "later"]);
    /// assert!(queue.is_empty());
    /// # }
    /// ```
    pub fn drain(&self) -> Vec<Expired<T>> {
        let mut all = self.inner.take_all();
        all.sort_by_key(|e| e.deadline);
        all
    }

    /// A new consumer of this queue's expired values. Each expired value goes
    /// to one consumer.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let mut consumer = queue.expirations();
    /// let worker = tokio::spawn(async move {
    ///     while let Some(expired) = consumer.next_expired().await {
    ///         println!("expired: {}", expired.get_ref());
    ///     }
    /// });
    /// queue.insert("token", Duration::from_secs(1));
    /// drop(queue); // the consumer ends after the last value
    /// worker.await.unwrap();
    /// # }
    /// ```
    pub fn expirations(&self) -> Expirations<T> {
        Expirations {
            inner: self.inner.clone(),
            sleep: None,
            id: self.inner.new_consumer_id(),
            registered: false,
        }
    }

    /// The wheel's tick: deadlines round up to a multiple of it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = tokio_wheel::ExpiryQueue::<()>::new();
    /// assert_eq!(queue.resolution(), std::time::Duration::from_millis(10));
    /// # }
    /// ```
    pub fn resolution(&self) -> Duration {
        self.inner.wheel.resolution()
    }
}

impl<T> Clone for ExpiryQueue<T> {
    fn clone(&self) -> Self {
        self.inner.add_handle();
        ExpiryQueue {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for ExpiryQueue<T> {
    fn drop(&mut self) {
        self.inner.drop_handle();
    }
}

impl<T> fmt::Debug for ExpiryQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpiryQueue")
            .field("len", &self.len())
            .field("wheel", &self.inner.wheel)
            .finish_non_exhaustive()
    }
}

impl<T> Expirations<T> {
    /// Polls for the next expired value: `Ready(Some)` with a value whose
    /// deadline has passed, `Pending` until one does (the task is woken),
    /// `Ready(None)` once every [`ExpiryQueue`] handle is dropped and the
    /// queue is empty. An empty queue with a handle left is `Pending`: a
    /// consumer waiting for a value that is removed, cleared or drained is
    /// woken, and the poll that sees the queue empty drops its [`Sleep`].
    ///
    /// Takes part in Tokio's cooperative budget: a value taken uses a unit.
    /// A poll does a bounded amount of the queue's own work: it fires or
    /// moves down keys in steps of at most 4096 (a poll takes a step only
    /// when it has nothing to hand out, and a few at most), so that neither
    /// this task nor the producers on a shard wait for a tick that holds a
    /// hundred thousand keys, or for a slot of the queue's wheel that holds
    /// many due later (one of its third level or above: 327.68 s or more at
    /// the default 10 ms tick). A poll whose step leaves nothing to hand
    /// out yet returns `Pending` with the task already woken, a yield, and
    /// the next poll goes on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let mut consumer = queue.expirations();
    /// queue.insert(7, Duration::from_millis(30));
    /// let expired = poll_fn(|cx| consumer.poll_expired(cx)).await.unwrap();
    /// assert_eq!(expired.into_inner(), 7);
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Where polling a [`Sleep`] of the wheel would: outside a
    /// Tokio runtime when the wheel's driver must be started.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        let coop = ready!(coop::poll_proceed(cx));
        let Expirations {
            inner,
            sleep,
            id,
            registered,
        } = self;
        let inner = &**inner;
        let taken = |expired: Expired<T>, registered: &mut bool| {
            inner.unregister(*id, registered);
            coop.made_progress();
            if inner.has_no_handles() {
                // Other consumers may have seen this value as the last one
                // and wait for it to go: let them look again (and end).
                inner.wake_waiters(None);
            }
            Poll::Ready(Some(expired))
        };
        loop {
            let now_tick = inner.clock.floor(Instant::now());
            let mut next = match inner.take_due(now_tick) {
                Ok(expired) => return taken(expired, registered),
                Err(next) => next,
            };
            // Nothing ready: a firing that ran out of its step (a tick not
            // after now), or a step of the lists a firing deferred.
            // Either way, come back for the rest after the runtime's other
            // tasks had a turn.
            if next.is_some_and(|t| t <= now_tick) || inner.cascade_step() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // Register, then look again (the protocol in `armed`'s docs),
            // until the earliest tick is the one registered. A scan that
            // finds a later tick, or none (values removed meanwhile),
            // registers that too: wake-on-empty relies on it.
            loop {
                inner.register(*id, cx.waker(), next.unwrap_or(u64::MAX));
                *registered = true;
                match inner.take_due(now_tick) {
                    Ok(expired) => return taken(expired, registered),
                    // Another consumer's firing ran out of its step, and
                    // this one's too: no need to be woken by producers
                    // until the next poll registers again.
                    Err(Some(again)) if again <= now_tick => {
                        inner.unregister(*id, registered);
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    Err(again) if again != next => next = again,
                    Err(_) => break,
                }
            }
            let Some(at) = next.and_then(|t| inner.clock.instant_of(t)) else {
                // Nothing pending: wait for an insert, or for the end. The
                // sleep goes, with its place under the wheel's bound and
                // its wake-up for a value that has left.
                *sleep = None;
                if inner.has_no_handles() && inner.len() == 0 {
                    inner.unregister(*id, registered);
                    return Poll::Ready(None);
                }
                return Poll::Pending;
            };
            let sleep = match sleep {
                Some(sleep) => {
                    if sleep.deadline() != at {
                        sleep.reset(at);
                    }
                    sleep
                }
                None => sleep.insert(inner.wheel.sleep_until(at)),
            };
            // Outside the budget: this poll's unit is for a value.
            let mut unconstrained = coop::unconstrained(sleep);
            if Pin::new(&mut unconstrained).poll(cx).is_pending() {
                return Poll::Pending;
            }
            // The tick came: look again.
            inner.unregister(*id, registered);
        }
    }

    /// The next expired value; `None` once every [`ExpiryQueue`] handle is
    /// dropped and the queue is empty. Cancel safe: a value is taken only by
    /// the poll that returns it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let queue = tokio_wheel::ExpiryQueue::new();
    /// let mut consumer = queue.expirations();
    /// let key = queue.insert("entry", Duration::from_secs(2));
    /// let expired = consumer.next_expired().await.unwrap();
    /// assert_eq!(expired.key(), key);
    /// # }
    /// ```
    pub async fn next_expired(&mut self) -> Option<Expired<T>> {
        std::future::poll_fn(|cx| self.poll_expired(cx)).await
    }
}

impl<T> futures_core::Stream for Expirations<T> {
    type Item = Expired<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}

impl<T> Drop for Expirations<T> {
    fn drop(&mut self) {
        self.inner.unregister(self.id, &mut self.registered);
    }
}

impl<T> fmt::Debug for Expirations<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expirations")
            .field("waiting", &self.registered)
            .finish_non_exhaustive()
    }
}
