//! Helpers shared by the integration tests. Each test binary uses a subset.
#![allow(dead_code)]

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::runtime::{Builder as RtBuilder, Runtime};
use tokio::time::Instant;
use tokio_wheel::Wheel;

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

/// A current-thread runtime on the real clock.
pub fn current_thread() -> Runtime {
    RtBuilder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime whose clock starts paused (a property test's
/// case each, where `#[tokio::test]` cannot be used).
pub fn paused_current_thread() -> Runtime {
    RtBuilder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// A multi-thread runtime with `workers` worker threads, on the real clock.
pub fn multi_thread(workers: usize) -> Runtime {
    RtBuilder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// Builds a fresh runtime of one flavour.
pub type MakeRuntime = Box<dyn Fn() -> Runtime>;

/// Both runtime flavours, each named (for messages) with a function that
/// builds a fresh one: current-thread, and multi-thread with `workers`
/// worker threads.
pub fn runtime_flavours(workers: usize) -> [(&'static str, MakeRuntime); 2] {
    [
        ("current_thread", Box::new(current_thread)),
        ("multi_thread", Box::new(move || multi_thread(workers))),
    ]
}

/// Runs `f` on its own thread and returns its result; fails the test if it
/// takes longer than `secs` (a deadlock or a hang), and passes its panic on.
#[track_caller]
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(what.to_owned())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn a test thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => {
            thread.join().unwrap();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(payload) => std::panic::resume_unwind(payload),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung for {secs} s: {what}"),
    }
}

/// Drops `rt` on another thread, failing the test if that takes over `secs`.
#[track_caller]
pub fn drop_runtime_within(secs: u64, rt: Runtime) {
    within(secs, "dropping a runtime", move || drop(rt));
}

/// Runs `fut` on `rt`, failing the test if it has not completed after 10 s,
/// and returns when (on `rt`'s clock) it completed.
pub fn complete_on<F: Future>(rt: &Runtime, what: &str, fut: F) -> Instant {
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .unwrap_or_else(|_| panic!("{what}: not complete after 10 s"));
        Instant::now()
    })
}

/// `wheel` still works on `rt`: a 20 ms sleep completes there within 10 s,
/// and not early.
pub fn assert_wheel_fires_on(rt: &Runtime, wheel: &Wheel, what: &str) {
    complete_on(rt, &format!("{what}: the wheel no longer fires"), async {
        let start = Instant::now();
        wheel.sleep(ms(20)).await;
        assert!(start.elapsed() >= ms(20), "{what}: early");
    });
}

/// Waits until `wheel` has `n` pending timers, sleeping 1 ms at a time on
/// the current runtime; fails the test if that takes over 10 s of real time.
pub async fn wait_until_pending(wheel: &Wheel, n: usize, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while wheel.pending() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never registered"
        );
        tokio::time::sleep(ms(1)).await;
    }
}
