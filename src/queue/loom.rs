//! Loom models of the consumers' wake-up protocol (on `armed`, in
//! `QueueCore`'s docs), running the real `poll_expired`, `insert_at` and
//! handle drop. A wheel driver is claimed up front: the consumer's `Sleep`
//! registers without starting one.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use loom::thread;
use tokio::time::Instant;

use super::{Expirations, ExpiryQueue};
use crate::{Sleep, Wheel};

#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A queue on a wheel whose driver runs, and a consumer of it polled once
/// on another thread; the thread hands back whether the poll was ready,
/// and the consumer (kept alive: a consumer dropped stops waiting).
#[allow(clippy::type_complexity)]
fn polling_consumer() -> (
    Wheel,
    ExpiryQueue<u32>,
    Arc<Counter>,
    thread::JoinHandle<(bool, Expirations<u32>)>,
) {
    let wheel = Wheel::from_shards(crate::driver::model_shards(None));
    let queue = ExpiryQueue::<u32>::with_wheel(&wheel);
    let mut consumer = queue.expirations();
    let counter = Arc::new(Counter::default());
    let waker = Waker::from(counter.clone());
    let t = thread::spawn(move || {
        let polled = consumer.poll_expired(&mut Context::from_waker(&waker));
        (polled.is_ready(), consumer)
    });
    (wheel, queue, counter, t)
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
/// the value's tick.
#[test]
fn loom_queue_insert_racing_a_consumer_going_to_sleep() {
    model(|| {
        let (wheel, queue, counter, t) = polling_consumer();
        let at = Instant::now() + Duration::from_secs(10);
        queue.insert_at(7, at);
        let (ready, consumer) = t.join().unwrap();
        assert!(!ready, "nothing is due");
        let clock = &wheel.core().clock;
        let tick_at = clock.instant_of(clock.ceil(at));
        let sleeping_until = consumer.sleep.as_ref().map(Sleep::deadline);
        assert!(
            counter.0.load(SeqCst) > 0 || sleeping_until == tick_at,
            "lost wake-up: sleeping until {sleeping_until:?}, the value is due at {tick_at:?}"
        );
    });
}

/// The last handle is dropped while a consumer polls the empty queue:
/// the consumer's stream ends, or it is woken to see that it has.
#[test]
fn loom_queue_last_handle_dropped_racing_a_consumer() {
    model(|| {
        let (_wheel, queue, counter, t) = polling_consumer();
        drop(queue);
        let (ended, _consumer) = t.join().unwrap();
        assert!(
            ended || counter.0.load(SeqCst) > 0,
            "the consumer waits on a queue that has ended"
        );
    });
}
