//! `ExpiryQueue`: the behaviour of tokio-util's `DelayQueue` tests that
//! applies (ported, on a 1 ms wheel and paused time), stale keys, bounds and
//! shutdown, a model check against a `BTreeMap`, and many producers and
//! consumers on a multi-thread runtime.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use tokio::time::Instant;
use tokio_test::{assert_pending, assert_ready, task};
use tokio_wheel::queue::{Expirations, Expired, Key};
use tokio_wheel::{ExpiryQueue, Wheel};

use common::{first_tick_at_or_after, ms, paused_current_thread, Rng};

/// A wheel of 1 ms ticks, as `DelayQueue`'s resolution.
fn wheel1() -> Wheel {
    Wheel::builder().tick(ms(1)).build().unwrap()
}

type Consumer<T> = task::Spawn<Expirations<T>>;

fn consumer<T>(q: &ExpiryQueue<T>) -> Consumer<T> {
    task::spawn(q.expirations())
}

fn poll<T>(c: &mut Consumer<T>) -> Poll<Option<Expired<T>>> {
    c.enter(|cx, c| c.get_mut().poll_expired(cx))
}

fn ready_value<T>(c: &mut Consumer<T>) -> T {
    match poll(c) {
        Poll::Ready(Some(e)) => e.into_inner(),
        Poll::Ready(None) => panic!("the stream ended"),
        Poll::Pending => panic!("nothing expired"),
    }
}

/// Waits on the same wheel, so that the consumer's tick fires first.
async fn wait(w: &Wheel, d: Duration) {
    w.sleep(d).await;
}

async fn wait_until(w: &Wheel, t: Instant) {
    w.sleep_until(t).await;
}

// ---------------------------------------------------------------------------
// Ported behaviour of tokio-util's tests/time_delay_queue.rs
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn single_immediate_delay() {
    let q = wheel1().expiry_queue();
    let mut c = consumer(&q);
    q.insert_at("foo", Instant::now());
    assert_eq!(ready_value(&mut c), "foo");
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn multi_immediate_delays() {
    let q = wheel1().expiry_queue();
    let mut c = consumer(&q);
    for v in ["1", "2", "3"] {
        q.insert_at(v, Instant::now());
    }
    let mut got: Vec<_> = (0..3).map(|_| ready_value(&mut c)).collect();
    got.sort_unstable();
    assert_eq!(got, ["1", "2", "3"]);
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn single_short_delay() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    q.insert_at("foo", Instant::now() + ms(5));
    assert_pending!(poll(&mut c));
    wait(&w, ms(1)).await;
    assert!(!c.is_woken());
    wait(&w, ms(4)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn multi_delay_at_start() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let delays = [1000u64, 2, 234, 23, 1, 80, 8, 12, 5000, 43];
    let start = Instant::now();
    for &d in &delays {
        q.insert_at(d, start + ms(d));
    }
    assert_pending!(poll(&mut c));
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    for d in sorted {
        assert!(!c.is_woken() || Instant::now() >= start + ms(d));
        wait_until(&w, start + ms(d)).await;
        assert!(c.is_woken(), "woken for {d}");
        assert_eq!(ready_value(&mut c), d);
        assert_pending!(poll(&mut c));
    }
}

#[tokio::test(start_paused = true)]
async fn insert_in_past_fires_immediately() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    wait(&w, ms(10)).await;
    q.insert_at("foo", now);
    assert_eq!(ready_value(&mut c), "foo");
}

#[tokio::test(start_paused = true)]
async fn remove_entry() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let key = q.insert_at("foo", Instant::now() + ms(5));
    assert_pending!(poll(&mut c));
    assert_eq!(q.remove(&key), Some("foo"));
    wait(&w, ms(10)).await;
    assert_pending!(poll(&mut c));
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn reset_entry() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let key = q.insert_at("foo", now + ms(5));
    assert_pending!(poll(&mut c));
    wait(&w, ms(1)).await;
    q.reset_at(&key, now + ms(10)).unwrap();
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(7)).await;
    assert_pending!(poll(&mut c), "not at the old deadline");
    wait_until(&w, now + ms(10)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
    assert_pending!(poll(&mut c));
    assert!(q.reset(&key, ms(1)).is_err(), "the key is stale now");
}

#[tokio::test(start_paused = true)]
async fn reset_to_past_wakes_pending_queue() {
    let q = wheel1().expiry_queue();
    let mut c = consumer(&q);
    let key = q.insert("foo", ms(10_000));
    assert_pending!(poll(&mut c));
    assert!(!c.is_woken());
    q.reset_at(&key, Instant::now() - ms(100)).unwrap();
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
    assert_pending!(poll(&mut c));
}

/// tokio #849: a reset much earlier than the first deadline.
#[tokio::test(start_paused = true)]
async fn reset_much_earlier() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    wait(&w, ms(1)).await;
    let key = q.insert_at("foo", now + ms(200));
    assert_pending!(poll(&mut c));
    wait(&w, ms(3)).await;
    q.reset_at(&key, now + ms(10)).unwrap();
    assert!(c.is_woken(), "an earlier deadline wakes the consumer");
    assert_pending!(poll(&mut c));
    wait(&w, ms(20)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
}

#[tokio::test(start_paused = true)]
async fn reset_twice() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    wait(&w, ms(1)).await;
    let key = q.insert_at("foo", now + ms(200));
    assert_pending!(poll(&mut c));
    wait(&w, ms(3)).await;
    q.reset_at(&key, now + ms(50)).unwrap();
    assert_pending!(poll(&mut c));
    wait(&w, ms(20)).await;
    q.reset_at(&key, now + ms(40)).unwrap();
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(39)).await;
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(40)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
}

#[tokio::test(start_paused = true)]
async fn repeatedly_reset_entry_inserted_as_expired() {
    let w = wheel1();
    wait(&w, ms(1000)).await;
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let key = q.insert_at("foo", now - ms(100));
    q.reset_at(&key, now + ms(100)).unwrap();
    q.reset_at(&key, now + ms(50)).unwrap();
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(60)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
    assert_pending!(poll(&mut c));
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn remove_expired_item() {
    let w = wheel1();
    let q = w.expiry_queue();
    let now = Instant::now();
    wait(&w, ms(10)).await;
    let key = q.insert_at("foo", now);
    assert_eq!(q.remove(&key), Some("foo"));
    assert!(q.is_empty());
}

/// An item that has expired but was not taken can still be removed, and
/// is then not handed out.
#[tokio::test(start_paused = true)]
async fn remove_fired_item_before_it_is_taken() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let a = q.insert("a", ms(5));
    q.insert("b", ms(5));
    assert_pending!(poll(&mut c));
    wait(&w, ms(5)).await;
    let first = ready_value(&mut c);
    if first == "b" {
        assert_eq!(q.remove(&a), Some("a"));
    } else {
        assert!(q.remove(&a).is_none());
        assert_eq!(ready_value(&mut c), "b");
    }
    assert_pending!(poll(&mut c));
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn remove_at_level_boundaries() {
    // Deadlines on the first ticks of the next revolution (level 0 now),
    // of level 1 and of level 2 of a 64-slot wheel.
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let keys: Vec<Key> = [64u64, 128, 32768, 32769]
        .iter()
        .map(|&d| q.insert_at(d, now + ms(d)))
        .collect();
    assert_pending!(poll(&mut c));
    wait(&w, ms(64)).await;
    for (k, d) in keys.iter().zip([64u64, 128, 32768, 32769]) {
        assert_eq!(q.remove(k), Some(d));
    }
    assert!(q.is_empty());
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn expires_before_last_insert() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    q.insert_at("foo", now + ms(10_000));
    // Polled: the consumer sleeps towards 10 s.
    assert_pending!(poll(&mut c));
    q.insert_at("bar", now + ms(600));
    assert!(c.is_woken(), "an earlier insert wakes the consumer");
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(600)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "bar");
}

#[tokio::test(start_paused = true)]
async fn multi_reset() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let one = q.insert_at("one", now + ms(200));
    let two = q.insert_at("two", now + ms(250));
    assert_pending!(poll(&mut c));
    q.reset_at(&one, now + ms(300)).unwrap();
    q.reset_at(&two, now + ms(350)).unwrap();
    q.reset_at(&one, now + ms(400)).unwrap();
    wait_until(&w, now + ms(310)).await;
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(350)).await;
    assert_eq!(ready_value(&mut c), "two");
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(400)).await;
    assert_eq!(ready_value(&mut c), "one");
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn expire_first_key_when_reset_to_expire_earlier() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let one = q.insert_at("one", now + ms(200));
    q.insert_at("two", now + ms(250));
    assert_pending!(poll(&mut c));
    q.reset_at(&one, now + ms(100)).unwrap();
    wait_until(&w, now + ms(100)).await;
    assert_eq!(ready_value(&mut c), "one");
}

#[tokio::test(start_paused = true)]
async fn expire_second_key_when_reset_to_expire_earlier() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    q.insert_at("one", now + ms(200));
    let two = q.insert_at("two", now + ms(250));
    assert_pending!(poll(&mut c));
    q.reset_at(&two, now + ms(100)).unwrap();
    wait_until(&w, now + ms(100)).await;
    assert_eq!(ready_value(&mut c), "two");
}

#[tokio::test(start_paused = true)]
async fn reset_first_expiring_item_to_expire_later() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let one = q.insert_at("one", now + ms(200));
    q.insert_at("two", now + ms(250));
    assert_pending!(poll(&mut c));
    q.reset_at(&one, now + ms(300)).unwrap();
    wait_until(&w, now + ms(250)).await;
    assert_eq!(ready_value(&mut c), "two");
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(300)).await;
    assert_eq!(ready_value(&mut c), "one");
}

#[tokio::test(start_paused = true)]
async fn insert_before_first_after_poll() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    q.insert_at("one", now + ms(200));
    assert_pending!(poll(&mut c));
    q.insert_at("two", now + ms(100));
    wait_until(&w, now + ms(99)).await;
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(100)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "two");
}

#[tokio::test(start_paused = true)]
async fn insert_after_ready_poll() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    for v in ["1", "2", "3"] {
        q.insert_at(v, now + ms(250));
    }
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(250)).await;
    assert!(c.is_woken());
    let mut res = vec![];
    while let Poll::Ready(Some(e)) = poll(&mut c) {
        res.push(e.into_inner());
        q.insert_at("foo", now + ms(500));
    }
    res.sort_unstable();
    assert_eq!(res, ["1", "2", "3"]);
    assert_eq!(q.len(), 3);
}

/// A reset to a later deadline is lazy: the consumer may wake at the old
/// tick, but the value comes out at the new deadline, not before.
#[tokio::test(start_paused = true)]
async fn reset_later_after_slot_starts() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let foo = q.insert_at("foo", now + ms(100));
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(80)).await;
    assert!(!c.is_woken());
    q.reset_at(&foo, now + ms(120)).unwrap();
    wait_until(&w, now + ms(119)).await;
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(120)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
}

#[tokio::test(start_paused = true)]
async fn reset_earlier_after_slot_starts() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let foo = q.insert_at("foo", now + ms(200));
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(80)).await;
    assert!(!c.is_woken());
    q.reset_at(&foo, now + ms(120)).unwrap();
    assert!(c.is_woken());
    assert_pending!(poll(&mut c));
    wait_until(&w, now + ms(119)).await;
    assert!(!c.is_woken());
    wait_until(&w, now + ms(120)).await;
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "foo");
}

#[tokio::test(start_paused = true)]
async fn reset_inserted_expired() {
    let w = wheel1();
    wait(&w, ms(1000)).await;
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let key = q.insert_at("foo", now - ms(100));
    q.reset_at(&key, now + ms(100)).unwrap();
    assert_eq!(q.len(), 1);
    assert_pending!(poll(&mut c));
    wait(&w, ms(200)).await;
    assert_eq!(ready_value(&mut c), "foo");
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn insert_in_past_after_poll_fires_immediately() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    q.insert_at("foo", now + ms(200));
    assert_pending!(poll(&mut c));
    wait(&w, ms(80)).await;
    assert!(!c.is_woken());
    q.insert_at("bar", now + ms(40));
    assert!(c.is_woken());
    assert_eq!(ready_value(&mut c), "bar");
}

#[tokio::test(start_paused = true)]
async fn item_expiry_greater_than_wheel() {
    // A value past the reach of every level but the top.
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let far = Duration::from_secs(60 * 60 * 24 * 365 * 5);
    let key = q.insert(0, far);
    assert_pending!(poll(&mut c));
    assert_eq!(q.deadline(&key), Some(Instant::now() + far));
    wait(&w, far - ms(1)).await;
    assert_pending!(poll(&mut c));
    wait(&w, ms(1)).await;
    assert_eq!(ready_value(&mut c), 0);
}

/// `DelayQueue` ends its stream when empty; a shared queue is `Pending`
/// (another task may insert), and ends once every handle is dropped.
#[tokio::test(start_paused = true)]
async fn empty_queue_is_pending_until_the_last_handle_goes() {
    let q = wheel1().expiry_queue();
    let mut c = consumer(&q);
    let key = q.insert(0, ms(10_000));
    assert_pending!(poll(&mut c));
    q.remove(&key);
    assert_pending!(poll(&mut c));
    q.insert(1, ms(0));
    assert!(c.is_woken(), "an insert wakes a consumer of an empty queue");
    assert_eq!(ready_value(&mut c), 1);
    assert_pending!(poll(&mut c));
    let other = q.clone();
    drop(q);
    assert!(!c.is_woken(), "a handle is left");
    drop(other);
    assert!(c.is_woken());
    assert!(assert_ready!(poll(&mut c)).is_none());
}

#[tokio::test(start_paused = true)]
async fn clear_empties_the_queue_and_stales_keys() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let key = q.insert("foo", ms(1000));
    assert_pending!(poll(&mut c));
    q.clear();
    assert!(q.is_empty());
    assert_eq!(q.remove(&key), None);
    wait(&w, ms(1000)).await;
    assert_pending!(poll(&mut c));
}

// ---------------------------------------------------------------------------
// peek, capacity, shrink_to_fit (tokio-util's `peek` and `compact_*` tests)
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn peek() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let key = q.insert_at("foo", now + ms(5));
    let key2 = q.insert_at("bar", now);
    let key3 = q.insert_at("baz", now + ms(10));
    assert_eq!(q.peek(), Some(key2));

    wait(&w, ms(6)).await;
    assert_eq!(q.peek(), Some(key2), "due values first, in deadline order");
    assert_eq!(ready_value(&mut c), "bar");
    assert_eq!(q.peek(), Some(key));
    assert_eq!(ready_value(&mut c), "foo");
    assert_eq!(q.peek(), Some(key3));
    assert_pending!(poll(&mut c));

    wait(&w, ms(5)).await;
    assert_eq!(q.peek(), Some(key3));
    assert_eq!(ready_value(&mut c), "baz");
    assert_eq!(q.peek(), None);
}

#[tokio::test(start_paused = true)]
async fn peek_follows_resets_and_removals() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let a = q.insert("a", ms(10));
    let b = q.insert("b", ms(20));
    let far = q.insert("far", Duration::from_secs(3600)); // an upper level
    assert_eq!(q.peek(), Some(a));
    // A later deadline leaves `a` linked at its old tick: peek must not
    // answer with it.
    q.reset(&a, ms(30)).unwrap();
    assert_eq!(q.peek(), Some(b));
    q.remove(&b);
    assert_eq!(q.peek(), Some(a));
    q.reset(&far, ms(5)).unwrap();
    assert_eq!(q.peek(), Some(far));
    assert_pending!(poll(&mut c));
    wait(&w, ms(5)).await;
    assert_eq!(q.peek(), Some(far));
    assert_eq!(ready_value(&mut c), "far");
    assert_eq!(q.peek(), Some(a));
    q.clear();
    assert_eq!(q.peek(), None);
}

#[tokio::test(start_paused = true)]
async fn peek_across_shards() {
    let w = Wheel::builder().tick(ms(1)).shards(4).build().unwrap();
    let q = w.expiry_queue();
    let (tx, rx) = std::sync::mpsc::channel();
    // Inserted from threads of their own: most likely other shards.
    for i in 0..4u64 {
        let q = q.clone();
        let tx = tx.clone();
        let deadline = Instant::now() + ms(100 - 10 * i);
        std::thread::spawn(move || tx.send((i, q.insert_at(i, deadline))).unwrap())
            .join()
            .unwrap();
    }
    let keys: HashMap<u64, Key> = rx.try_iter().collect();
    assert_eq!(q.peek(), Some(keys[&3]));
    q.remove(&keys[&3]);
    assert_eq!(q.peek(), Some(keys[&2]));
    q.reset(&keys[&0], ms(1)).unwrap();
    assert_eq!(q.peek(), Some(keys[&0]));
}

#[tokio::test(start_paused = true)]
async fn capacity_counts_places_without_allocating() {
    let q = wheel1().expiry_queue();
    assert_eq!(q.capacity(), 0);
    let keys: Vec<Key> = (0..100).map(|i| q.insert(i, ms(1000))).collect();
    assert!(
        q.capacity() >= 100,
        "capacity {} below 100 values",
        q.capacity()
    );
    for key in &keys[..50] {
        q.remove(key);
    }
    let cap = q.capacity();
    assert!(cap >= 100, "capacity {cap}: places before a value stay");
    for i in 0..50 {
        q.insert(i, ms(1000));
    }
    assert_eq!(q.capacity(), cap, "freed places are reused");
}

#[tokio::test(start_paused = true)]
async fn compact_remove_empty() {
    let q = wheel1().expiry_queue();
    let key1 = q.insert("foo", ms(10));
    let key2 = q.insert("bar", ms(10));
    q.remove(&key1);
    q.remove(&key2);
    q.shrink_to_fit();
    assert_eq!(q.capacity(), 0);
}

#[tokio::test(start_paused = true)]
async fn compact_expire_empty() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    q.insert("foo", ms(10));
    q.insert("bar", ms(10));
    wait(&w, ms(10)).await;
    for _ in 0..2 {
        ready_value(&mut c);
    }
    q.shrink_to_fit();
    assert_eq!(q.len(), 0);
    assert_eq!(q.capacity(), 0);
}

/// `DelayQueue::compact` remaps keys; ours keep every key valid, so only
/// the free places after the last value go.
#[tokio::test(start_paused = true)]
async fn compact_keeps_keys() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let keys: Vec<Key> = (0..100u64).map(|i| q.insert(i, ms(10 + i))).collect();
    for key in &keys[1..50] {
        q.remove(key);
    }
    for key in &keys[60..] {
        q.remove(key);
    }
    q.shrink_to_fit();
    let after = q.capacity();
    assert!(
        (60..100).contains(&after),
        "capacity {after}: the places after the last value go, not the holes before it"
    );
    // Every key left still names its value; the stale ones stay stale.
    assert_eq!(q.len(), 11);
    assert_eq!(q.remove(&keys[0]), Some(0));
    assert_eq!(q.remove(&keys[1]), None);
    assert_eq!(q.remove(&keys[99]), None);
    q.reset(&keys[59], ms(5)).unwrap();
    assert_eq!(q.deadline(&keys[55]), Some(Instant::now() + ms(65)));
    // New values reuse the holes and get keys of their own.
    let new = q.insert(1000, ms(5));
    assert!(!keys.contains(&new));
    wait(&w, ms(5)).await;
    let mut first = [ready_value(&mut c), ready_value(&mut c)];
    first.sort_unstable();
    assert_eq!(first, [59, 1000]);
    wait(&w, ms(65)).await;
    let rest: Vec<u64> = (0..9).map(|_| ready_value(&mut c)).collect();
    assert_eq!(rest, (50..59).collect::<Vec<_>>());
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn compact_change_deadline() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    let key1 = q.insert_at("foo1", now + ms(10));
    let key2 = q.insert_at("foo2", now + ms(10));
    let key3 = q.insert_at("foo3", now + ms(10));
    q.remove(&key1);
    q.remove(&key2);
    q.shrink_to_fit();
    q.reset_at(&key3, now + ms(20)).unwrap();
    wait(&w, ms(10)).await;
    assert_pending!(poll(&mut c));
    wait(&w, ms(10)).await;
    let e = assert_ready!(poll(&mut c)).unwrap();
    assert_eq!((e.key(), *e.get_ref()), (key3, "foo3"));
    assert_eq!(q.peek(), None);
}

// ---------------------------------------------------------------------------
// Wake-on-empty (tokio #6751, #8320): a consumer waiting for a value that
// leaves by `remove` or `clear` is woken to see the empty queue
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn remove_last_wakes_the_consumer() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let key = q.insert("foo", ms(1000));
    assert_pending!(poll(&mut c));
    assert_eq!(w.stats().pending, 1, "the consumer sleeps on the wheel");
    assert!(!c.is_woken());

    q.remove(&key);
    assert!(c.is_woken(), "removing the last value wakes the consumer");
    // Empty, and a handle is left: `Pending`, waiting for an insert, its
    // sleep given back.
    assert_pending!(poll(&mut c));
    assert_eq!(w.stats().pending, 0, "the consumer's sleep is gone");
    wait(&w, ms(2000)).await;
    assert!(!c.is_woken(), "no wake-up for the removed value's deadline");

    q.insert("bar", ms(10));
    assert!(c.is_woken(), "an insert wakes it");
    assert_pending!(poll(&mut c));
    wait(&w, ms(10)).await;
    assert_eq!(ready_value(&mut c), "bar");
    assert_pending!(poll(&mut c));
    drop(q);
    assert!(c.is_woken());
    assert!(assert_ready!(poll(&mut c)).is_none(), "no handle: the end");
}

#[tokio::test(start_paused = true)]
async fn remove_not_last_does_not_wake() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let first = q.insert("first", ms(10));
    let second = q.insert("second", ms(20));
    assert_pending!(poll(&mut c));
    q.remove(&second);
    assert!(!c.is_woken(), "a value is left");
    q.remove(&first);
    assert!(c.is_woken(), "the last one");
    assert_pending!(poll(&mut c));
}

#[tokio::test(start_paused = true)]
async fn clear_wakes_the_consumer() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    for i in 0..3 {
        q.insert(i, ms(1000 * (i + 1)));
    }
    assert_pending!(poll(&mut c));
    assert!(!c.is_woken());
    q.clear();
    assert!(c.is_woken(), "clear wakes the consumer");
    assert_pending!(poll(&mut c));
    assert_eq!(w.stats().pending, 0, "the consumer's sleep is gone");
    wait(&w, ms(5000)).await;
    assert!(!c.is_woken());
    drop(q);
    assert!(c.is_woken());
    assert!(assert_ready!(poll(&mut c)).is_none());
}

#[tokio::test(start_paused = true)]
async fn drain_wakes_every_consumer_waiting_for_a_tick() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut waiting = [consumer(&q), consumer(&q)];
    q.insert(0, ms(100));
    for c in &mut waiting {
        assert_pending!(poll(c));
    }
    assert_eq!(q.drain().len(), 1);
    for c in &mut waiting {
        assert!(c.is_woken());
        assert_pending!(poll(c));
    }
    // Consumers already waiting for an insert are not woken for nothing.
    q.clear();
    for c in &waiting {
        assert!(!c.is_woken());
    }
}

/// The last values leave from two threads, most likely two shards: the
/// second removal sees the queue empty and wakes the consumer.
#[tokio::test(start_paused = true)]
async fn removals_from_several_shards_wake_the_consumer() {
    let w = Wheel::builder().tick(ms(1)).shards(4).build().unwrap();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let deadline = Instant::now() + ms(100);
    let keys: Vec<Key> = (0..4u64)
        .map(|i| {
            let q = q.clone();
            std::thread::spawn(move || q.insert_at(i, deadline))
                .join()
                .unwrap()
        })
        .collect();
    assert_pending!(poll(&mut c));
    for key in &keys[..3] {
        let q = q.clone();
        let key = *key;
        std::thread::spawn(move || q.remove(&key)).join().unwrap();
        assert!(!c.is_woken(), "values are left");
    }
    let q2 = q.clone();
    std::thread::spawn(move || q2.remove(&keys[3]))
        .join()
        .unwrap();
    assert!(c.is_woken(), "the last removal wakes the consumer");
    assert_pending!(poll(&mut c));
}

/// The consumer's sleep holds a place under `max_pending` while it waits;
/// a consumer of an emptied queue gives it back.
#[tokio::test(start_paused = true)]
async fn an_emptied_queue_gives_back_the_consumers_place() {
    let w = Wheel::builder().tick(ms(1)).max_pending(2).build().unwrap();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let key = q.try_insert(0, ms(100)).unwrap();
    assert_pending!(poll(&mut c));
    assert!(q.try_insert(1, ms(100)).is_err(), "the value and the sleep");
    q.remove(&key);
    assert_pending!(poll(&mut c));
    q.try_insert(2, ms(100)).unwrap();
    q.try_insert(3, ms(100)).unwrap();
}

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn stale_keys_never_touch_newer_entries() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    // Removed.
    let removed = q.insert(1, ms(50));
    assert_eq!(q.remove(&removed), Some(1));
    // Reuses the slot.
    let live = q.insert(2, ms(50));
    assert_eq!(q.remove(&removed), None);
    assert!(q.reset(&removed, ms(1)).is_err());
    assert_eq!(q.deadline(&removed), None);
    // Expired and taken.
    let taken = q.insert(3, ms(0));
    assert_eq!(ready_value(&mut c), 3);
    let newer = q.insert(4, ms(50));
    assert_eq!(q.remove(&taken), None);
    assert!(q.reset(&taken, ms(1)).is_err());
    // From another queue.
    let other = w.expiry_queue::<i32>();
    let foreign = other.insert(5, ms(50));
    assert_eq!(q.remove(&foreign), None);
    assert!(q.reset(&foreign, ms(1)).is_err());
    assert_eq!(other.remove(&live), None);
    // Cleared.
    let cleared = q.insert(6, ms(50));
    let drained = q.drain();
    assert_eq!(drained.len(), 3);
    assert_eq!(q.remove(&cleared), None);
    let fresh = q.insert(7, ms(50));
    assert_eq!(q.remove(&live), None);
    assert_eq!(q.remove(&newer), None);
    assert_eq!(q.remove(&fresh), Some(7));
    assert_eq!(other.remove(&foreign), Some(5));
}

#[tokio::test(start_paused = true)]
async fn expired_carries_key_and_deadline() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = q.expirations();
    let at = Instant::now() + Duration::from_micros(2500);
    let key = q.insert_at("x", at);
    let e = c.next_expired().await.unwrap();
    assert_eq!((e.key(), e.deadline(), *e.get_ref()), (key, at, "x"));
    assert_eq!(
        Instant::now(),
        at + Duration::from_micros(500),
        "the next tick"
    );
}

// ---------------------------------------------------------------------------
// Bounds, shutdown and drop
// ---------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn max_pending_applies_and_places_come_back() {
    let w = Wheel::builder().max_pending(3).build().unwrap();
    let q = w.expiry_queue();
    let mut c = q.expirations();
    let a = q.try_insert(1, ms(10)).unwrap();
    q.try_insert(2, ms(20)).unwrap();
    q.try_insert(3, ms(30)).unwrap();
    let err = q.try_insert(4, ms(10)).unwrap_err();
    assert_eq!(err.max_pending(), Some(3));
    assert!(!err.is_shutdown());
    assert!(err.to_string().contains("maximum of 3"), "{err}");
    assert_eq!(err.into_value(), 4);
    // Sleeps count under the same bound.
    assert!(w.try_sleep(ms(5)).is_err());
    // Removing gives a place back; so does expiring.
    q.remove(&a);
    q.try_insert(4, ms(40)).unwrap();
    assert!(q.try_insert(5, ms(10)).is_err());
    assert_eq!(c.next_expired().await.unwrap().into_inner(), 2);
    q.try_insert(5, ms(10)).unwrap();
    // `insert` is never refused but counts.
    q.insert(6, ms(100));
    assert!(q.try_insert(7, ms(10)).is_err());
    q.clear();
    q.try_insert(7, ms(10)).unwrap();
    drop(c);
    drop(q);
    // Values dropped with the queue give their places back.
    let sleeps: Vec<_> = (0..3).map(|_| w.try_sleep(ms(5)).unwrap()).collect();
    assert_eq!(sleeps.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn after_shutdown_consumers_still_get_every_value() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = q.expirations();
    let start = Instant::now();
    for i in 1..=5u64 {
        q.insert(i, ms(i * 10));
    }
    assert_eq!(c.next_expired().await.unwrap().into_inner(), 1);
    assert!(w.shutdown().is_empty());
    let err = q.try_insert(9, ms(1)).unwrap_err();
    assert!(err.is_shutdown());
    q.insert(6, ms(5)); // `insert` still queues
    let mut got = vec![];
    for _ in 0..5 {
        let e = c.next_expired().await.unwrap();
        assert!(Instant::now() >= e.deadline(), "never early after shutdown");
        got.push(e.into_inner());
    }
    assert_eq!(got, [6, 2, 3, 4, 5], "6 is due at 15 ms");
    assert_eq!(start.elapsed(), ms(50));
}

#[tokio::test(start_paused = true)]
async fn drain_hands_back_every_value_in_deadline_order() {
    let w = wheel1();
    let q = w.expiry_queue();
    let mut c = consumer(&q);
    let now = Instant::now();
    q.insert_at("due", now);
    let keys: Vec<Key> = [30u64, 10, 20]
        .iter()
        .map(|&d| q.insert_at(d.to_string().leak() as &str, now + ms(d)))
        .collect();
    q.reset_at(&keys[0], now + ms(5)).unwrap();
    let drained = q.drain();
    let got: Vec<_> = drained.iter().map(|e| *e.get_ref()).collect();
    assert_eq!(got, ["due", "30", "10", "20"]);
    assert_eq!(drained[1].key(), keys[0]);
    assert!(q.is_empty());
    assert_pending!(poll(&mut c));
}

#[test]
fn dropping_the_last_handle_and_consumer_drops_the_values() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let q = wheel1().expiry_queue();
        for i in 0..10 {
            q.insert(Counted(dropped.clone()), ms(i));
        }
        let c = q.expirations();
        drop(q);
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "a consumer keeps them");
        drop(c);
        assert_eq!(dropped.load(Ordering::SeqCst), 10);
    });
}

#[tokio::test(start_paused = true)]
async fn consumers_drain_the_queue_after_the_last_handle_goes() {
    let q = wheel1().expiry_queue();
    for i in 0..100u64 {
        q.insert(i, ms(100 - i));
    }
    let a = q.expirations();
    let b = q.expirations();
    drop(q);
    let (a, b) = tokio::join!(
        a.map(|e| e.into_inner()).collect::<Vec<_>>(),
        b.map(|e| e.into_inner()).collect::<Vec<_>>()
    );
    let mut all: Vec<u64> = a.into_iter().chain(b).collect();
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------
// Timing on paused time
// ---------------------------------------------------------------------------

/// Thousands of random deadlines, resets and removes: every value comes out
/// once, none early, none a tick or more late, in deadline order across ticks.
#[tokio::test(start_paused = true)]
async fn paused_time_none_early_late_lost_or_duplicated() {
    let tick = ms(10);
    let w = Wheel::builder().tick(tick).build().unwrap();
    let origin = Instant::now();
    let q = w.expiry_queue();
    let mut rng = Rng::new(7);
    let mut expected = HashMap::new();
    let mut keys = Vec::new();
    for i in 0..5000u64 {
        let at = origin + Duration::from_micros(rng.range(0, 5_000_000));
        keys.push((i, q.insert_at(i, at)));
        expected.insert(i, at);
    }
    rng.shuffle(&mut keys);
    for &(i, key) in &keys[..1000] {
        assert_eq!(q.remove(&key), Some(i));
        expected.remove(&i);
    }
    for &(i, key) in &keys[1000..3000] {
        let at = origin + Duration::from_micros(rng.range(0, 6_000_000));
        q.reset_at(&key, at).unwrap();
        expected.insert(i, at);
    }
    let consumer = q.expirations();
    drop(q);
    let got: Vec<(Instant, Expired<u64>)> = consumer.map(|e| (Instant::now(), e)).collect().await;
    assert_eq!(got.len(), expected.len(), "every value once");
    let mut seen = HashSet::new();
    let mut last_tick = origin;
    for (at, e) in &got {
        let v = *e.get_ref();
        assert!(seen.insert(v), "{v} twice");
        assert_eq!(e.deadline(), expected[&v]);
        assert!(*at >= e.deadline(), "{v} early");
        assert!(*at - e.deadline() < tick, "{v} a tick late");
        assert!(*at >= last_tick, "out of order");
        last_tick = *at;
    }
}

/// A slot of the wheel's third level holding 20 000 keys: the firing that
/// enters it links the keys of its first 64 ticks only, and the consumer
/// links the rest in steps between its polls, waking itself to come back,
/// rather than all at once, under the shard's lock, as the first tick past
/// those 64 fires. Keys removed and reset between the steps leave or move;
/// every other key still comes out once, none early.
#[tokio::test(start_paused = true)]
async fn a_large_upper_slot_is_linked_in_steps_between_polls() {
    let w = wheel1();
    let origin = Instant::now();
    let q = w.expiry_queue();
    // Ticks of 1 ms: a slot of level 2 spans 32768 of them, so every key
    // below is in the one from 32768 ms to 65536 ms.
    let first = origin + ms(32772);
    q.insert_at(u64::MAX, first);
    let n = 20_000u64;
    let mut deadlines = HashMap::new();
    let mut keys = Vec::new();
    for i in 0..n {
        let at = origin + ms(32872) + Duration::from_micros(i * 150);
        keys.push(q.insert_at(i, at));
        deadlines.insert(i, at);
    }
    let mut c = consumer(&q);
    assert_pending!(poll(&mut c));
    wait_until(&w, first).await;
    assert_eq!(ready_value(&mut c), u64::MAX);
    let mut steps = 0;
    loop {
        assert_pending!(poll(&mut c));
        if !c.is_woken() {
            break;
        }
        steps += 1;
        assert!(steps < 100, "a consumer that wakes itself for ever");
        if steps == 1 {
            // Between two steps: some keys linked, most still deferred.
            for i in (0..n).step_by(97) {
                assert_eq!(q.remove(&keys[i as usize]), Some(i));
                deadlines.remove(&i);
            }
            for i in (1..n).step_by(89).filter(|i| i % 97 != 0) {
                let at = origin + ms(32822 + i % 3000);
                q.reset_at(&keys[i as usize], at).unwrap();
                deadlines.insert(i, at);
            }
        }
    }
    assert!(
        steps >= 2,
        "{n} keys linked in {steps} steps after the first"
    );
    let end = origin + ms(35972);
    let mut seen = HashSet::new();
    while seen.len() < deadlines.len() {
        assert!(
            Instant::now() < end,
            "keys lost: {} of {} seen",
            seen.len(),
            deadlines.len()
        );
        match poll(&mut c) {
            Poll::Ready(Some(e)) => {
                let v = *e.get_ref();
                assert_eq!(e.deadline(), deadlines[&v], "{v}'s deadline");
                let late = Instant::now()
                    .checked_duration_since(e.deadline())
                    .unwrap_or_else(|| panic!("{v} early"));
                assert!(late < ms(2), "{v} {late:?} late");
                assert!(seen.insert(v), "{v} twice");
            }
            Poll::Ready(None) => panic!("the stream ended"),
            Poll::Pending => wait(&w, ms(1)).await,
        }
    }
    drop(q);
    assert!(matches!(poll(&mut c), Poll::Ready(None)));
}

/// A tick holding more keys than one poll fires (4096; the 10 000 here
/// take three steps) comes out over several polls, in deadline order across
/// ticks all the same: a key reset to a later tick, found due in the first
/// step, waits for the rest of its old tick and for the ticks between, and
/// so does a key inserted between two steps with a deadline already past.
#[tokio::test(start_paused = true)]
async fn a_large_tick_fired_in_steps_keeps_the_order_across_ticks() {
    let w = wheel1();
    let origin = Instant::now();
    let q = w.expiry_queue();
    let n = 10_000u64;
    let mut deadlines = HashMap::new();
    for i in 0..n {
        let at = origin + ms(50);
        q.insert_at(i, at);
        deadlines.insert(i, at);
    }
    for i in n..n + 5 {
        let at = origin + ms(51) + Duration::from_micros(100 * (i - n));
        q.insert_at(i, at);
        deadlines.insert(i, at);
    }
    // Queued last at 50 ms, so first in its tick's list: fired in the first
    // step, where it is found moved to 53 ms and already due.
    let moved = q.insert_at(u64::MAX, origin + ms(50));
    let at = origin + ms(53);
    q.reset_at(&moved, at).unwrap();
    deadlines.insert(u64::MAX, at);
    let mut c = consumer(&q);
    assert_pending!(poll(&mut c));
    wait_until(&w, origin + ms(55)).await;
    let mut last = origin;
    let mut seen = HashSet::new();
    let mut pending = 0;
    let late = n + 100;
    while seen.len() < deadlines.len() {
        if seen.len() == 1 && !deadlines.contains_key(&late) {
            // The first step stopped in the 50 ms tick.
            let at = origin + ms(54);
            q.insert_at(late, at);
            deadlines.insert(late, at);
        }
        match poll(&mut c) {
            Poll::Ready(Some(e)) => {
                let v = *e.get_ref();
                assert_eq!(e.deadline(), deadlines[&v], "{v}'s deadline");
                assert!(e.deadline() <= Instant::now(), "{v} early");
                // Every deadline above is on its tick but the 51 ms ones,
                // which all round up to 52 ms.
                let tick = first_tick_at_or_after(origin, ms(1), e.deadline());
                assert!(
                    tick >= last,
                    "{v} (tick at {tick:?}) after a value of {last:?}"
                );
                last = tick;
                assert!(seen.insert(v), "{v} twice");
            }
            Poll::Ready(None) => panic!("the stream ended"),
            Poll::Pending => {
                // Out of the cooperative budget, or a step with nothing
                // to hand out yet: woken either way, at once.
                pending += 1;
                assert!(pending < 1000, "a consumer that wakes itself for ever");
                tokio::task::yield_now().await;
                assert!(
                    c.is_woken(),
                    "a due key left waiting after {} of {}",
                    seen.len(),
                    deadlines.len()
                );
            }
        }
    }
    assert!(seen.contains(&u64::MAX) && seen.contains(&late));
    assert_eq!(last, origin + ms(54), "the key inserted due came out last");
    assert_pending!(poll(&mut c));
}

/// Clearing the queue while a large slot is linked in steps ends the steps:
/// the next poll waits, woken by nothing.
#[tokio::test(start_paused = true)]
async fn clearing_the_queue_ends_the_steps() {
    let w = wheel1();
    let origin = Instant::now();
    let q = w.expiry_queue();
    q.insert_at(0, origin + ms(32772));
    for i in 1..20_000u64 {
        q.insert_at(i, origin + ms(32872) + Duration::from_micros(i * 150));
    }
    let mut c = consumer(&q);
    assert_pending!(poll(&mut c));
    wait_until(&w, origin + ms(32772)).await;
    assert_eq!(ready_value(&mut c), 0);
    assert_pending!(poll(&mut c));
    assert!(c.is_woken(), "the first step leaves keys to link");
    q.clear();
    assert_pending!(poll(&mut c));
    assert!(!c.is_woken(), "a step after the queue was cleared");
    wait(&w, ms(4000)).await;
    assert_pending!(poll(&mut c));
    assert_eq!(q.len(), 0);
}

// ---------------------------------------------------------------------------
// Model check
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// Insert a value due this many ms from now (may be 0 or past).
    Insert(i64),
    /// Reset the n-th key (mod the keys made) to this many ms from now.
    Reset(usize, i64),
    Remove(usize),
    Advance(u64),
    Poll,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (-5i64..300).prop_map(Op::Insert),
        2 => (any::<usize>(), -5i64..300).prop_map(|(k, d)| Op::Reset(k, d)),
        1 => any::<usize>().prop_map(Op::Remove),
        2 => (0u64..120).prop_map(Op::Advance),
        2 => Just(Op::Poll),
    ]
}

fn at(now: Instant, offset: i64) -> Instant {
    if offset >= 0 {
        now + ms(offset as u64)
    } else {
        now - ms(offset.unsigned_abs())
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES for a deeper run.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Insert, reset, remove, advance and poll agree with a `BTreeMap` model:
    /// a poll hands out exactly the values due at the current tick (1 ms
    /// ticks, deadlines on whole ms), in deadline order, stale keys do
    /// nothing, and `peek` names a value with the earliest deadline.
    ///
    /// Deadline order is the order of the ticks deadlines round up to (the
    /// queue's documented promise): with 1 ms ticks and whole-ms deadlines
    /// that is the deadlines' own order, except before the wheel's first
    /// tick, where every deadline rounds up to tick 0 (two values inserted
    /// 0 and 1 ms in the past before any time passed share it).
    #[test]
    fn agrees_with_a_btreemap(ops in proptest::collection::vec(op(), 1..80)) {
        paused_current_thread().block_on(async move {
            // Paused: the wheel's tick 0 is this instant.
            let origin = Instant::now();
            let q = wheel1().expiry_queue::<u32>();
            let mut c = consumer(&q);
            let mut model: BTreeMap<u32, Instant> = BTreeMap::new();
            let mut keys: Vec<(u32, Key)> = Vec::new();
            let mut next = 0u32;
            for op in ops {
                let now = Instant::now();
                match op {
                    Op::Insert(d) => {
                        let key = q.insert_at(next, at(now, d));
                        model.insert(next, at(now, d));
                        keys.push((next, key));
                        next += 1;
                    }
                    Op::Reset(k, d) if !keys.is_empty() => {
                        let (v, key) = keys[k % keys.len()];
                        let res = q.reset_at(&key, at(now, d));
                        assert_eq!(res.is_ok(), model.contains_key(&v));
                        if let Some(deadline) = model.get_mut(&v) {
                            *deadline = at(now, d);
                        }
                    }
                    Op::Remove(k) if !keys.is_empty() => {
                        let (v, key) = keys[k % keys.len()];
                        assert_eq!(q.remove(&key), model.remove(&v).map(|_| v));
                    }
                    Op::Advance(n) => tokio::time::advance(ms(n)).await,
                    Op::Poll => {
                        let mut got = Vec::new();
                        while let Poll::Ready(Some(e)) = poll(&mut c) {
                            got.push((e.deadline(), e.into_inner()));
                        }
                        let mut due: Vec<(Instant, u32)> = model
                            .iter()
                            .filter(|(_, &d)| d <= now)
                            .map(|(&v, &d)| (d, v))
                            .collect();
                        due.sort_unstable();
                        let mut sorted = got.clone();
                        sorted.sort_unstable();
                        assert_eq!(sorted, due, "what is due at {:?}", now);
                        // Each deadline's tick, as an instant: before tick 0, tick 0.
                        let ticks: Vec<_> = got.iter().map(|g| g.0.max(origin)).collect();
                        common::assert_non_decreasing(&ticks, "deadlines' ticks");
                        for (_, v) in got {
                            model.remove(&v);
                        }
                    }
                    _ => {}
                }
                assert_eq!(q.len(), model.len());
                // `peek` names a value with the model's earliest deadline,
                // and is `None` only for an empty queue.
                let earliest = model.values().min().copied();
                match q.peek() {
                    None => assert!(model.is_empty(), "peek is None, {} values left", model.len()),
                    Some(key) => {
                        let (v, _) = *keys.iter().find(|(_, k)| *k == key).expect("a key of ours");
                        assert_eq!(model.get(&v).copied(), earliest, "peek named {v}");
                        assert_eq!(q.deadline(&key), earliest);
                    }
                }
            }
        });
    }
}

// ---------------------------------------------------------------------------
// Many tasks on a multi-thread runtime
// ---------------------------------------------------------------------------

/// Eight producers on two workers insert, reset and remove; `consumers`
/// consumers take what expires. Every value comes out exactly once or was
/// removed, and none before its deadline.
fn many_producers(consumers: usize) {
    let rt = common::multi_thread(2);
    rt.block_on(async move {
        let w = Wheel::new();
        let q = w.expiry_queue::<(usize, u64)>();
        let removed = Arc::new(Mutex::new(HashSet::new()));
        let mut producers = Vec::new();
        for p in 0..8usize {
            let q = q.clone();
            let removed = removed.clone();
            producers.push(tokio::spawn(async move {
                let mut rng = Rng::new(p as u64 + 1);
                let mut live: Vec<(u64, Key)> = Vec::new();
                for i in 0..2000u64 {
                    let at = Instant::now() + Duration::from_micros(rng.range(0, 60_000));
                    let key = q.insert_at((p, i), at);
                    live.push((i, key));
                    match rng.range(0, 4) {
                        0 if !live.is_empty() => {
                            let (j, key) =
                                live.swap_remove(rng.range(0, live.len() as u64 - 1) as usize);
                            if q.remove(&key).is_some() {
                                removed.lock().unwrap().insert((p, j));
                            }
                        }
                        1 if !live.is_empty() => {
                            let (_, key) = live[rng.range(0, live.len() as u64 - 1) as usize];
                            let at = Instant::now() + Duration::from_micros(rng.range(0, 60_000));
                            // Fails if a consumer took it already.
                            let _ = q.reset_at(&key, at);
                        }
                        _ => {}
                    }
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            }));
        }
        let mut takers = Vec::new();
        for _ in 0..consumers {
            let c = q.expirations();
            takers.push(tokio::spawn(async move {
                c.map(|e| (Instant::now(), e.deadline(), e.into_inner()))
                    .collect::<Vec<_>>()
                    .await
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        drop(q);
        let mut seen = HashSet::new();
        for t in takers {
            let got = tokio::time::timeout(Duration::from_secs(30), t)
                .await
                .expect("the consumers end")
                .unwrap();
            for (at, deadline, v) in got {
                assert!(at >= deadline, "{v:?} early");
                assert!(seen.insert(v), "{v:?} twice");
            }
        }
        let removed = removed.lock().unwrap();
        assert!(seen.is_disjoint(&removed), "a removed value came out");
        assert_eq!(seen.len() + removed.len(), 8 * 2000, "values lost");
        assert!(!removed.is_empty());
    });
}

#[test]
fn many_producers_one_consumer() {
    many_producers(1);
}

#[test]
fn many_producers_several_consumers() {
    many_producers(3);
}

/// Consumers on both workers, often woken for values another consumer took,
/// all keep making progress: none hangs, and together they take every value.
#[test]
fn every_consumer_makes_progress() {
    let rt = common::multi_thread(2);
    rt.block_on(async {
        let q = Wheel::new().expiry_queue::<u64>();
        let counts: Vec<Arc<AtomicUsize>> = (0..4).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        let mut takers = Vec::new();
        for n in &counts {
            let mut c = q.expirations();
            let n = n.clone();
            takers.push(tokio::spawn(async move {
                while c.next_expired().await.is_some() {
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for round in 0..20u64 {
            for i in 0..50 {
                q.insert(round * 100 + i, ms(i % 7));
            }
            tokio::time::sleep(ms(15)).await;
        }
        drop(q);
        for t in takers {
            tokio::time::timeout(Duration::from_secs(10), t)
                .await
                .expect("every consumer ends")
                .unwrap();
        }
        let total: usize = counts.iter().map(|n| n.load(Ordering::Relaxed)).sum();
        assert_eq!(total, 1000);
    });
}
