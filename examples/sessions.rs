//! Sessions that expire after being idle, on a shared `ExpiryQueue`.
//!
//! Worker tasks touch sessions at random (each touch pushes the session's
//! expiry to "idle timeout from now"), log some out early, and one consumer
//! task expires the rest once they have been idle long enough, printing what
//! expired and when.
//!
//! ```text
//! cargo run --release -p examples --example sessions
//! cargo run --release -p examples --example sessions -- --sessions 20000 --idle-ms 500 --secs 2
//! cargo run --release -p examples --example sessions -- --help
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_wheel::queue::Key;
use tokio_wheel::{ExpiryQueue, Wheel};

const USAGE: &str = "\
sessions: 100k sessions touched at random, expired after being idle

usage: cargo run --release -p examples --example sessions -- [flags]

  --sessions N   sessions opened at the start (default 100000)
  --idle-ms N    idle timeout: a session untouched this long expires (default 1000)
  --secs S       how long the workers touch sessions, seconds (default 3)
  --workers N    tasks touching sessions (default 8)
  --tick-ms N    the wheel's tick (default 10)
  -h, --help     this text
";

struct Args {
    sessions: usize,
    idle: Duration,
    secs: f64,
    workers: usize,
    tick: Duration,
}

fn parse() -> Result<Option<Args>, String> {
    let mut a = Args {
        sessions: 100_000,
        idle: Duration::from_millis(1000),
        secs: 3.0,
        workers: 8,
        tick: Duration::from_millis(10),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        let n = || {
            value
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{flag}` needs a positive whole number, not `{value}`"))
        };
        match flag.as_str() {
            "--sessions" => a.sessions = n()? as usize,
            "--idle-ms" => a.idle = Duration::from_millis(n()?),
            "--workers" => a.workers = n()? as usize,
            "--tick-ms" => a.tick = Duration::from_millis(n()?),
            "--secs" => {
                a.secs = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| format!("`--secs` needs a positive number, not `{value}`"))?
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(a))
}

/// xorshift64*: enough randomness for picking sessions.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A session as the server keeps it.
struct Session {
    user: String,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match parse() {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("sessions: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    let wheel = Wheel::builder()
        .tick(args.tick)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("sessions: --tick-ms: {e}");
            std::process::exit(2);
        });
    let queue: ExpiryQueue<Session> = wheel.expiry_queue();
    let start = Instant::now();

    // Session id -> key in the queue, as a server's session table would.
    let keys: Arc<Vec<Mutex<Option<Key>>>> = Arc::new(
        (0..args.sessions)
            .map(|i| {
                let session = Session {
                    user: format!("user{i}"),
                };
                Mutex::new(Some(queue.insert(session, args.idle)))
            })
            .collect(),
    );
    println!(
        "{} sessions open, idle timeout {:?}, wheel tick {:?}, {} workers touching them for {} s",
        args.sessions, args.idle, args.tick, args.workers, args.secs
    );

    // The consumer: expires sessions, reporting per second of run time.
    let mut expirations = queue.expirations();
    let idle = args.idle;
    let consumer = tokio::spawn(async move {
        let mut per_second: HashMap<u64, usize> = HashMap::new();
        let mut late = Duration::ZERO;
        let mut shown = 0;
        let mut expired = 0usize;
        while let Some(e) = expirations.next_expired().await {
            let now = Instant::now();
            let lateness = now - e.deadline();
            late = late.max(lateness);
            expired += 1;
            *per_second.entry((now - start).as_secs()).or_default() += 1;
            if shown < 5 {
                shown += 1;
                let s = e.get_ref();
                println!(
                    "  at {:>7.3} s: {} expired, idle since {:.3} s ({:.1} ms after its deadline)",
                    (now - start).as_secs_f64(),
                    s.user,
                    (e.deadline() - idle - start).as_secs_f64(),
                    lateness.as_secs_f64() * 1e3
                );
            }
        }
        (expired, late, per_second)
    });

    // The workers: touch sessions at random (and log 1 in 50 out).
    let run_for = Duration::from_secs_f64(args.secs);
    let mut workers = Vec::new();
    for w in 0..args.workers {
        let queue = queue.clone();
        let keys = keys.clone();
        workers.push(tokio::spawn(async move {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1));
            let (mut touched, mut logged_out, mut gone) = (0u64, 0u64, 0u64);
            let until = Instant::now() + run_for;
            while Instant::now() < until {
                for _ in 0..256 {
                    let id = rng.below(keys.len() as u64) as usize;
                    let mut slot = keys[id].lock().unwrap();
                    let Some(key) = *slot else {
                        continue;
                    };
                    if rng.below(50) == 0 {
                        if queue.remove(&key).is_some() {
                            logged_out += 1;
                        }
                        *slot = None;
                    } else if queue.reset(&key, idle).is_ok() {
                        touched += 1;
                    } else {
                        // Expired before this touch came: the client logs in again.
                        *slot = None;
                        gone += 1;
                    }
                }
                // Touches arrive spread over time, not in one burst.
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            (touched, logged_out, gone)
        }));
    }
    let (mut touched, mut logged_out, mut gone) = (0, 0, 0);
    for w in workers {
        let (t, l, g) = w.await.unwrap();
        touched += t;
        logged_out += l;
        gone += g;
    }
    println!(
        "workers done at {:.3} s: {touched} touches, {logged_out} logouts, {gone} touches of \
         sessions already expired; {} sessions still open",
        start.elapsed().as_secs_f64(),
        queue.len()
    );
    drop(queue); // the consumer ends once the last session has expired
    let (expired, late, per_second) = consumer.await.unwrap();
    let mut seconds: Vec<_> = per_second.into_iter().collect();
    seconds.sort_unstable();
    println!("expired per second of run time:");
    for (s, n) in seconds {
        println!("  {s:>3} s - {:>3} s: {n:>7}", s + 1);
    }
    println!(
        "{expired} sessions expired, {logged_out} logged out; at most {:.1} ms after a deadline; \
         total {:.2} s",
        late.as_secs_f64() * 1e3,
        start.elapsed().as_secs_f64()
    );
    assert_eq!(
        expired as u64 + logged_out,
        args.sessions as u64,
        "every session expired or logged out"
    );
}
