//! What a frame pays for one more line it writes outside its task: the cost
//! of the wheel's deadline cell, against a deadline kept in the task's own
//! memory, as `tokio::time`'s entry is.
//!
//! A server's frame touches its connection's task (cold: a connection is
//! visited every few seconds, and 100k tasks do not fit in any cache) and,
//! with the wheel, pushes its idle timeout back by one store into the
//! `Sleep`'s deadline cell, a 48-byte allocation of its own, which the next
//! poll reads. (The wheel has since kept that deadline in a 16-byte slot of
//! a page its shard holds, not a cell of its own: still one line apart from
//! the task. Since a tracked `Sleep` keeps its waker's identity and the
//! slot's last `filed` itself, the frame's poll no longer reads that line:
//! the store alone, `cell-store`, is the wheel's case now.) This program
//! models that frame without Tokio: 100k tasks
//! of 2 KiB, a frame reads four lines of a random one and writes its first,
//! then (by variant) stores a deadline and reads its line, does one locked
//! instruction (the server's frame counter; Tokio's wakers and reference
//! counts add more) and some dependent arithmetic, as the rest of a frame.
//!
//! - `none`: no deadline at all;
//! - `hot`: the deadline stored into, and read from, the task's first line
//!   (where the frame writes anyway): tokio's case;
//! - `cell`: stored into, and the cell's waker and `filed` read from, a cell
//!   allocated apart from the task, its pointer in the task's first line:
//!   the wheel's case until its poll stopped reading the slot;
//! - `cell-store`: the store into the cell only, no read: the wheel's case
//!   now, with the cells close together (each about 200 bytes from the
//!   next);
//! - `cell-scattered`: as `cell-store`, with a page of memory (4.7 KiB) of
//!   other allocations before each cell, so that no two cells share one:
//!   slots made one page at a time over a server's first frames, between
//!   its other allocations, may lie that far apart;
//! - `slot-dense`: the store into a 16-byte slot of one contiguous array
//!   holding every connection's slot (1.6 MB), as larger pages of slots
//!   would keep them (tried and not kept: `docs/benchmarks.md`, "Where the
//!   slots lie").
//!
//! ```sh
//! cargo run --release -p benches --example coldline            # 5 rounds
//! cargo run --release -p benches --example coldline -- 9        # 9 rounds
//! cargo run --release -p benches --example coldline -- --one cell
//! ```
//!
//! Each variant runs in a process of its own (`--one`), the variants
//! interleaved over rounds; it prints the median [min, max] of ns per frame
//! and the difference from `hot`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use support::{Invocation, Rng, Spread};

const VARIANTS: [&str; 6] = [
    "none",
    "hot",
    "cell",
    "cell-store",
    "cell-scattered",
    "slot-dense",
];
const CONNS: usize = 100_000;
const FRAMES: usize = 4_000_000;

/// A connection's task: 2 KiB; a frame touches four of its lines.
#[repr(align(64))]
struct Task {
    /// Written by every frame (its own state), on the first line.
    state: AtomicU64,
    /// The `hot` variant's deadline, on the same line.
    deadline: AtomicU64,
    /// The cell variants' cell, its pointer on the same line too, as a
    /// `Sleep` keeps it.
    cell: Option<Arc<Cell>>,
    words: [u64; 253],
}

/// The wheel's deadline cell: the tick, `filed` and the waker.
struct Cell {
    tick: AtomicU64,
    filed: AtomicU64,
    waker: [u64; 2],
}

fn main() {
    match support::invocation("coldline", &VARIANTS, 5) {
        Invocation::One(variant) => println!("{:.2}", one(&variant)),
        Invocation::Rounds(rounds) => interleave(rounds),
    }
}

/// Runs every variant once a round, each in a process of its own (the order
/// rotated by one each round, so each variant runs first once every
/// `VARIANTS.len()` rounds), and prints the medians.
fn interleave(rounds: usize) {
    let runs = support::interleave("coldline", &VARIANTS, rounds, &[]);
    let ns: Vec<Spread> = runs
        .iter()
        .map(|runs| {
            Spread::of(runs.iter().map(|values| values[0]).collect())
                .expect("a run of each variant")
        })
        .collect();
    println!(
        "{CONNS} tasks of 2 KiB, {FRAMES} frames a run, {rounds} rounds; ns per frame, median [min, max]"
    );
    let hot = ns[1].median;
    for (name, s) in VARIANTS.iter().zip(&ns) {
        println!(
            "{name:<14} {:6.1} [{:.1}, {:.1}]  {:+.1} against hot",
            s.median,
            s.min,
            s.max,
            s.median - hot
        );
    }
}

/// One variant's ns per frame.
fn one(variant: &str) -> f64 {
    // (store into the task, store into the cell, read the cell back)
    let (hot, cell, read) = match variant {
        "none" | "slot-dense" => (false, false, false),
        "hot" => (true, false, false),
        "cell" => (false, true, true),
        "cell-store" | "cell-scattered" => (false, true, false),
        _ => unreachable!("`invocation` checked the variant"),
    };
    let dense = variant == "slot-dense";
    let scattered = variant == "cell-scattered";
    let mut tasks: Vec<Box<Task>> = (0..CONNS)
        .map(|i| {
            Box::new(Task {
                state: AtomicU64::new(0),
                deadline: AtomicU64::new(i as u64),
                cell: None,
                words: [i as u64; 253],
            })
        })
        .collect();
    // The cells come later, between other allocations, as a server's first
    // push back of each idle timeout does.
    let mut others: Vec<Box<[u64; 16]>> = Vec::with_capacity(CONNS);
    let mut pages: Vec<Vec<u64>> = Vec::with_capacity(if scattered { CONNS } else { 0 });
    for (i, task) in tasks.iter_mut().enumerate() {
        others.push(Box::new([i as u64; 16]));
        if scattered {
            pages.push(vec![i as u64; 600]);
        }
        task.cell = Some(Arc::new(Cell {
            tick: AtomicU64::new(i as u64),
            filed: AtomicU64::new(0),
            waker: [i as u64, 7],
        }));
    }
    // `slot-dense`'s slots: the deadline and `filed` of each connection.
    let slots: Vec<[AtomicU64; 2]> = (0..if dense { CONNS } else { 0 })
        .map(|i| [AtomicU64::new(i as u64), AtomicU64::new(0)])
        .collect();
    let frames_seen = AtomicU64::new(0);
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut acc = 0u64;
    let started = Instant::now();
    for frame in 0..FRAMES as u64 {
        let c = rng.below(CONNS as u64) as usize;
        let task = &tasks[c];
        // The frame's own work on its task: four lines read, the first written.
        acc = acc.wrapping_add(
            task.state.load(Relaxed) ^ task.words[71] ^ task.words[135] ^ task.words[199],
        );
        task.state.store(acc, Relaxed);
        if hot {
            // The reset's store and the poll's read, in the task's own line.
            task.deadline.store(frame, Relaxed);
            acc = acc.wrapping_add(task.deadline.load(Relaxed));
        }
        if cell {
            // The reset's store into the cell; the poll reads its waker.
            let cell = task.cell.as_ref().expect("every task has its cell");
            cell.tick.store(frame, Relaxed);
            if read {
                acc = acc.wrapping_add(cell.waker[0] ^ cell.filed.load(Relaxed));
            }
        }
        if dense {
            // The reset's store into the connection's slot in the array.
            slots[c][0].store(frame, Relaxed);
        }
        // A locked instruction, as the server's frame counter.
        frames_seen.fetch_add(1, Relaxed);
        // The rest of the frame, dependent on what came before.
        for _ in 0..60 {
            acc = acc
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
    }
    let ns = started.elapsed().as_nanos() as f64 / FRAMES as f64;
    black_box((acc, &others, &pages, &slots, &tasks, &frames_seen));
    ns
}
