//! Helpers shared by the benchmark harnesses: runtimes whose time driver has
//! planned its wake-up, timers kept where they can be polled in place, the
//! inner future of the timeout workload and seeded deadlines.
//!
//! The library of the `benches` crate: the criterion benches and the
//! harnesses (`compare`, `idle_server`, `instructions`) all use it, so they
//! measure with the same code.

use std::future::Future;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Runtime;

/// A current-thread runtime with every driver enabled.
pub fn current_thread_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("failed to build a current-thread runtime")
}

/// Registers `timer` (polled once in the calling task: it must stay pending)
/// and lets the runtime park once, so that tokio's time driver plans its next
/// wake-up.
///
/// Tokio's time driver plans its next wake-up only when its runtime parks,
/// and until it has, it writes to its eventfd (a syscall) for every timer
/// registered. A loop that registers without ever letting the runtime park
/// would measure that syscall; a server's runtime parks every few dozen polls.
/// Keep `timer` pending while measuring. See "A trap in measuring tokio" in
/// `docs/benchmarks.md`.
pub async fn park_with_pending(mut timer: Pin<&mut tokio::time::Sleep>) {
    std::future::poll_fn(|cx| {
        assert!(timer.as_mut().poll(cx).is_pending());
        Poll::Ready(())
    })
    .await;
    // The runtime parks (with a zero timeout) and the driver plans.
    tokio::task::yield_now().await;
}

/// Parks `rt` once with a 10 ms timer pending ([`park_with_pending`]) and
/// returns that timer: keep it alive while measuring.
pub fn plan_wakeup(rt: &Runtime) -> Pin<Box<tokio::time::Sleep>> {
    let mut planned = {
        let _enter = rt.enter();
        Box::pin(tokio::time::sleep(Duration::from_millis(10)))
    };
    rt.block_on(park_with_pending(planned.as_mut()));
    planned
}

/// Keeps timers where they can be polled in place. Tokio's `Sleep` is
/// `!Unpin`, so it is boxed, as real code holding many of them must (or keeps
/// each inside a task); tokio-wheel's `Sleep` is `Unpin` and lies in the
/// vector itself. No `unsafe` pinning: each side is stored as a user would.
pub trait Keep: Sized {
    type Stored;
    fn store(self) -> Self::Stored;
    fn pinned(stored: &mut Self::Stored) -> Pin<&mut Self>;
}

impl Keep for tokio::time::Sleep {
    type Stored = Pin<Box<Self>>;
    fn store(self) -> Self::Stored {
        Box::pin(self)
    }
    fn pinned(stored: &mut Self::Stored) -> Pin<&mut Self> {
        stored.as_mut()
    }
}

impl Keep for tokio_wheel::Sleep {
    type Stored = Self;
    fn store(self) -> Self::Stored {
        self
    }
    fn pinned(stored: &mut Self::Stored) -> Pin<&mut Self> {
        Pin::new(stored)
    }
}

/// Timers kept as [`Keep`] says, polled where they lie.
pub struct PinnedVec<T: Keep> {
    pub items: Vec<T::Stored>,
}

impl<T: Keep> PinnedVec<T> {
    /// Bytes each timer takes in the vector itself (its heap is counted by
    /// the allocator).
    pub fn inline_bytes() -> usize {
        std::mem::size_of::<T::Stored>()
    }

    pub fn with_capacity(n: usize) -> Self {
        PinnedVec {
            items: Vec::with_capacity(n),
        }
    }

    pub fn push(&mut self, item: T) -> Pin<&mut T> {
        self.items.push(item.store());
        let i = self.items.len() - 1;
        self.get(i)
    }

    pub fn get(&mut self, i: usize) -> Pin<&mut T> {
        T::pinned(&mut self.items[i])
    }
}

/// Pending once, having woken its task, then ready: the inner future of
/// workload 1, so the timeout is registered by the first poll and cancelled
/// on the second.
#[derive(Default)]
pub struct YieldOnce {
    yielded: bool,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// SplitMix64: deterministic and dependency-free.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    #[allow(dead_code)]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (n > 0), up to a negligible modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The median of `values` (sorted in place; the mean of the middle two for
/// an even count), or `None` if there are none.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Median, min and max of a set of runs (the values that are not finite
/// left out), as the harnesses report them.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(mut v: Vec<f64>) -> Option<Spread> {
        v.retain(|x| x.is_finite());
        let n = v.len();
        let median = median(&mut v)?;
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// (max - min) / median.
    pub fn relative(&self) -> f64 {
        if self.median.abs() < 1e-12 {
            0.0
        } else {
            (self.max - self.min) / self.median.abs()
        }
    }

    /// `median [min, max]`, or the median alone where the range does not
    /// show at this precision.
    pub fn show(&self, decimals: usize, unit: &str) -> String {
        let f = |v: f64| format!("{v:.decimals$}{unit}");
        let (median, min, max) = (f(self.median), f(self.min), f(self.max));
        if min == max {
            median
        } else {
            format!("{median} [{min}, {max}]")
        }
    }
}

/// How a program that compares variants, each in a process of its own, was
/// asked to run.
pub enum Invocation {
    /// `--one VARIANT`: that variant, in this process (a known one).
    One(String),
    /// `[ROUNDS]`: every variant, `ROUNDS` times (see [`interleave`]).
    Rounds(usize),
}

/// Reads `[ROUNDS] | --one VARIANT` from the command line (`default_rounds`
/// with neither). Anything else, or a variant not in `variants`, ends the
/// program with a message naming `program`.
pub fn invocation(program: &str, variants: &[&str], default_rounds: usize) -> Invocation {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("{program}: usage: {program} [ROUNDS] | --one VARIANT (one of {variants:?})");
        std::process::exit(2);
    };
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => Invocation::Rounds(default_rounds),
        ["--one", variant] if variants.contains(&variant) => Invocation::One(variant.to_string()),
        [rounds] => match rounds.parse() {
            Ok(n) if n > 0 => Invocation::Rounds(n),
            _ => usage(),
        },
        _ => usage(),
    }
}

/// Runs this program again once per variant and round, with `--one VARIANT`
/// and then `args`, each run in a process of its own and the variants in a
/// rotating order (round `r` starts with variant `r`), so that a change of
/// the machine's load over time falls on every variant alike. Returns, per
/// variant, the numbers each of its runs printed on standard output
/// (separated by white space), a run a row. A run that fails or prints
/// anything else ends this program, naming `program` and the variant.
pub fn interleave(
    program: &str,
    variants: &[&str],
    rounds: usize,
    args: &[String],
) -> Vec<Vec<Vec<f64>>> {
    let exe = std::env::current_exe().expect("the program's own path");
    let mut runs = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        for k in 0..variants.len() {
            let i = (round + k) % variants.len();
            let out = Command::new(&exe)
                .args(["--one", variants[i]])
                .args(args)
                .stderr(Stdio::inherit())
                .output()
                .expect("run a variant");
            let text = String::from_utf8_lossy(&out.stdout);
            let values: Option<Vec<f64>> =
                text.split_whitespace().map(|w| w.parse().ok()).collect();
            match values {
                Some(values) if out.status.success() && !values.is_empty() => runs[i].push(values),
                _ => {
                    eprintln!(
                        "{program}: variant `{}` failed ({}), printing `{}`",
                        variants[i],
                        out.status,
                        text.trim()
                    );
                    std::process::exit(1);
                }
            }
        }
    }
    runs
}

/// Deadlines spread uniformly over 1 to 60 s, as in workload 2.
pub fn spread_deadlines(n: usize, seed: u64) -> Vec<Duration> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| Duration::from_secs(1) + Duration::from_nanos(rng.below(59_000_000_000)))
        .collect()
}

/// A count as the tables and cell names write it: `5k`, `1M`, or the digits.
pub fn count_label(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}
