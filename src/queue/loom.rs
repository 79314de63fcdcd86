//! Loom models of the consumers' wake-up protocol (on `armed`, in
//! `QueueCore`'s docs) and of wake-on-empty, running the real
//! `poll_expired`, `insert_at`, `remove`, `clear` and handle drop. A wheel driver is claimed up front: the consumer's `Sleep`
//! registers without starting one.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use loom::thread;
use tokio::time::Instant;

use super::{Expirations, ExpiryQueue, Key};
use crate::{Sleep, Wheel};

#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A queue on a wheel whose driver runs, holding a value due in 10 s for
/// each of `values`, and a consumer of it polled once on another thread;
/// the thread hands back whether the poll was ready, and the consumer
/// (kept alive: a consumer dropped stops waiting).
#[allow(clippy::type_complexity)]
fn polling_consumer(
    values: &[u32],
) -> (
    Wheel,
    ExpiryQueue<u32>,
    Arc<Counter>,
    Vec<Key>,
    thread::JoinHandle<(bool, Expirations<u32>)>,
) {
    let wheel = Wheel::from_shards(crate::driver::model_shards(None));
    let queue = ExpiryQueue::<u32>::with_wheel(&wheel);
    let keys = values
        .iter()
        .map(|&v| queue.insert(v, Duration::from_secs(10)))
        .collect();
    let mut consumer = queue.expirations();
    let counter = Arc::new(Counter::default());
    let waker = Waker::from(counter.clone());
    let t = thread::spawn(move || {
        let polled = consumer.poll_expired(&mut Context::from_waker(&waker));
        (polled.is_ready(), consumer)
    });
    (wheel, queue, counter, keys, t)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// A consumer polls an empty queue while a producer inserts: the
/// consumer is woken, or its rescan saw the value and it sleeps until
/// the tick the queue must fire for it (the value's, or the first of the
/// revolution before, to move it into level 0: `TimerWheel::next_due`).
#[test]
fn loom_queue_insert_racing_a_consumer_going_to_sleep() {
    model(|| {
        let (wheel, queue, counter, _, t) = polling_consumer(&[]);
        let at = Instant::now() + Duration::from_secs(10);
        queue.insert_at(7, at);
        let (ready, consumer) = t.join().unwrap();
        assert!(!ready, "nothing is due");
        let clock = &wheel.core().clock;
        let due = queue.inner.next_due().expect("the value is pending");
        assert!(due <= clock.ceil(at), "a tick after the value's");
        let tick_at = clock.instant_of(due);
        let sleeping_until = consumer.sleep.as_ref().map(Sleep::deadline);
        assert!(
            counter.0.load(SeqCst) > 0 || sleeping_until == tick_at,
            "lost wake-up: sleeping until {sleeping_until:?}, the queue is due at {tick_at:?}"
        );
    });
}

/// The last handle is dropped while a consumer polls the empty queue:
/// the consumer's stream ends, or it is woken to see that it has.
#[test]
fn loom_queue_last_handle_dropped_racing_a_consumer() {
    model(|| {
        let (_wheel, queue, counter, _, t) = polling_consumer(&[]);
        drop(queue);
        let (ended, _consumer) = t.join().unwrap();
        assert!(
            ended || counter.0.load(SeqCst) > 0,
            "the consumer waits on a queue that has ended"
        );
    });
}

/// What a consumer of a queue emptied while it polled must be: woken, or
/// waiting for an insert with no sleep (its last scan saw the queue empty).
fn woken_or_waiting_for_an_insert(counter: &Counter, consumer: &Expirations<u32>) {
    assert!(
        counter.0.load(SeqCst) > 0 || consumer.sleep.is_none(),
        "lost wake-up: the queue is empty, the consumer sleeps until {:?}",
        consumer.sleep.as_ref().map(Sleep::deadline)
    );
}

/// The last value is removed while a consumer polls the queue (tokio
/// #6751's race): the consumer is woken, or saw the queue empty.
#[test]
fn loom_queue_remove_last_racing_a_consumer() {
    model(|| {
        let (_wheel, queue, counter, keys, t) = polling_consumer(&[7]);
        assert_eq!(queue.remove(&keys[0]), Some(7));
        let (ready, consumer) = t.join().unwrap();
        assert!(!ready, "nothing is due");
        woken_or_waiting_for_an_insert(&counter, &consumer);
    });
}

/// Two values, removed one after the other while a consumer polls: the
/// consumer may see either or none; it must not sleep for a value gone.
#[test]
fn loom_queue_remove_both_racing_a_consumer() {
    model(|| {
        let (_wheel, queue, counter, keys, t) = polling_consumer(&[1, 2]);
        queue.remove(&keys[0]);
        queue.remove(&keys[1]);
        let (_, consumer) = t.join().unwrap();
        woken_or_waiting_for_an_insert(&counter, &consumer);
    });
}

/// `clear` while a consumer polls (tokio #8320's race).
#[test]
fn loom_queue_clear_racing_a_consumer() {
    model(|| {
        let (_wheel, queue, counter, _, t) = polling_consumer(&[7]);
        queue.clear();
        let (ready, consumer) = t.join().unwrap();
        assert!(!ready, "nothing is due");
        woken_or_waiting_for_an_insert(&counter, &consumer);
    });
}

// A deliberately broken copy: the models above catch the bug it has.

/// `remove` without its wake-on-empty step leaves a consumer asleep until
/// the removed value's deadline in some interleaving.
#[test]
#[should_panic(expected = "lost wake-up")]
fn loom_queue_remove_last_without_wake_on_empty() {
    model(|| {
        let (_wheel, queue, counter, keys, t) = polling_consumer(&[7]);
        assert_eq!(queue.inner.remove_without_wake_on_empty(&keys[0]), Some(7));
        let (_, consumer) = t.join().unwrap();
        woken_or_waiting_for_an_insert(&counter, &consumer);
    });
}
