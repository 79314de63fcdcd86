//! A counting allocator: live heap bytes, as requested (not the allocator's own
//! bookkeeping), so "bytes per pending timer" can be read off; and probes of
//! what the process did between two instants.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use crate::proc::minor_faults;

struct CountingAlloc;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Calls to `alloc`, `alloc_zeroed` and `realloc`.
static ALLOC_CALLS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is a
// side effect that does not touch the memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        ALLOC_CALLS.fetch_add(1, Ordering::Relaxed);
        if !p.is_null() {
            LIVE_BYTES.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Wall time, live heap, page faults and allocator calls at one instant.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    at: std::time::Instant,
    heap: isize,
    faults: u64,
    allocs: usize,
}

/// What happened between two probes.
#[derive(Clone, Copy, Default)]
pub(crate) struct Delta {
    pub(crate) time: Duration,
    pub(crate) heap: isize,
    pub(crate) faults: u64,
    pub(crate) allocs: usize,
}

impl Probe {
    pub(crate) fn now() -> Probe {
        Probe {
            heap: live_bytes(),
            faults: minor_faults(),
            allocs: ALLOC_CALLS.load(Ordering::Relaxed),
            at: std::time::Instant::now(),
        }
    }

    pub(crate) fn delta(&self) -> Delta {
        let end = std::time::Instant::now();
        Delta {
            time: end - self.at,
            heap: live_bytes() - self.heap,
            faults: minor_faults() - self.faults,
            allocs: ALLOC_CALLS.load(Ordering::Relaxed) - self.allocs,
        }
    }
}
