//! Measuring tools: a counting allocator, RSS, per-thread CPU time from
//! `/proc`, a random generator and a histogram.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

// ---------------------------------------------------------------------------
// Heap accounting.

pub struct CountingAlloc;

pub static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is a
// side effect that does not touch the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as isize, Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        }
        p
    }
}

#[global_allocator]
pub static GLOBAL: CountingAlloc = CountingAlloc;

pub fn live_bytes() -> isize {
    LIVE_BYTES.load(Relaxed)
}

/// Resident set size of the process, from `VmRSS` in `/proc/self/status`.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The `/proc/self/task/*` directories of the live threads of this process
/// whose name starts with `prefix`.
fn threads(prefix: &str) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .map(|task| task.path())
        .filter(|path| {
            std::fs::read_to_string(path.join("comm"))
                .is_ok_and(|comm| comm.trim_end().starts_with(prefix))
        })
        .collect()
}

/// Field `i` of a thread's `schedstat` (0: ns on CPU, 2: times switched
/// in), if the kernel keeps it.
fn schedstat(task: &Path, i: usize) -> Option<u64> {
    let text = std::fs::read_to_string(task.join("schedstat")).ok()?;
    text.split_whitespace().nth(i)?.parse().ok()
}

/// CPU time so far of the live threads of this process whose name starts
/// with `prefix`: `/proc/self/task/*/schedstat` (ns on CPU), or utime + stime
/// from `/proc/self/task/*/stat` (clock ticks, 1/100 s) without schedstat.
pub fn threads_cpu(prefix: &str) -> Duration {
    let mut total = Duration::ZERO;
    for path in threads(prefix) {
        if let Some(ns) = schedstat(&path, 0) {
            total += Duration::from_nanos(ns);
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        // After the name: state is the 1st field, utime the 12th, stime the 13th.
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        total += Duration::from_millis((ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0)) * 10);
    }
    total
}

/// How many times the threads whose name starts with `prefix` were
/// switched in so far (the third field of each one's
/// `/proc/self/task/*/schedstat`), 0 where the kernel does not say. A
/// variant that parks and wakes its workers more often pays for it in the
/// kernel, outside its own code, so a profile by function does not show why.
pub fn threads_switches(prefix: &str) -> u64 {
    threads(prefix)
        .iter()
        .filter_map(|path| schedstat(path, 2))
        .sum()
}

/// The machine's 1-minute load average, from `/proc/loadavg`.
pub fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// CPU time the whole machine spent busy so far (every CPU; user, nice,
/// system, irq, softirq and steal), from the `cpu` line of `/proc/stat`, and
/// this process's own (utime + stime of all its threads, `/proc/self/stat`).
/// Both in clock ticks (1/100 s) turned into a `Duration`. The difference
/// over a window is what the rest of the machine ran meanwhile: other
/// processes, other guests (steal).
#[derive(Clone, Copy, Default)]
pub struct MachineCpu {
    pub busy: Duration,
    pub own: Duration,
}

impl MachineCpu {
    pub fn now() -> MachineCpu {
        let tick = |t: u64| Duration::from_millis(t * 10);
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let busy = stat.lines().find(|l| l.starts_with("cpu ")).map_or(0, |l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|f| f.parse().ok())
                .collect();
            // user nice system idle iowait irq softirq steal
            [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| v.get(i)).sum()
        });
        let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after_name = own.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        MachineCpu {
            busy: tick(busy),
            own: tick(ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0)),
        }
    }

    /// CPU the rest of the machine used between `self` and `later`.
    pub fn others_until(&self, later: &MachineCpu) -> Duration {
        (later.busy.saturating_sub(self.busy)).saturating_sub(later.own.saturating_sub(self.own))
    }
}

/// Memory the kernel says is available for new work, from `MemAvailable`
/// in `/proc/meminfo`.
pub fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The soft open-file limit, from `/proc/self/limits`.
pub fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

// ---------------------------------------------------------------------------
// A histogram (the random generator is `support::Rng`, shared with the
// benches).

/// Bits of mantissa kept per power of two: values within 0.1%.
pub const SUB_BITS: u32 = 10;
pub const SUB: usize = 1 << SUB_BITS;

/// A concurrent log-linear histogram of microseconds.
pub struct Hist {
    pub buckets: Box<[AtomicU64]>,
    pub count: AtomicU64,
    pub max: AtomicU64,
}

impl Hist {
    pub fn new() -> Hist {
        let len = (64 - SUB_BITS as usize + 1) * SUB;
        Hist {
            buckets: (0..len).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    pub fn index(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let shift = 63 - v.leading_zeros() - SUB_BITS;
        ((shift as usize + 1) << SUB_BITS) + ((v >> shift) as usize & (SUB - 1))
    }

    pub fn lower_bound(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let shift = i / SUB - 1;
        ((SUB + i % SUB) as u64) << shift
    }

    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.buckets[Hist::index(us)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.max.fetch_max(us, Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    /// The `q` quantile in milliseconds, `None` when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let target = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Relaxed);
            if seen >= target {
                return Some(Hist::lower_bound(i) as f64 / 1000.0);
            }
        }
        Some(self.max.load(Relaxed) as f64 / 1000.0)
    }

    pub fn max_ms(&self) -> Option<f64> {
        (self.count() > 0).then(|| self.max.load(Relaxed) as f64 / 1000.0)
    }
}
