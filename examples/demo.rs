//! A server's worth of request timeouts on one [`Wheel`], with a report on how
//! punctually the ones that were not cancelled fired.
//!
//! ```text
//! cargo run --release -p examples --example demo
//! cargo run --release -p examples --example demo -- --timers 500000 --tick-ms 5 --keep-percent 20
//! ```
//!
//! # The scenario
//!
//! A server gives every request a deadline 100 to 1000 ms out (uniformly
//! spread) and wraps its handler in `wheel.timeout_at(deadline, handler)`.
//! Most handlers (90% by default) answer almost at once: they are pending on
//! their first poll, so the timer *is* registered, then answer on the next
//! poll, which drops the `Timeout` and cancels the timer. The rest never
//! answer (`std::future::pending`), so their timers must fire. This is the
//! load a timing wheel is for: many registrations, nearly all cancelled.
//!
//! # Why the requests are paced, and by few tasks
//!
//! Spawning 200 000 tasks at once would measure the runtime, not the wheel:
//! the first timers would come due while the scheduler was still working
//! through the spawn backlog, and their "lateness" would be queueing delay.
//! Instead, a fixed set of 1000 *connection* tasks each keeps its in-flight
//! requests in a `FuturesUnordered` and lets new ones arrive in 100 rounds,
//! 10 ms apart (1 s of arrivals in all). Each connection's rounds are offset
//! by a different fraction of those 10 ms, so arrivals are spread evenly in
//! time rather than in bursts that would line up with the wheel's ticks. The
//! runtime therefore stays lightly loaded, and a fired timer's lateness is
//! down to the wheel (and the Tokio timer its driver sleeps on), not to a
//! queue of runnable tasks. The pacing uses `tokio::time`, not the wheel, so
//! the wheel's counters hold the requests' timers only.
//!
//! # What is measured
//!
//! Each request computes its deadline, an exact `Instant`, when first polled
//! and hands that same `Instant` to `timeout_at`. When `Err(Elapsed)` comes
//! back, the request reads `Instant::now()` at once: lateness is that instant
//! minus the deadline, reported in ticks (and ms). It is the sum of
//!
//! - **tick rounding**: a timer fires at the first tick at or after its
//!   deadline, so this is between 0 and 1 tick by design; and
//! - **delivery**: the time from that tick's instant until the request sees
//!   `Elapsed`. The wheel's driver sleeps on Tokio's own timer, which has
//!   1 ms resolution and rounds up, and then the woken connection task still
//!   has to be scheduled and poll. So expect delivery of about 1 to 2 ms on
//!   an idle machine, and so a maximum lateness slightly *over* 1 tick at the
//!   default 10 ms tick (and of several ticks with `--tick-ms 1`).
//!
//! The wheel's ticks count from the clock reading taken inside `build()`,
//! which the demo cannot see; it brackets it between `Instant::now()` just
//! before and just after `build()`. The split is thus exact to within the
//! time `build()` took (tens of microseconds, mostly spent asking the OS for
//! the CPU count). Timers whose deadline lies that close to a tick boundary,
//! so that the bracket cannot tell their tick, are left out of the split.
//! Tick instants are taken from the start of the bracket, so the delivery
//! shown is an upper bound, and a negative one would mean a timer fired
//! before its tick.
//!
//! A negative lateness, an *early* fire, would be a bug in the wheel: the
//! demo counts them and fails if there is any. It also checks that every
//! answering request got its answer, every unanswered one timed out, no timer
//! fired after its tick, the wheel's [`Stats`] agree with the requests, and
//! nothing is left pending. It exits with status 1 if a check fails.
//!
//! # Debug builds
//!
//! The checks hold in a debug build too, but its figures are not the wheel's:
//! an unoptimised runtime cannot keep up with 200 000 requests a second, so
//! wake-ups wait for a worker for up to seconds, and the report says so. A
//! timer can then also fire while its request, already answered, waits to be
//! polled: the request still gets its answer (a `Timeout` polls its future
//! first), and the wheel counts the timer as fired, not cancelled. So the
//! checks compare the wheel's fired and cancelled counts with the requests as
//! bounds, not as equalities. Run with `--release` for the figures the README
//! describes.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;
use tokio_wheel::{Stats, Wheel};

/// Connection tasks that carry all the requests.
const CONNECTIONS: usize = 1000;
/// Rounds of arrivals per connection.
const ROUNDS: usize = 100;
/// Time between two rounds of one connection.
const ROUND: Duration = Duration::from_millis(10);
/// Shortest request deadline.
const MIN_DEADLINE: Duration = Duration::from_millis(100);
/// Longest request deadline.
const MAX_DEADLINE: Duration = Duration::from_millis(1000);
/// How often the monitor samples `wheel.pending()`.
const SAMPLE: Duration = Duration::from_millis(10);

const USAGE: &str = "\
Registers many request timeouts on a tokio-wheel Wheel, as a server would,
and reports how punctually the uncancelled ones fire.

Usage: cargo run --release -p examples --example demo -- [OPTIONS]

Options:
  --timers N         requests, each with one timeout (default 200000)
  --tick-ms T        the wheel's tick in milliseconds, at least 1 (default 10)
  --keep-percent P   percent of requests never answered, whose timeouts
                     fire; 0 to 100 (default 10)
  -h, --help         print this help
";

#[derive(Debug, Clone, Copy)]
struct Config {
    timers: usize,
    tick_ms: u64,
    keep_percent: u64,
}

/// `Ok(None)` means `--help`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut cfg = Config {
        timers: 200_000,
        tick_ms: 10,
        keep_percent: 10,
    };
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg, None),
        };
        if !matches!(flag.as_str(), "--timers" | "--tick-ms" | "--keep-percent") {
            return Err(format!("unknown argument `{flag}`"));
        }
        let value = match inline.or_else(|| args.next()) {
            Some(v) => v,
            None => return Err(format!("`{flag}` needs a value")),
        };
        let number: u64 = value
            .parse()
            .map_err(|_| format!("`{flag}` needs a whole number, not `{value}`"))?;
        match flag.as_str() {
            "--timers" => {
                cfg.timers = usize::try_from(number).map_err(|_| "--timers is too large")?;
            }
            "--tick-ms" => cfg.tick_ms = number,
            _ if number > 100 => return Err("--keep-percent must be 0 to 100".into()),
            _ => cfg.keep_percent = number,
        }
    }
    Ok(Some(cfg))
}

fn main() -> ExitCode {
    let cfg = match parse_args(std::env::args().skip(1)) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("demo: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("failed to build the Tokio runtime");
    runtime.block_on(run(cfg))
}

/// How one request ended.
enum Outcome {
    /// The handler answered first; its timer was cancelled.
    Answered,
    /// The timer fired: the deadline given to `timeout_at`, and the instant
    /// the request saw `Err(Elapsed)`.
    TimedOut { deadline: Instant, seen: Instant },
}

/// One request: a handler that answers on its second poll, or never, raced
/// against a deadline `within` from now.
async fn request(wheel: &Wheel, within: Duration, answers: bool) -> Outcome {
    let deadline = Instant::now() + within;
    let handler = async move {
        if answers {
            // Pending once, so that the timer is registered, then done.
            tokio::task::yield_now().await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    match wheel.timeout_at(deadline, handler).await {
        Ok(()) => Outcome::Answered,
        Err(_elapsed) => Outcome::TimedOut {
            deadline,
            seen: Instant::now(),
        },
    }
}

/// What one connection task saw.
#[derive(Default)]
struct Report {
    /// Requests made that never answer: the timers that must fire.
    unanswered: u64,
    answered: u64,
    /// `(deadline, seen)` of each fired timeout.
    fired: Vec<(Instant, Instant)>,
}

impl Report {
    fn record(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Answered => self.answered += 1,
            Outcome::TimedOut { deadline, seen } => self.fired.push((deadline, seen)),
        }
    }
}

/// A small deterministic generator (SplitMix64), so the demo needs no `rand`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One connection: `requests` requests arriving over `ROUNDS` rounds, the
/// first at `start + phase`.
async fn connection(
    wheel: Wheel,
    id: usize,
    requests: usize,
    keep_percent: u64,
    start: Instant,
    phase: Duration,
) -> Report {
    let mut rng = Rng(id as u64);
    let mut report = Report::default();
    let spread = (MAX_DEADLINE - MIN_DEADLINE).as_nanos() as u64;
    let mut inflight = FuturesUnordered::new();
    for round in 0..ROUNDS {
        // Serve what is in flight until this round's requests arrive.
        let arrival = tokio::time::sleep_until(start + phase + ROUND * round as u32);
        tokio::pin!(arrival);
        loop {
            tokio::select! {
                () = &mut arrival => break,
                Some(outcome) = inflight.next(), if !inflight.is_empty() => report.record(outcome),
            }
        }
        for _ in requests * round / ROUNDS..requests * (round + 1) / ROUNDS {
            let within = MIN_DEADLINE + Duration::from_nanos(rng.below(spread + 1));
            let answers = rng.below(100) >= keep_percent;
            report.unanswered += u64::from(!answers);
            inflight.push(request(&wheel, within, answers));
        }
    }
    while let Some(outcome) = inflight.next().await {
        report.record(outcome);
    }
    report
}

async fn run(cfg: Config) -> ExitCode {
    let tick = Duration::from_millis(cfg.tick_ms);
    // The wheel's ticks count from the clock reading inside `build()`.
    let before = Instant::now();
    let wheel = match Wheel::builder().tick(tick).build() {
        Ok(wheel) => wheel,
        Err(e) => {
            eprintln!("demo: cannot build the wheel: {e}");
            return ExitCode::from(2);
        }
    };
    let origin = (before, Instant::now());
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    let connections = CONNECTIONS.min(cfg.timers).max(1);

    // What the wheel would be without `--tick-ms`, to say which settings are
    // the crate's defaults.
    let defaults = Wheel::builder()
        .build()
        .map(|w| (w.resolution(), w.slots()))
        .ok();
    let settings = match defaults {
        Some((t, s)) if t == wheel.resolution() && s == wheel.slots() => "the defaults",
        Some((_, s)) if s == wheel.slots() => "the tick from --tick-ms, the default slots",
        _ => "as set",
    };

    println!("tokio-wheel demo");
    println!(
        "  wheel      tick {} ms, {} slots at the lowest level ({settings})",
        wheel.resolution().as_millis(),
        wheel.slots()
    );
    println!("  runtime    multi-thread, {workers} worker threads");
    println!(
        "  load       {} requests on {connections} connection tasks, arriving over {} ms;",
        cfg.timers,
        (ROUND * ROUNDS as u32).as_millis()
    );
    println!(
        "             deadlines {}..{} ms; {}% never answered",
        MIN_DEADLINE.as_millis(),
        MAX_DEADLINE.as_millis(),
        cfg.keep_percent
    );
    if cfg!(debug_assertions) {
        println!(
            "  build      debug: the checks hold, but an unoptimised runtime falls behind,\n             \
             so the lateness below is mostly its own; run with --release for the wheel's"
        );
    }
    println!();

    // Samples how many timers the wheel holds, for the peak.
    let peak = Arc::new(AtomicUsize::new(0));
    let monitor = tokio::spawn({
        let (wheel, peak) = (wheel.clone(), peak.clone());
        async move {
            let mut every = tokio::time::interval(SAMPLE);
            loop {
                every.tick().await;
                peak.fetch_max(wheel.pending(), Relaxed);
            }
        }
    });

    let wall = std::time::Instant::now();
    let start = Instant::now() + Duration::from_millis(5);
    let tasks: Vec<_> = (0..connections)
        .map(|id| {
            let requests = cfg.timers * (id + 1) / connections - cfg.timers * id / connections;
            let phase = ROUND * id as u32 / connections as u32;
            tokio::spawn(connection(
                wheel.clone(),
                id,
                requests,
                cfg.keep_percent,
                start,
                phase,
            ))
        })
        .collect();
    let mut total = Report::default();
    for task in tasks {
        let r = task.await.expect("a connection task panicked");
        total.unanswered += r.unanswered;
        total.answered += r.answered;
        total.fired.extend(r.fired);
    }
    let wall = wall.elapsed();
    monitor.abort();
    let pending = wheel.pending();
    let stats = wheel.stats();

    let summary = Summary::new(&total.fired, origin, tick);
    let verdicts = Verdicts::new(&cfg, &total, &summary, pending, &stats);
    print_report(
        &cfg,
        &total,
        &summary,
        &verdicts,
        pending,
        peak.load(Relaxed),
        &stats,
        wall,
    );
    println!();
    if verdicts.failures.is_empty() {
        println!(
            "verdict: the wheel kept its word. No timer fired early, every one fired in the \
             first tick\n         at or after its deadline, none was lost, none is left pending."
        );
        ExitCode::SUCCESS
    } else {
        println!("verdict: {} check(s) FAILED", verdicts.failures.len());
        for f in &verdicts.failures {
            println!("  - {f}");
        }
        ExitCode::FAILURE
    }
}

/// Each promise checked against the run, as the words printed beside its
/// figure, and the list of those broken.
struct Verdicts {
    answered: String,
    fired: String,
    early: String,
    before_tick: String,
    over_one_tick: String,
    rounding: String,
    delivery: String,
    pending: String,
    stats: String,
    failures: Vec<String>,
}

/// Typical delivery, from a tick's instant to the woken task's poll, on a
/// machine that is not busy: Tokio's timer wakes on a 1 ms grid, then the
/// task waits for a worker.
const USUAL_DELIVERY: Duration = Duration::from_millis(5);

impl Verdicts {
    fn new(cfg: &Config, total: &Report, s: &Summary, pending: usize, stats: &Stats) -> Self {
        let timers = cfg.timers as u64;
        let kept = total.unanswered;
        let fired = total.fired.len() as u64;
        let tick_ns = Duration::from_millis(cfg.tick_ms).as_nanos() as i128;
        let max_rounding = s.rounding.last().copied().unwrap_or(0);
        let max_delivery = s.delivery.last().copied().unwrap_or(0);
        let mut failures = Vec::new();
        let mut verdict = |ok: bool, good: String, bad: String| {
            if ok {
                format!("ok: {good}")
            } else {
                failures.push(bad.clone());
                format!("FAILED: {bad}")
            }
        };
        // A `Timeout` polls its future before its timer, so a request that
        // answers gets its answer even when its timer has fired meanwhile.
        let answered = verdict(
            total.answered == timers - kept,
            "each answering request got its answer".into(),
            format!("{} answered, expected {}", total.answered, timers - kept),
        );
        let fired_v = verdict(
            fired == kept,
            "each unanswered request timed out".into(),
            format!("{fired} timed out, but {kept} never answered"),
        );
        let early = verdict(
            s.early == 0,
            "never early, the first promise".into(),
            format!("{} timers fired before their deadline", s.early),
        );
        let in_tick = max_rounding <= tick_ns && s.early == 0;
        let before_tick = verdict(
            s.before_tick == 0,
            "each waited for the first tick at or after its deadline".into(),
            format!("{} timers fired before their tick", s.before_tick),
        );
        // Not a promise: what a task sees adds the runtime's delivery to the
        // wheel's rounding, so it can be a little over one tick.
        let over_one_tick = if s.over_one_tick == 0 {
            "none".to_string()
        } else {
            "expected: up to 1 tick of rounding, then delivery (below)".to_string()
        };
        let rounding = verdict(
            in_tick,
            "under 1 tick: the wheel's part".into(),
            format!("up to {:.3} ticks", max_rounding as f64 / tick_ns as f64),
        );
        let delivery = if max_delivery <= USUAL_DELIVERY.as_nanos() as i128 {
            "normal: Tokio's 1 ms timer, then a worker".to_string()
        } else {
            format!(
                "over {} ms: a busy machine; the runtime's part",
                USUAL_DELIVERY.as_millis()
            )
        };
        let pending_v = verdict(
            pending == 0 && stats.pending == 0,
            "nothing left behind".into(),
            format!("{pending} timers still pending"),
        );
        // Every request registered one timer, which either fired or was
        // cancelled. Each timeout seen is a fired timer; a fired timer is not
        // always a timeout seen: its request may have answered meanwhile (an
        // overloaded runtime, a debug build), which then did not cancel it.
        let stats_v = verdict(
            stats.registered == timers
                && stats.fired + stats.cancelled == timers
                && stats.fired >= fired
                && stats.cancelled <= total.answered,
            "they match the requests".into(),
            format!(
                "stats() counted {} registered, {} fired, {} cancelled",
                stats.registered, stats.fired, stats.cancelled
            ),
        );
        Verdicts {
            answered,
            fired: fired_v,
            early,
            before_tick,
            over_one_tick,
            rounding,
            delivery,
            pending: pending_v,
            stats: stats_v,
            failures,
        }
    }
}

/// Distributions over the fired timers, all in nanoseconds.
struct Summary {
    /// How far apart the readings around `build()` are.
    origin_bracket: Duration,
    /// Fired timers too close to a tick boundary to split their lateness.
    unsplit: usize,
    /// Timers seen to fire before their deadline.
    early: usize,
    /// Timers seen before the tick they are due at (a negative delivery):
    /// a timer fired ahead of its tick.
    before_tick: usize,
    /// Timers seen to fire more than one tick after their deadline.
    over_one_tick: usize,
    /// Seen minus deadline.
    lateness: Vec<i128>,
    /// The fire tick's instant minus the deadline: 0 to 1 tick by design.
    rounding: Vec<i128>,
    /// Seen minus the fire tick's instant.
    delivery: Vec<i128>,
}

impl Summary {
    /// `origin` brackets the wheel's origin: readings just before and just
    /// after `build()`.
    fn new(fired: &[(Instant, Instant)], origin: (Instant, Instant), tick: Duration) -> Summary {
        let (lo, hi) = origin;
        let tick_ns = tick.as_nanos() as i128;
        let hi_ns = (hi - lo).as_nanos() as i128;
        // The first tick at or after `t`, in ns since `lo`, if the wheel's
        // origin were `lo + offset`.
        let ceil_tick = |t: i128, offset: i128| {
            (t - offset + tick_ns - 1).div_euclid(tick_ns) * tick_ns + offset
        };
        let mut s = Summary {
            origin_bracket: hi - lo,
            unsplit: 0,
            early: 0,
            before_tick: 0,
            over_one_tick: 0,
            lateness: Vec::with_capacity(fired.len()),
            rounding: Vec::with_capacity(fired.len()),
            delivery: Vec::with_capacity(fired.len()),
        };
        for &(deadline, seen) in fired {
            // Deadlines are at least 100 ms after `build()`, so after `lo`.
            let deadline = (deadline - lo).as_nanos() as i128;
            let late = seen
                .checked_duration_since(lo)
                .map_or(-1, |d| d.as_nanos() as i128)
                - deadline;
            s.early += usize::from(late < 0);
            s.over_one_tick += usize::from(late > tick_ns);
            s.lateness.push(late);
            // The instant of the tick the timer is due at, taking the wheel's
            // origin to be `lo`; left out if `hi` would give another tick.
            // Taking the earliest possible origin makes the delivery an upper
            // bound: a negative one is a timer fired before its tick.
            let fire_tick = ceil_tick(deadline, 0);
            if fire_tick + hi_ns != ceil_tick(deadline, hi_ns) {
                s.unsplit += 1;
                continue;
            }
            let rounding = fire_tick - deadline;
            s.before_tick += usize::from(deadline + late < fire_tick);
            s.rounding.push(rounding);
            s.delivery.push(deadline + late - fire_tick);
        }
        s.lateness.sort_unstable();
        s.rounding.sort_unstable();
        s.delivery.sort_unstable();
        s
    }
}

/// min, p50, p99, max of a sorted sample.
fn quantiles(sorted: &[i128]) -> Option<[i128; 4]> {
    let last = sorted.len().checked_sub(1)?;
    let at = |q: f64| sorted[(last as f64 * q).round() as usize];
    Some([sorted[0], at(0.50), at(0.99), sorted[last]])
}

fn print_row(label: &str, sorted: &[i128], unit_ns: f64, note: &str) {
    print!("  {label:<30}");
    match quantiles(sorted) {
        Some(q) => {
            for v in q {
                print!("{:>9.3}", v as f64 / unit_ns);
            }
        }
        None => print!("{:>9}{:>9}{:>9}{:>9}", "-", "-", "-", "-"),
    }
    if note.is_empty() {
        println!();
    } else {
        println!("   {note}");
    }
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    cfg: &Config,
    total: &Report,
    s: &Summary,
    v: &Verdicts,
    pending: usize,
    peak: usize,
    stats: &Stats,
    wall: Duration,
) {
    let line = |label: &str, value: String, note: &str| {
        let row = format!("  {label:<34}{value:>9}   {note}");
        println!("{}", row.trim_end());
    };
    println!("requests                                count   what it says");
    line(
        "timers registered",
        cfg.timers.to_string(),
        "one timeout per request",
    );
    line("answered", total.answered.to_string(), &v.answered);
    line("timed out", total.fired.len().to_string(), &v.fired);
    line(
        "  seen before their deadline",
        s.early.to_string(),
        &v.early,
    );
    line(
        "  seen before their tick",
        s.before_tick.to_string(),
        &v.before_tick,
    );
    line(
        "  seen by their task > 1 tick late",
        s.over_one_tick.to_string(),
        &v.over_one_tick,
    );
    println!();

    let tick_ns = Duration::from_millis(cfg.tick_ms).as_nanos() as f64;
    println!(
        "how late the fired ones were    {:>9}{:>9}{:>9}{:>9}",
        "min", "p50", "p99", "max"
    );
    print_row("lateness (ticks)", &s.lateness, tick_ns, "");
    print_row("lateness (ms)", &s.lateness, 1e6, "= the two rows below");
    print_row(
        "  rounding up to a tick (ms)",
        &s.rounding,
        1e6,
        &v.rounding,
    );
    print_row(
        "  delivery after the tick (ms)",
        &s.delivery,
        1e6,
        &v.delivery,
    );
    println!(
        "  A timer fires in the first tick at or after its deadline (rounding, the wheel's part,\n  \
         under 1 tick by design); its task then sees it after the runtime delivers the wake-up\n  \
         (Tokio's timer has a 1 ms grid, then the task waits for a worker). Split to within {} us;\n  \
         {} timers that close to a tick boundary are left out of the split.",
        s.origin_bracket.as_micros(),
        s.unsplit
    );
    println!();

    println!("the wheel");
    line("pending() at the end", pending.to_string(), &v.pending);
    line(
        "peak pending (sampled)",
        peak.to_string(),
        "timers held at once, at most",
    );
    line(
        "stats(): registered",
        stats.registered.to_string(),
        &v.stats,
    );
    let beaten = stats.fired.saturating_sub(total.fired.len() as u64);
    line(
        "stats(): fired",
        stats.fired.to_string(),
        &if beaten == 0 {
            "one per timeout".to_string()
        } else {
            format!("{beaten} of them for requests answered meanwhile: a busy runtime")
        },
    );
    line(
        "stats(): cancelled",
        stats.cancelled.to_string(),
        "by the answers",
    );
    line(
        "stats(): driver wake-ups",
        stats.driver_wakeups.to_string(),
        "for ticks with something due (and at most once per cancelled earliest timer of a slot)",
    );
    line(
        "stats(): driver starts",
        stats.driver_starts.to_string(),
        "one driver task, started by the first timer",
    );
    println!();
    line(
        "wall time",
        format!("{:.2} s", wall.as_secs_f64()),
        "about 1 s of arrivals plus the last deadlines",
    );
}
