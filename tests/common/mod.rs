//! Helpers shared by the integration tests. Each test binary uses a subset.
#![allow(dead_code)]

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::time::Instant;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The instant a timer due at `deadline` fires on a wheel of tick `tick`
/// built at `origin`: the first tick at or after the deadline.
pub fn first_tick_at_or_after(origin: Instant, tick: Duration, deadline: Instant) -> Instant {
    let nanos = deadline.duration_since(origin).as_nanos();
    let tick_nanos = tick.as_nanos();
    let ticks = nanos.div_ceil(tick_nanos);
    origin + Duration::from_nanos(u64::try_from(ticks * tick_nanos).unwrap())
}

/// xorshift64*: deterministic, dependency-free randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// A waker that counts how often it was woken.
#[derive(Default)]
pub struct CountingWaker {
    wakes: AtomicUsize,
}

impl CountingWaker {
    pub fn new() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }

    pub fn count(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else {
        String::from("<non-string panic payload>")
    }
}

/// Yields to the runtime until `cond` holds; fails the test if it does not
/// within a bounded number of yields (no time passes on a paused clock).
pub async fn yield_until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    assert!(cond(), "not reached after 1000 yields: {what}");
}

/// Asserts that `seq` is non-decreasing.
pub fn assert_non_decreasing<T: PartialOrd + std::fmt::Debug>(seq: &[T], what: &str) {
    for (i, w) in seq.windows(2).enumerate() {
        assert!(
            w[0] <= w[1],
            "{what}: out of order at {i}: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

/// The number of tasks alive on the current runtime (the wheel's driver
/// included).
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// A wheel with the given tick (ms) and slot count.
pub fn tick_wheel(tick_ms: u64, slots: usize) -> tokio_wheel::Wheel {
    tokio_wheel::Wheel::builder()
        .tick(ms(tick_ms))
        .slots(slots)
        .build()
        .expect("valid settings")
}

/// A log that callbacks and tasks append to, shared by cloning.
pub struct Log<T>(Arc<std::sync::Mutex<Vec<T>>>);

impl<T> Clone for Log<T> {
    fn clone(&self) -> Self {
        Log(self.0.clone())
    }
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log(Arc::new(std::sync::Mutex::new(Vec::new())))
    }
}

impl<T: Clone> Log<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, v: T) {
        self.0.lock().unwrap().push(v);
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn snapshot(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }
}
